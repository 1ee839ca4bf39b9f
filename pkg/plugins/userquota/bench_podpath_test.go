package userquota

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// BenchmarkPodPath is what the plugin costs one pod over its life, with
// the tree's users and queues busy: PreEnqueue lets it in (room held),
// PreFilter decides, Reserve charges, the pod handler sees it bound and
// then ready (the kubelet's status update), then its delete releases the
// charge. Run at test/perf's shape and at the
// scale shape (10 times the users and queues, three levels of parents
// with a user and a group limit each, docs/throughput.md "At scale"): the
// plugin's part of a scheduling cycle must not grow with users and
// queues, only with the levels a decision checks.
//
// The cold variant sweeps the caches before each stage (not timed), as the scheduler's own work between them does at scale (filter
// and score over thousands of nodes, other pods' events): it is what the
// plugin costs a pod at scale, in seconds rather than a scale run's hour;
// the warm variant is what it costs with everything in cache. Each stage's
// time is reported per pod.
//
//	go test -run '^$' -bench PodPath -benchmem ./pkg/plugins/userquota
func BenchmarkPodPath(b *testing.B) {
	for _, shape := range []queueconfigtest.Synthetic{
		{Users: 1000, Queues: 100, Groups: 20, Levels: 1},
		{Users: 10000, Queues: 1000, Groups: 20, Levels: 1},
		{Users: 10000, Queues: 1000, Groups: 20, Levels: 3},
	} {
		b.Run(shapeName(shape), func(b *testing.B) { benchPodPath(b, shape, nil) })
	}
	shape := queueconfigtest.Synthetic{Users: 10000, Queues: 1000, Groups: 20, Levels: 3}
	evict := make([]byte, evictBytes)
	for i := range evict {
		evict[i] = byte(i) // backed by memory of its own, not the zero page
	}
	b.Run(shapeName(shape)+"/cold", func(b *testing.B) { benchPodPath(b, shape, evict) })
}

// evictBytes is what is swept before each stage. At 32 MiB each stage
// costs about two thirds of what the scale run's CPU profiles show on the
// machine of docs/throughput.md (at 4576692: PreFilter 19-21 and Reserve
// 28-33 µs a pod, against 30 and 47 at scale, where the allocator's
// caches are cold too).
const evictBytes = 32 << 20

// sweep reads every cache line of buf, evicting what was cached before
// (reads: no dirty lines to write back while the timer runs).
func sweep(buf []byte) {
	var sum byte
	for i := 0; i < len(buf); i += 64 {
		sum += buf[i]
	}
	sweepSink = sum
}

var sweepSink byte

// benchPodPath runs pods through the plugin and reports each stage's
// time; with evict (nil: none), the caches are swept before each stage,
// and only the stages are timed.
func benchPodPath(b *testing.B, shape queueconfigtest.Synthetic, evict []byte) {
	// Five bound pods of every user, so that every limit on every path
	// has usage to check against.
	running := recoveryPodSet(shape, 5*shape.Users)
	f := newRecoveryFixture(b, running, shape.Config(nil))
	defer f.stop()
	pl := f.newPlugin(b)
	if !cache.WaitForCacheSync(f.ctx.Done(), pl.podsSynced, pl.held.isReady) {
		b.Fatal("the plugin did not start")
	}
	// A pool of pending pods, one per user, in the informer's store (the
	// plugin looks a pod up there), reused once the last one went.
	pool := make([]*v1.Pod, shape.Users)
	bound := make([]*v1.Pod, shape.Users)
	ready := make([]*v1.Pod, shape.Users)
	store := f.informers.Core().V1().Pods().Informer().GetIndexer()
	for i := range pool {
		pool[i] = shapePod(shape, len(running)+i, "")
		bound[i] = pool[i].DeepCopy()
		bound[i].Spec.NodeName = "node-0000"
		bound[i].Status.Phase = v1.PodRunning
		// The kubelet's next status update: its containers started.
		ready[i] = bound[i].DeepCopy()
		ready[i].Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		if err := store.Add(pool[i]); err != nil {
			b.Fatal(err)
		}
	}
	logger := klog.Background()
	var (
		pod   *v1.Pod
		state *framework.CycleState
	)
	stages := []struct {
		name string
		run  func(i int)
		took time.Duration
	}{
		{name: "PreEnqueue", run: func(i int) {
			pod = pool[i%len(pool)]
			if s := pl.PreEnqueue(f.ctx, pod); !s.IsSuccess() {
				b.Fatalf("PreEnqueue(%s): %v", pod.Name, s)
			}
		}},
		{name: "PreFilter", run: func(int) {
			state = framework.NewCycleState()
			if _, s := pl.PreFilter(f.ctx, state, pod, nil); !s.IsSuccess() {
				b.Fatalf("PreFilter(%s): %v", pod.Name, s)
			}
		}},
		{name: "Reserve", run: func(int) {
			if s := pl.Reserve(f.ctx, state, pod, "node-0000"); !s.IsSuccess() {
				b.Fatalf("Reserve(%s): %v", pod.Name, s)
			}
		}},
		{name: "bound", run: func(i int) { pl.onPodUpdate(logger, pod, bound[i%len(bound)]) }},
		{name: "ready", run: func(i int) { pl.onPodUpdate(logger, bound[i%len(bound)], ready[i%len(ready)]) }},
		{name: "deleted", run: func(i int) { pl.onPodDelete(logger, ready[i%len(ready)]) }},
	}
	b.ReportAllocs()
	b.ResetTimer()
	if evict != nil {
		// The sweeps are not the plugin's: the stages are timed alone
		// (total-ns/pod). Not with StopTimer and StartTimer around each
		// sweep: they read the memory statistics, which empties the
		// allocator's per-P caches, a cost the scheduler does not pay.
		b.StopTimer()
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		for j := range stages {
			if evict != nil {
				sweep(evict)
			}
			start := time.Now()
			stages[j].run(i)
			took := time.Since(start)
			stages[j].took += took
			total += took
		}
	}
	b.StopTimer()
	for _, st := range stages {
		b.ReportMetric(float64(st.took.Nanoseconds())/float64(b.N), st.name+"-ns/pod")
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "total-ns/pod")
	b.StopTimer()
	if n := pl.ledger.Len(); n != len(running) {
		b.Fatalf("%d pods charged after the run, want the %d running", n, len(running))
	}
}
