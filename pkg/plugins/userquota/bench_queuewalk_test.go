package userquota

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/schedulinggates"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// BenchmarkQueueWalk is kube-scheduler's own walk of its unschedulable
// pods at every binding (an assigned pod's add: MoveAllToActiveOrBackoffQueue),
// over 50,000 pods of 1,000 users, 40,000 or 6,000 of them parked (the
// rest let in): parked by a scheduling gate (the SchedulingGates plugin,
// queueing hints on: the framework's floor, docs/throughput.md "The
// hold"), held by UserQuota's PreEnqueue as they came, held while the
// running pods were accounted and then decided by the start-up let-in
// (PreEnqueue's wait off), or decided by the start-up let-in before
// PreEnqueue saw them (its wait on: holds.awaitStartUp). Each parked pod
// costs the walk the same: its gating plugin's one registered event does
// not match the binding's. What differs is the queue's map of
// unschedulable pods, which keeps the size it grew to: held at start-up,
// every pod was in it. The cold variant sweeps the caches before each
// walk, as a scheduling cycle does between two bindings at scale.
//
//	go test -run '^$' -bench 'QueueWalk/.*/.*/cold' -benchtime 300x -count 5 ./pkg/plugins/userquota
func BenchmarkQueueWalk(b *testing.B) {
	var evict []byte
	for _, cold := range []bool{false, true} {
		if cold {
			evict = make([]byte, evictBytes)
			for i := range evict {
				evict[i] = byte(i) // backed by memory of its own, not the zero page
			}
		}
		for _, mix := range []struct{ admitted, parked int }{{10, 40}, {44, 6}} {
			for _, how := range []string{"gated", "held", "held-at-start-up", "decided-at-start-up"} {
				name := fmt.Sprintf("parked=%d/%s", 1000*mix.parked, how)
				if cold {
					name += "/cold"
				}
				b.Run(name, func(b *testing.B) { benchQueueWalk(b, how, mix.admitted, mix.parked, evict) })
			}
		}
	}
}

// walkConfig: every user may run n pods in root.q.
func walkConfig(n int) string {
	return queueconfigtest.Root(fmt.Sprintf(`
queues:
- name: q
  limits:
  - limit: n each
    users: ["*"]
    maxresources: {pods: %d}
`, n))
}

func benchQueueWalk(b *testing.B, how string, admitted, parked int, evict []byte) {
	const users = 1000
	activated := 0
	pl, store := barePlugin(b, walkConfig(admitted), &activated)
	ctx := context.Background()
	logger := klog.Background()
	var pre fwk.PreEnqueuePlugin = pl
	var ext fwk.EnqueueExtensions = pl
	if how == "gated" {
		sg, err := schedulinggates.New(ctx, nil, nil, feature.Features{EnableSchedulingQueueHint: true})
		if err != nil {
			b.Fatal(err)
		}
		pre, ext = sg.(fwk.PreEnqueuePlugin), sg.(fwk.EnqueueExtensions)
	}
	q := schedulingQueue(b, pre, ext)
	pl.held.activate = func(l klog.Logger, ps map[string]*v1.Pod) { q.Activate(l, ps) }
	switch how {
	case "decided-at-start-up":
		// The pod handler saw them while the running pods were accounted;
		// the start-up let-in decides them before PreEnqueue does.
		for u := range users {
			for k := range admitted + parked {
				p := userPod(fmt.Sprintf("u%d-%d", u, k), fmt.Sprintf("u%d", u), "", "root.q", "100m")
				if err := store.Add(p); err != nil {
					b.Fatal(err)
				}
				pl.held.seenPending(p)
			}
		}
		pods, queued := pl.held.started()
		pl.letInWaiting(logger, pods, queued)
	case "held-at-start-up":
	default:
		pl.held.started()
	}
	for u := range users {
		for k := range admitted + parked {
			p := userPod(fmt.Sprintf("u%d-%d", u, k), fmt.Sprintf("u%d", u), "", "root.q", "100m")
			if how == "gated" && k >= admitted {
				p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/parked"}}
			}
			if err := store.Add(p); err != nil {
				b.Fatal(err)
			}
			q.Add(logger, p)
		}
	}
	if how == "held-at-start-up" {
		pods, queued := pl.held.started()
		pl.letInWaiting(logger, pods, queued)
	}
	if active, unschedulable := len(q.PodsInActiveQ()), len(q.UnschedulablePods()); active != users*admitted || unschedulable != users*parked {
		b.Fatalf("%s: %d pods active, %d parked; want %d and %d", how, active, unschedulable, users*admitted, users*parked)
	}
	bound := userPod("bound", "x", "", "root.q", "100m")
	bound.Spec.NodeName = testNode
	b.ReportAllocs()
	b.ResetTimer()
	if evict == nil {
		for b.Loop() {
			q.MoveAllToActiveOrBackoffQueue(logger, framework.EventAssignedPodAdd, nil, bound, nil)
		}
		return
	}
	// Cold: the caches swept before each walk, as a scheduling cycle does
	// between two bindings at scale; only the walks are timed
	// (walk-ns/op), as in BenchmarkPodPath's cold variant.
	b.StopTimer()
	var took time.Duration
	for i := 0; i < b.N; i++ {
		sweep(evict)
		start := time.Now()
		q.MoveAllToActiveOrBackoffQueue(logger, framework.EventAssignedPodAdd, nil, bound, nil)
		took += time.Since(start)
	}
	b.ReportMetric(float64(took.Nanoseconds())/float64(b.N), "walk-ns/op")
}

