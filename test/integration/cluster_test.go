package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/configz"
	"k8s.io/component-base/featuregate"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/controller/deployment"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/pkg/controller/replicaset"

	"github.com/userquota/userquota/pkg/plugins/userquota"
	"github.com/userquota/userquota/pkg/ugm"
	"github.com/userquota/userquota/test/internal/controlplane"
	"github.com/userquota/userquota/test/internal/controlplane/apiserver"
)

// schedulerName is the profile the test scheduler serves.
const schedulerName = controlplane.SchedulerName

// cluster is one test's control plane: an API server on the shared etcd,
// nodes, and (started on demand) the scheduler and controllers.
type cluster struct {
	t          *testing.T
	ctx        context.Context
	client     kubernetes.Interface
	config     *rest.Config
	kubeconfig string
	ns         string
	sched      *runningScheduler
	// mapper and dynamic serve apply (manifests_test.go), made on first use.
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	dynamic dynamic.Interface
}

// newCluster starts an API server for t, with extra kube-apiserver flags if
// any, creates a namespace for the test and nodes with the given capacity.
func newCluster(t *testing.T, nodes int, apiserverFlags ...string) *cluster {
	t.Helper()
	server := apiserver.Start(t, strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), apiserverFlags...)
	cfg := server.Config
	cfg.QPS, cfg.Burst = 500, 1000
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := &cluster{t: t, ctx: ctx, client: client, config: cfg, ns: "quota-test", kubeconfig: server.Kubeconfig}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.addNodes(0, nodes)
	return c
}

// addNodes creates n nodes of 32 cpu from node-<first> on.
func (c *cluster) addNodes(first, n int) {
	c.t.Helper()
	for i := first; i < first+n; i++ {
		node := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)},
			Status: v1.NodeStatus{
				Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"), v1.ResourcePods: resource.MustParse("110")},
				Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"), v1.ResourcePods: resource.MustParse("110")},
				Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
			},
		}
		if _, err := c.client.CoreV1().Nodes().Create(c.ctx, node, metav1.CreateOptions{}); err != nil {
			c.t.Fatal(err)
		}
	}
}

// setQueueConfig creates or updates the ConfigMap the plugin reads, in the
// test's namespace.
func (c *cluster) setQueueConfig(yaml string) {
	c.t.Helper()
	c.setQueueConfigIn(c.ns, yaml)
}

// setQueueConfigIn creates or updates the queue-config ConfigMap in ns (the
// scheduler of manifests/ reads userquota-system's).
func (c *cluster) setQueueConfigIn(ns, yaml string) {
	c.t.Helper()
	if err := controlplane.SetQueueConfig(c.ctx, c.client, ns, yaml); err != nil {
		c.t.Fatal(err)
	}
}

// runningScheduler is a scheduler started by startScheduler.
type runningScheduler struct {
	plugin *userquota.Plugin
	stop   func()
}

// startScheduler runs the scheduler as the binary does (app.Setup, app.Run)
// with a config in the shape of manifests/scheduler-config.yaml, and waits
// until the plugin is ready to decide.
func (c *cluster) startScheduler() *runningScheduler {
	c.t.Helper()
	return c.startSchedulerWith(nil)
}

// startSchedulerWith starts the scheduler with these UserQuota args
// besides the test's own (its ConfigMap namespace, no REST API).
func (c *cluster) startSchedulerWith(args map[string]any) *runningScheduler {
	c.t.Helper()
	return c.startSchedulerOn(c.kubeconfig, args)
}

// startSchedulerOn is startSchedulerWith reaching the API server through
// kubeconfig.
func (c *cluster) startSchedulerOn(kubeconfig string, args map[string]any) *runningScheduler {
	c.t.Helper()
	dir := c.t.TempDir()
	cfgPath := filepath.Join(dir, "scheduler.yaml")
	all := map[string]any{"configMapNamespace": c.ns, "restAddress": ""}
	for k, v := range args {
		all[k] = v
	}
	config := controlplane.SchedulerConfig{Kubeconfig: kubeconfig, QPS: 500, Burst: 1000, UserQuota: true, Args: all}
	if err := os.WriteFile(cfgPath, config.YAML(), 0o600); err != nil {
		c.t.Fatal(err)
	}
	opts := options.NewOptions()
	opts.ComponentGlobalsRegistry = compatibility.NewComponentGlobalsRegistry()
	if err := opts.ComponentGlobalsRegistry.Register(compatibility.DefaultKubeComponent,
		utilcompatibility.DefaultKubeEffectiveVersionForTest(), featureGateCopy()); err != nil {
		c.t.Fatal(err)
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		c.t.Fatal(err)
	}
	opts.ConfigFile = cfgPath
	opts.SecureServing.BindPort = 0

	var mu sync.Mutex
	var plugin *userquota.Plugin
	factory := func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, err := userquota.New(ctx, obj, h)
		if err == nil {
			mu.Lock()
			plugin = p.(*userquota.Plugin)
			mu.Unlock()
		}
		return p, err
	}
	ctx, cancel := context.WithCancel(c.ctx)
	cc, sched, err := app.Setup(ctx, opts, app.WithPlugin(userquota.Name, factory))
	if err != nil {
		cancel()
		c.t.Fatalf("scheduler setup: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := app.Run(ctx, cc, sched); err != nil && ctx.Err() == nil {
			c.t.Errorf("scheduler stopped: %v", err)
		}
	}()
	var once sync.Once
	rs := &runningScheduler{plugin: plugin, stop: func() {
		once.Do(func() {
			cancel()
			<-done
			configz.Delete("componentconfig")
		})
	}}
	c.t.Cleanup(rs.stop)
	c.sched = rs
	return rs
}

// featureGateCopy gives each scheduler its own feature gate, as
// kube-scheduler's test server does, so two schedulers in one process do
// not contend on the global one.
func featureGateCopy() featuregate.MutableVersionedFeatureGate {
	return utilfeature.DefaultMutableFeatureGate.DeepCopy()
}

// startControllers runs the job, deployment and replicaset controllers.
func (c *cluster) startControllers() {
	c.t.Helper()
	f := informers.NewSharedInformerFactory(c.client, 0)
	rs := replicaset.NewReplicaSetController(c.ctx, f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), c.client, 500)
	dc, err := deployment.NewDeploymentController(c.ctx, f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), c.client)
	if err != nil {
		c.t.Fatal(err)
	}
	jc, err := job.NewController(c.ctx, f.Core().V1().Pods(), f.Batch().V1().Jobs(), c.client)
	if err != nil {
		c.t.Fatal(err)
	}
	f.Start(c.ctx.Done())
	go rs.Run(c.ctx, 2)
	go dc.Run(c.ctx, 2)
	go jc.Run(c.ctx, 2)
}

// usage returns a user's usage at root from the running plugin.
func (rs *runningScheduler) userRoot(user string) *ugm.QueueUsage {
	u, ok := rs.plugin.Ledger().Manager().User(user)
	if !ok {
		return nil
	}
	return u.Queues
}

// eventually polls cond until it holds or the timeout passes.
func (c *cluster) eventually(what string, timeout time.Duration, cond func() (bool, error)) {
	c.t.Helper()
	err := wait.PollUntilContextTimeout(c.ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
	if err != nil {
		c.t.Fatalf("%s: not within %s: %v", what, timeout, err)
	}
}
