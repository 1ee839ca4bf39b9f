package userquota

import (
	"context"
	"fmt"
	"runtime"
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
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// Recovery: a scheduler that starts (restart, failover) charges every bound
// pod of its profile before its first decision (PreFilter waits for the
// plugin's pod handler to sync). These benchmarks time that rebuild for
// 100k bound pods and report the tracker's heap, in two shapes: issue
// 24's (10,000 users in 1,000 leaf queues under three levels, test/perf's
// -levels=3 scale shape) and test/perf's default workload (1,000 users in
// 100 queues under root).
//
//	go test -run '^$' -bench Recovery -benchtime 3x ./pkg/plugins/userquota
//	go test -run '^$' -bench 'Recovery/users=10000' -benchtime 3x ./pkg/plugins/userquota

const recoveryPods = 100_000

// recoveryShapes are the shapes the recovery benchmarks run, the issue's
// first: 10 pods per user, two applications each, every decision path
// checking a user and a group limit on three levels; then test/perf's
// default workload (100 pods per user).
var recoveryShapes = []queueconfigtest.Synthetic{
	{Users: 10000, Queues: 1000, Groups: 20, Levels: 3},
	{Users: 1000, Queues: 100, Groups: 20, Levels: 1},
}

func shapeName(s queueconfigtest.Synthetic) string {
	return fmt.Sprintf("users=%d/queues=%d/levels=%d", s.Users, s.Queues, s.Levels)
}

// BenchmarkRecovery is the rebuild as the scheduler does it: the pods are
// in the scheduler's pod informer's cache when the plugin is built; New
// adds its handler, the informer replays its cache to it, and the time is
// until the handler has synced (what PreFilter waits for). tracker-B is
// the heap the plugin holds after it (the pods themselves are the
// informer's, not counted).
func BenchmarkRecovery(b *testing.B) {
	for _, shape := range recoveryShapes {
		b.Run(shapeName(shape), func(b *testing.B) { benchRecovery(b, shape) })
	}
}

func benchRecovery(b *testing.B, shape queueconfigtest.Synthetic) {
	pods := recoveryPodSet(shape, recoveryPods)
	cfg := shape.Config(nil)
	var heap uint64
	var cpu time.Duration
	b.ResetTimer() // the pods' making is not the rebuild
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := newRecoveryFixture(b, pods, cfg)
		before := liveHeap()
		b.StartTimer()
		cpu0 := processCPU()
		pl := f.newPlugin(b)
		if !pl.waitPodsSynced(f.ctx) {
			b.Fatal("the plugin's pod handler did not sync")
		}
		cpu += processCPU() - cpu0
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
	reportPerPod(b, len(pods), cpu)
}

// BenchmarkRecoveryReplay is the floor under BenchmarkRecovery: the same
// informer replaying the same 100,000 pods to a handler that does
// nothing, until that handler has synced (no plugin is built).
func BenchmarkRecoveryReplay(b *testing.B) {
	shape := recoveryShapes[0]
	pods := recoveryPodSet(shape, recoveryPods)
	cfg := shape.Config(nil)
	b.ResetTimer() // the pods' making is not the rebuild
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := newRecoveryFixture(b, pods, cfg)
		b.StartTimer()
		reg, err := f.informers.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{})
		if err != nil {
			b.Fatal(err)
		}
		if !cache.WaitForCacheSync(f.ctx.Done(), reg.HasSynced) {
			b.Fatal("the handler did not sync")
		}
		b.StopTimer()
		f.stop()
	}
}

// reportPerPod reports the wall time per pod and the process's CPU time
// per pod (every goroutine's: the handler, the informer, the collector),
// which a loaded machine stretches far less than the wall time.
func reportPerPod(b *testing.B, pods int, cpu time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pods), "ns/pod")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(pods), "cpu-ns/pod")
}

// BenchmarkRecoveryCharge is the plugin's own part of it: its pod
// handler (onPod) called for each bound pod in a loop, with no informer.
func BenchmarkRecoveryCharge(b *testing.B) {
	for _, shape := range recoveryShapes {
		b.Run(shapeName(shape), func(b *testing.B) { benchRecoveryCharge(b, shape) })
	}
}

func benchRecoveryCharge(b *testing.B, shape queueconfigtest.Synthetic) {
	pods := recoveryPodSet(shape, recoveryPods)
	cfg := shape.Config(nil)
	logger := klog.Background()
	var cpu time.Duration
	b.ResetTimer() // the pods' making is not the rebuild
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := newRecoveryFixture(b, nil, cfg)
		pl := f.newPlugin(b)
		if !pl.waitPodsSynced(f.ctx) {
			b.Fatal("the plugin's pod handler did not sync")
		}
		// The pods go in the informer's store (no handler is told): the
		// audit, every 10 s, would release charges of pods it does not
		// find there when the loop outlasts it (a loaded machine,
		// valgrind).
		store := f.informers.Core().V1().Pods().Informer().GetIndexer()
		for _, p := range pods {
			if err := store.Add(p); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		cpu0 := processCPU()
		for _, p := range pods {
			pl.onPod(logger, p)
		}
		cpu += processCPU() - cpu0
		b.StopTimer()
		if n := pl.ledger.Len(); n != len(pods) {
			b.Fatalf("%d pods charged, want %d", n, len(pods))
		}
		f.stop()
	}
	reportPerPod(b, len(pods), cpu)
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

// recoveryPodSet is n bound pods of shape (loose limits: nothing is
// over): pod i of user i%Users, two applications per user, 100m cpu and
// 128Mi, spread over 1000 nodes.
func recoveryPodSet(shape queueconfigtest.Synthetic, n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = shapePod(shape, i, fmt.Sprintf("node-%04d", i%1000))
		pods[i].Status.Phase = v1.PodRunning
	}
	return pods
}

// shapePod is pod i of shape (user i%Users), bound to node ("": pending).
func shapePod(shape queueconfigtest.Synthetic, i int, node string) *v1.Pod {
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")}
	u := i % shape.Users
	user := shape.User(u)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("pod-%06d", i),
			Namespace: "perf",
			UID:       types.UID(fmt.Sprintf("uid-%06d", i)),
			Labels: map[string]string{
				podmeta.LabelQueue: shape.QueuePath(u),
				podmeta.LabelAppID: fmt.Sprintf("%s-app-%d", user, (i/shape.Users)%2),
			},
			Annotations: map[string]string{
				podmeta.AnnotationUserInfo: podmeta.UserInfo{User: user, Groups: []string{shape.Group(u)}}.String(),
			},
		},
		Spec: v1.PodSpec{
			SchedulerName: profileName,
			NodeName:      node,
			Containers:    []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{Requests: req}}},
		},
	}
}