// schedulingQueue is kube-scheduler's own scheduling queue with pre as
// the profile's PreEnqueue plugin, ext's events and the default queue
// sort (PrioritySort: priority, then when the queue took the pod).
func schedulingQueue(b *testing.B, pre fwk.PreEnqueuePlugin, ext fwk.EnqueueExtensions) *queue.PriorityQueue {
	ctx := context.Background()
	hints := queue.QueueingHintMap{}
	evs, err := ext.EventsToRegister(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, ev := range evs {
		hints[ev.Event] = append(hints[ev.Event], &queue.QueueingHintFunction{PluginName: pre.Name(), QueueingHintFn: ev.QueueingHintFn})
	}
	// The default profile's plugins are interested in a bound pod's add
	// (InterPodAffinity, PodTopologySpread): without one the walk is
	// skipped.
	addEvent := fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}
	hints[addEvent] = append(hints[addEvent], &queue.QueueingHintFunction{PluginName: "InterPodAffinity",
		QueueingHintFn: func(klog.Logger, *v1.Pod, interface{}, interface{}) (fwk.QueueingHint, error) {
			return fwk.QueueSkip, nil
		}})
	sort := &queuesort.PrioritySort{}
	return queue.NewTestQueue(ctx, sort.Less,
		queue.WithPreEnqueuePluginMap(map[string]map[string]fwk.PreEnqueuePlugin{profileName: {pre.Name(): pre}}),
		queue.WithQueueingHintMapPerProfile(queue.QueueingHintMapPerProfile{profileName: hints}))
}

// BenchmarkStartUpPop is the scheduling queue's pops after a start-up
// let-in at issue 24's scale: 50,000 pods of 10,000 users, held by
// PreEnqueue while the running pods were accounted, all let in by
// letInWaiting and then popped one by one as the scheduler does, on
// kube-scheduler's own queue. The queue's heap takes each pod let in at
// its end: in the order the queue took the pods it stays sorted, in a
// map's order it is scrambled and each pop walks it through cache misses
// (holds.send). It reports the let-in's time per pod (with its Activate
// calls) and the pops'.
//
//	go test -run '^$' -bench StartUpPop -benchtime 3x ./pkg/plugins/userquota
func BenchmarkStartUpPop(b *testing.B) {
	const perUser = 5
	shape := queueconfigtest.Synthetic{Users: 10000, Queues: 1000, Groups: 20, Levels: 3}
	cfg := shape.Config(func(int) (int, bool) { return perUser, true })
	pods := make([]*v1.Pod, 0, shape.Users*perUser)
	for i := range shape.Users * perUser {
		pods = append(pods, shapePod(shape, i, ""))
	}
	logger := klog.Background()
	var lettingIn, popping time.Duration
	for b.Loop() {
		activated := 0
		pl, store := barePlugin(b, cfg, &activated)
		q := schedulingQueue(b, pl, pl)
		pl.held.activate = func(l klog.Logger, ps map[string]*v1.Pod) {
			activated += len(ps)
			q.Activate(l, ps)
		}
		for _, p := range pods {
			if err := store.Add(p); err != nil {
				b.Fatal(err)
			}
			q.Add(logger, p)
		}
		start := time.Now()
		pods, queued := pl.held.started()
		pl.letInWaiting(logger, pods, queued)
		lettingIn += time.Since(start)
		if activated != len(pods) {
			b.Fatalf("%d pods let in, want all %d", activated, len(pods))
		}
		start = time.Now()
		for range pods {
			p, err := q.Pop(logger)
			if err != nil {
				b.Fatal(err)
			}
			q.Done(p.Pod.UID)
		}
		popping += time.Since(start)
	}
	perPod := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) / float64(len(pods)) }
	b.ReportMetric(perPod(lettingIn), "letin-ns/pod")
	b.ReportMetric(perPod(popping), "pop-ns/pod")
}
