package userquota

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// BenchmarkPodPath is what the plugin costs one pod over its life, with
// the tree's users and queues busy: PreEnqueue lets it in (room held),
// PreFilter decides, Reserve charges, the pod handler sees it bound, then
// its delete releases the charge. Run at test/perf's shape and at the
// scale shape (10 times the users and queues, three levels of parents
// with a user and a group limit each, docs/throughput.md "At scale"): the
// plugin's part of a scheduling cycle must not grow with users and
// queues, only with the levels a decision checks.
//
//	go test -run '^$' -bench PodPath -benchmem ./pkg/plugins/userquota
func BenchmarkPodPath(b *testing.B) {
	for _, shape := range []queueconfigtest.Synthetic{
		{Users: 1000, Queues: 100, Groups: 20, Levels: 1},
		{Users: 10000, Queues: 1000, Groups: 20, Levels: 1},
		{Users: 10000, Queues: 1000, Groups: 20, Levels: 3},
	} {
		b.Run(shapeName(shape), func(b *testing.B) { benchPodPath(b, shape) })
	}
}

func benchPodPath(b *testing.B, shape queueconfigtest.Synthetic) {
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
	store := f.informers.Core().V1().Pods().Informer().GetIndexer()
	for i := range pool {
		pool[i] = shapePod(shape, len(running)+i, "")
		bound[i] = pool[i].DeepCopy()
		bound[i].Spec.NodeName = "node-0000"
		bound[i].Status.Phase = v1.PodRunning
		if err := store.Add(pool[i]); err != nil {
			b.Fatal(err)
		}
	}
	logger := klog.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pod := pool[i%len(pool)]
		if s := pl.PreEnqueue(f.ctx, pod); !s.IsSuccess() {
			b.Fatalf("PreEnqueue(%s): %v", pod.Name, s)
		}
		state := framework.NewCycleState()
		if _, s := pl.PreFilter(f.ctx, state, pod, nil); !s.IsSuccess() {
			b.Fatalf("PreFilter(%s): %v", pod.Name, s)
		}
		if s := pl.Reserve(f.ctx, state, pod, "node-0000"); !s.IsSuccess() {
			b.Fatalf("Reserve(%s): %v", pod.Name, s)
		}
		pl.onPodUpdate(logger, pod, bound[i%len(bound)])
		pl.onPodDelete(logger, bound[i%len(bound)])
	}
	b.StopTimer()
	if n := pl.ledger.Len(); n != len(running) {
		b.Fatalf("%d pods charged after the run, want the %d running", n, len(running))
	}
}
