package userquota

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/podmeta"
)

// Recovery: a scheduler that starts (restart, failover) charges every bound
// pod of its profile before its first decision (PreFilter waits for the
// plugin's pod handler to sync). These benchmarks time that rebuild for
// 100k bound pods of 1000 users in 100 queues (the shape of test/perf's
// workload, docs/throughput.md) and report the tracker's heap.
//
//	go test -run '^$' -bench Recovery -benchtime 3x ./pkg/plugins/userquota

const (
	recoveryPods   = 100_000
	recoveryUsers  = 1000
	recoveryQueues = 100
	recoveryGroups = 20
)

// BenchmarkRecovery is the rebuild as the scheduler does it: the pods are
// in the scheduler's pod informer's cache when the plugin is built; New
// adds its handler, the informer replays its cache to it, and the time is
// until the handler has synced (what PreFilter waits for). tracker-B is
// the heap the plugin holds after it (the pods themselves are the
// informer's, not counted).
func BenchmarkRecovery(b *testing.B) {
	pods := recoveryPodSet(recoveryPods)
	cfg := recoveryConfig()
	var heap uint64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := newRecoveryFixture(b, pods, cfg)
		before := liveHeap()
		b.StartTimer()
		pl := f.newPlugin(b)
		if !cache.WaitForCacheSync(f.ctx.Done(), pl.podsSynced) {
			b.Fatal("the plugin's pod handler did not sync")
		}
		b.StopTimer()
		if n := pl.ledger.Len(); n != len(pods) {
			b.Fatalf("%d pods charged, want %d", n, len(pods))
		}
		heap = liveHeap() - before
		runtime.KeepAlive(pl)
		f.stop()
	}
	b.ReportMetric(float64(heap), "tracker-B")
	b.ReportMetric(float64(heap)/float64(len(pods)), "tracker-B/pod")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(pods)), "ns/pod")
}

// BenchmarkRecoveryCharge is the plugin's own part of it: its pod
// handler (onPod) called for each bound pod in a loop, with no informer.
func BenchmarkRecoveryCharge(b *testing.B) {
	pods := recoveryPodSet(recoveryPods)
	cfg := recoveryConfig()
	logger := klog.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := newRecoveryFixture(b, nil, cfg)
		pl := f.newPlugin(b)
		if !cache.WaitForCacheSync(f.ctx.Done(), pl.podsSynced) {
			b.Fatal("the plugin's pod handler did not sync")
		}
		b.StartTimer()
		for _, p := range pods {
			pl.onPod(logger, p)
		}
		b.StopTimer()
		if n := pl.ledger.Len(); n != len(pods) {
			b.Fatalf("%d pods charged, want %d", n, len(pods))
		}
		f.stop()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(pods)), "ns/pod")
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// recoveryFixture is the scheduler's informer factory over a fake
// clientset holding the queue config, with the pods added to the pod
// informer's cache (its indexer: one copy of each pod, as a running
// informer holds) before the plugin is built.
type recoveryFixture struct {
	ctx       context.Context
	cancel    context.CancelFunc
	cs        *fake.Clientset
	informers informers.SharedInformerFactory
}

