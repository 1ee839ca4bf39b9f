package userquota

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	testingclock "k8s.io/utils/clock/testing"
)

// countingPreEnqueue is UserQuota's PreEnqueue, counted.
type countingPreEnqueue struct {
	pl    *Plugin
	calls atomic.Int32
}

func (c *countingPreEnqueue) Name() string { return Name }

func (c *countingPreEnqueue) PreEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	c.calls.Add(1)
	return c.pl.PreEnqueue(ctx, pod)
}

// TestHeldPodsInTheSchedulingQueue runs kube-scheduler's own scheduling
// queue with UserQuota's PreEnqueue and hints, and checks the framework
// facts that holding relies on (docs/design.md, "Hold and let in"): a held
// pod is among the unschedulable pods, never in the active queue; the
// 5-minute flush does not move it (no PreEnqueue call); a release event
// does not move it (its hint is QueueSkip); each Activate runs PreEnqueue
// again, and each rejection adds to scheduler_unschedulable_pods{plugin}
// without taking away (the gauge drifts: watch userquota_held_pods); the
// let-in after a real release sends it to the active queue.
func TestHeldPodsInTheSchedulingQueue(t *testing.T) {
	e := newEnv(t, envOptions{config: perUserConfig})
	pre := &countingPreEnqueue{pl: e.pl}
	hints := queue.QueueingHintMap{}
	evs, err := e.pl.EventsToRegister(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		hints[ev.Event] = append(hints[ev.Event], &queue.QueueingHintFunction{PluginName: Name, QueueingHintFn: ev.QueueingHintFn})
	}
	clk := testingclock.NewFakeClock(time.Now())
	q := queue.NewTestQueue(e.ctx, func(a, b fwk.QueuedPodInfo) bool { return a.GetTimestamp().Before(b.GetTimestamp()) },
		queue.WithClock(clk),
		queue.WithPreEnqueuePluginMap(map[string]map[string]fwk.PreEnqueuePlugin{profileName: {Name: pre}}),
		queue.WithQueueingHintMapPerProfile(queue.QueueingHintMapPerProfile{profileName: hints}))
	e.activator.forward(q)
	logger := klog.FromContext(e.ctx)
	unschedulable := func() float64 {
		v, err := testutil.GetGaugeMetricValue(schedmetrics.UnschedulableReason(Name, profileName))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	where := func() string { _, s := q.PendingPods(); return s }

	running := userPod("sue-running", "sue", "", "sandbox", "2")
	e.mustSchedule(running)
	running = e.bind(running)
	waits := userPod("sue-waits", "sue", "", "sandbox", "1")
	e.pending(waits)
	before := unschedulable()
	q.Add(logger, waits)
	if pre.calls.Load() != 1 || !strings.Contains(where(), "activeQ:0") || !strings.Contains(where(), "unschedulablePods:1") {
		t.Fatalf("after Add: %d PreEnqueue calls, queues %s; want the pod held among the unschedulable pods", pre.calls.Load(), where())
	}

	// The flush moves pods unschedulable for 5 minutes, as
	// flushUnschedulablePodsLeftover does: not a held pod.
	clk.Step(6 * time.Minute)
	q.MoveAllToActiveOrBackoffQueue(logger, framework.EventUnschedulableTimeout, nil, nil, nil)
	if pre.calls.Load() != 1 || !strings.Contains(where(), "unschedulablePods:1") {
		t.Errorf("the flush moved the held pod: %d PreEnqueue calls, queues %s", pre.calls.Load(), where())
	}
	// A release event: the hint skips a held pod.
	q.MoveAllToActiveOrBackoffQueue(logger, framework.EventAssignedPodDelete, running, nil, nil)
	if pre.calls.Load() != 1 || !strings.Contains(where(), "unschedulablePods:1") {
		t.Errorf("a release event moved the held pod: %d PreEnqueue calls, queues %s", pre.calls.Load(), where())
	}
	// Activate runs PreEnqueue again; still held, the gauge counts it twice.
	q.Activate(logger, map[string]*v1.Pod{"ns1/sue-waits": waits})
	if pre.calls.Load() != 2 || !strings.Contains(where(), "unschedulablePods:1") {
		t.Errorf("after Activate: %d PreEnqueue calls, queues %s; want a second call, still held", pre.calls.Load(), where())
	}
	if d := unschedulable() - before; d != 2 {
		t.Errorf("scheduler_unschedulable_pods{plugin=%s} grew by %v for one held pod, want 2 (it drifts)", Name, d)
	}

	// A real release: the plugin lets the pod in.
	e.delete(running)
	e.waitFor("the pod in the active queue", func() bool {
		active := q.PodsInActiveQ()
		return len(active) == 1 && active[0].UID == waits.UID
	})
	if !e.pl.ugm.Admitted(string(waits.UID)) {
		t.Error("let in without room held")
	}
}
