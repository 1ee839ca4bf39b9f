package perf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/test/internal/controlplane"
	"github.com/userquota/userquota/test/internal/controlplane/apiserver"
)

const (
	// schedulerName is the profile the scheduler serves and pods name.
	schedulerName = controlplane.SchedulerName
	// podNamespace holds the measured pods; configNamespace the ConfigMap.
	podNamespace    = "perf"
	configNamespace = "userquota-system"
)

// cluster is an API server on the shared etcd with nodes.
type cluster struct {
	t          testing.TB
	ctx        context.Context
	client     kubernetes.Interface
	config     *rest.Config
	kubeconfig string
	token      string
}

// watchPods runs an informer of podNamespace's pods with handler until
// ctx ends, and waits until it has listed them.
func (c *cluster) watchPods(ctx context.Context, t *testing.T, handler cache.ResourceEventHandlerFuncs) {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(podNamespace))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(handler); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("pod informer did not sync")
	}
}

// runDir is a new directory for one run's scheduler log, named name.
func runDir(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newCluster starts an API server storing under prefix, creates the
// namespaces and nodes nodes of 32 cpu, 128Gi and 110 pods.
func newCluster(t testing.TB, prefix string, nodes int) *cluster {
	t.Helper()
	// Between runs the harness deletes every pod of the run at once.
	server := apiserver.Start(t, prefix, "--delete-collection-workers=4")
	cfg := server.Config
	cfg.QPS, cfg.Burst = 5000, 5000
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := &cluster{t: t, ctx: ctx, client: kubernetes.NewForConfigOrDie(cfg), config: cfg, token: cfg.BearerToken,
		kubeconfig: server.Kubeconfig}
	for _, ns := range []string{podNamespace, configNamespace} {
		if _, err := c.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	err := c.parallel(nodes, func(i int) error {
		_, err := c.client.CoreV1().Nodes().Create(ctx, perfNode(i), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d nodes in %.1fs", nodes, time.Since(start).Seconds())
	return c
}

func perfNode(i int) *v1.Node {
	capacity := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("32"),
		v1.ResourceMemory: resource.MustParse("128Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%04d", i)},
		Status: v1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
}

// parallel runs fn(0..n-1) on 16 workers and returns the first error.
func (c *cluster) parallel(n int, fn func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					next.Store(int64(n))
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// setQueueConfig creates or replaces the ConfigMap the plugin reads.
func (c *cluster) setQueueConfig(yaml string) {
	c.t.Helper()
	if err := controlplane.SetQueueConfig(c.ctx, c.client, configNamespace, yaml); err != nil {
		c.t.Fatal(err)
	}
}

// createPods creates pods 0..n-1 of the workload, each changed by edit
// first when it is set (bound to a node, gated), and returns how long it
// took.
func (c *cluster) createPods(w workload, n int, edit func(i int, pod *v1.Pod)) time.Duration {
	c.t.Helper()
	start := time.Now()
	err := c.parallel(n, func(i int) error {
		pod := w.pod(i)
		if edit != nil {
			edit(i, pod)
		}
		_, err := c.client.CoreV1().Pods(podNamespace).Create(c.ctx, pod, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		c.t.Fatalf("creating pods: %v", err)
	}
	return time.Since(start)
}

// deleteAllPods deletes every pod (grace period 0: no kubelet would
// confirm) and event in the pod namespace and waits until they are gone.
func (c *cluster) deleteAllPods() time.Duration {
	c.t.Helper()
	start := time.Now()
	opts := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	c.deleteCollection("pods", func() error {
		return c.client.CoreV1().Pods(podNamespace).DeleteCollection(c.ctx, opts, metav1.ListOptions{})
	})
	c.deleteCollection("events", func() error {
		return c.client.CoreV1().Events(podNamespace).DeleteCollection(c.ctx, opts, metav1.ListOptions{})
	})
	err := wait.PollUntilContextTimeout(c.ctx, 200*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.client.CoreV1().Pods(podNamespace).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return false, nil
		}
		return len(l.Items) == 0, nil
	})
	if err != nil {
		c.t.Fatalf("pods not gone: %v", err)
	}
	return time.Since(start)
}

// betweenRuns deletes a run's pods and waits until the API server and etcd
// (this process) have settled after the deletions (watch cache, GC): until
// they use under settledCPU of a core over two polls in a row, or 30 s
// pass. It keeps one run's cleanup out of the next one's figures.
func (c *cluster) betweenRuns(label string) {
	c.t.Helper()
	del := c.deleteAllPods()
	start, quiet := time.Now(), 0
	last, at := selfCPU(), time.Now()
	err := wait.PollUntilContextTimeout(c.ctx, 250*time.Millisecond, 30*time.Second, false, func(context.Context) (bool, error) {
		cpu, now := selfCPU(), time.Now()
		if (cpu-last)/now.Sub(at).Seconds() < settledCPU {
			quiet++
		} else {
			quiet = 0
		}
		last, at = cpu, now
		return quiet >= 2, nil
	})
	settled := "settled"
	if err != nil {
		settled = "not settled"
	}
	c.t.Logf("%s: deleted the pods in %.1fs, %s after %.1fs", label, del.Seconds(), settled, time.Since(start).Seconds())
}

// settledCPU is the share of a core under which the API server and etcd
// count as settled between runs.
const settledCPU = 0.2

// deleteCollection calls del until it succeeds: the API server ends a
// request after a minute (--request-timeout), which deleting 50,000 pods
// (TestBacklog) outlasts; each call deletes what it can meanwhile.
func (c *cluster) deleteCollection(what string, del func() error) {
	c.t.Helper()
	for attempt := 1; ; attempt++ {
		err := del()
		if err == nil {
			return
		}
		if attempt == 20 {
			c.t.Fatalf("deleting %s: %v (%d attempts)", what, err, attempt)
		}
		c.t.Logf("deleting %s: %v; again", what, err)
	}
}

// workload is the pods of a run: pod i belongs to user i%users; users are
// spread evenly over the queues (consecutive users share a queue) and over
// the groups (round robin); each user has two applications.
// workload is the harness's pods over the synthetic queue tree.
type workload struct {
	queueconfigtest.Synthetic
}

func (w workload) pod(i int) *v1.Pod {
	u := i % w.Users
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("pod-%06d", i),
			Namespace: podNamespace,
			Labels: map[string]string{
				podmeta.LabelQueue: w.QueuePath(u),
				podmeta.LabelAppID: fmt.Sprintf("%s-app-%d", w.User(u), (i/w.Users)%2),
			},
			Annotations: map[string]string{
				podmeta.AnnotationUserInfo: podmeta.UserInfo{User: w.User(u), Groups: []string{w.Group(u)}}.String(),
			},
		},
		Spec: v1.PodSpec{
			SchedulerName: schedulerName,
			Containers: []v1.Container{{
				Name:  "main",
				Image: "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU:    resource.MustParse("100m"),
					v1.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}},
		},
	}
}

// podIndex returns i of a pod named by pod(i).
func podIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "pod-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil
}

// atLimit reports whether user u is one of the users at a limit: every
// (1/fraction)-th user, so they are spread over queues and groups.
func atLimit(u int, fraction float64) bool {
	if fraction <= 0 {
		return false
	}
	step := int(1/fraction + 0.5)
	return u%step == 0
}

// podsOf returns how many of n pods user u has.
func (w workload) podsOf(u, n int) int {
	k := n / w.Users
	if u < n%w.Users {
		k++
	}
	return k
}

// expectRefused returns how many of n pods the refused case's config
// refuses: for every user at a limit, the pods past half of theirs.
func (w workload) expectRefused(n int, fraction float64) int {
	refused := 0
	for u := 0; u < w.Users; u++ {
		if atLimit(u, fraction) {
			k := w.podsOf(u, n)
			refused += k - k/2
		}
	}
	return refused
}

// queueConfig is the YuniKorn queue config of the run: every leaf has a
// user limit ("*") and maxapplications loose enough that nothing is
// refused; root has a loose limit for every group by name and for every
// user. With fraction > 0 the users at a limit get a named limit on their
// leaf queue of half of their pods (pods: k/2), so the other half is
// refused.
func (w workload) queueConfig(n int, fraction float64) string {
	return w.Config(func(u int) (int, bool) {
		return w.podsOf(u, n) / 2, atLimit(u, fraction)
	})
}

// backlogConfig is the backlog case's queue config: queueConfig's loose
// limits, and for every user a named limit of as many pods as it has
// among the first admitted of n (pods 0..admitted-1, round robin over the
// users), so that exactly admitted pods fit and the rest are held.
func (w workload) backlogConfig(admitted int) string {
	return w.Config(func(u int) (int, bool) { return w.podsOf(u, admitted), true })
}