func newRecoveryFixture(b *testing.B, pods []*v1.Pod, config string) *recoveryFixture {
	b.Helper()
	// The plugin logs through the context's logger: discard (the zero
	// Logger), so the benchmark output stays readable.
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
	cs := fake.NewClientset(&v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: DefaultConfigMapNamespace, Name: DefaultConfigMapName},
		Data:       map[string]string{DefaultConfigMapKey: config},
	})
	f := &recoveryFixture{ctx: ctx, cancel: cancel, cs: cs, informers: scheduler.NewInformerFactory(cs, 0)}
	inf := f.informers.Core().V1().Pods().Informer()
	f.informers.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatal("pod informer did not sync")
	}
	for _, p := range pods {
		if err := inf.GetIndexer().Add(p); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

// newPlugin builds the plugin the way kube-scheduler does (the framework
// runtime calls New with a handle on the informer factory).
func (f *recoveryFixture) newPlugin(b *testing.B) *Plugin {
	b.Helper()
	var pl *Plugin
	args := &Args{RESTAddress: ptr.To(""), LeaderElectionLease: ptr.To("")}
	factory := func(ctx context.Context, _ k8sruntime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, err := New(ctx, args, h)
		if err != nil {
			return nil, err
		}
		pl = p.(*Plugin)
		return p, nil
	}
	_, err := tf.NewFramework(f.ctx, []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
		tf.RegisterPluginAsExtensions(Name, factory, "PreFilter", "Reserve"),
	}, profileName,
		frameworkruntime.WithClientSet(f.cs),
		frameworkruntime.WithInformerFactory(f.informers),
		frameworkruntime.WithEventRecorder(events.NewFakeRecorder(100)),
		frameworkruntime.WithSnapshotSharedLister(schedcache.NewEmptySnapshot()),
	)
	if err != nil {
		b.Fatalf("NewFramework: %v", err)
	}
	if pl.Config() == nil {
		b.Fatal("the queue config is not in force")
	}
	return pl
}

func (f *recoveryFixture) stop() {
	f.cancel()
	f.informers.Shutdown()
	// Let the plugin's goroutines see the cancel before the next
	// iteration measures the heap.
	time.Sleep(50 * time.Millisecond)
}

// recoveryPodSet is n bound pods: pod i of user i%1000 (consecutive users
// share one of 100 queues; one of 20 groups each), two applications per
// user, 100m cpu and 128Mi, spread over 1000 nodes.
func recoveryPodSet(n int) []*v1.Pod {
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")}
	pods := make([]*v1.Pod, n)
	for i := range pods {
		u := i % recoveryUsers
		user := fmt.Sprintf("user-%04d", u)
		pods[i] = &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:      fmt.Sprintf("pod-%06d", i),
				Namespace: "perf",
				UID:       types.UID(fmt.Sprintf("uid-%06d", i)),
				Labels: map[string]string{
					podmeta.LabelQueue: fmt.Sprintf("root.q-%03d", u*recoveryQueues/recoveryUsers),
					podmeta.LabelAppID: fmt.Sprintf("%s-app-%d", user, (i/recoveryUsers)%2),
				},
				Annotations: map[string]string{
					podmeta.AnnotationUserInfo: fmt.Sprintf(`{"user":%q,"groups":["group-%02d"]}`, user, u%recoveryGroups),
				},
			},
			Spec: v1.PodSpec{
				SchedulerName: profileName,
				NodeName:      fmt.Sprintf("node-%04d", i%1000),
				Containers:    []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{Requests: req}}},
			},
			Status: v1.PodStatus{Phase: v1.PodRunning},
		}
	}
	return pods
}

// recoveryConfig is test/perf's loose config: every group named on root,
// a "*" user limit on root and on each of the 100 leaves, nothing refused.
func recoveryConfig() string {
	var b strings.Builder
	b.WriteString("partitions:\n- name: default\n  queues:\n  - name: root\n    limits:\n    - limit: every group\n      groups: [")
	for g := 0; g < recoveryGroups; g++ {
		if g > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "group-%02d", g)
	}
	b.WriteString("]\n      maxresources: {vcore: \"100000\", memory: 100000Gi}\n      maxapplications: 100000\n")
	b.WriteString("    - limit: every user\n      users: [\"*\"]\n      maxresources: {vcore: \"10000\", memory: 10000Gi}\n    queues:\n")
	for q := 0; q < recoveryQueues; q++ {
		fmt.Fprintf(&b, "    - name: q-%03d\n      maxapplications: 100000\n      resources:\n        max: {vcore: \"100000\", memory: 100000Gi}\n      limits:\n", q)
		b.WriteString("      - limit: every user\n        users: [\"*\"]\n        maxresources: {vcore: \"1000\", memory: 1000Gi, pods: \"100000\"}\n        maxapplications: 1000\n")
	}
	return b.String()
}
