package userquota

import (
	"fmt"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// perUserConfig gives every user 2 cpu in root.sandbox, and the queue
// root.team 2 cpu for its two leaves together.
var perUserConfig = queueconfigtest.Root(`
queues:
- name: default
- name: sandbox
  limits:
  - limit: everyone
    users: ["*"]
    maxresources: {vcore: 2}
- name: team
  resources:
    max: {vcore: 2}
  queues:
  - name: a
  - name: b
`)

// TestActivateAfterRelease: when a pod's charge is released, the pods
// refused for a limit that release can lift are moved back to the active
// queue with the framework handle's Activate, after the release (so they
// find the room); pods refused for someone else's limit are not, nor are
// refused pods that were deleted since.
func TestActivateAfterRelease(t *testing.T) {
	sueHeld := userPod("sue-held", "sue", "", "sandbox", "2")
	bobHeld := userPod("bob-held", "bob", "", "sandbox", "2")
	teamHeld := userPod("team-held", "carl", "", "root.team.a", "2")
	held := []*v1.Pod{sueHeld, bobHeld, teamHeld}
	// waiting are refused: for sue's limit, bob's, and root.team's max.
	waiting := map[string]*v1.Pod{
		"ns1/sue-waits":  userPod("sue-waits", "sue", "", "sandbox", "1"),
		"ns1/bob-waits":  userPod("bob-waits", "bob", "", "sandbox", "1"),
		"ns1/team-waits": userPod("team-waits", "dan", "", "root.team.b", "1"),
	}
	// sueGone was refused for sue's limit, then deleted while pending.
	sueGone := userPod("sue-gone", "sue", "", "sandbox", "1")
	tests := []struct {
		name string
		// release gives back part of what one held pod holds.
		release func(e *env)
		want    []string
		// wantSue is sue's cpu when Activate was called (-1: not checked).
		wantSue int64
	}{
		{name: "sue's pod deleted", release: func(e *env) { e.delete(sueHeld) }, want: []string{"ns1/sue-waits"}, wantSue: 0},
		{
			name:    "sue's pod succeeded",
			release: func(e *env) { e.update(sueHeld, func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }) },
			want:    []string{"ns1/sue-waits"}, wantSue: 0,
		},
		{name: "sue's pod shrank in place", release: func(e *env) { e.update(sueHeld, setCPU("500m")) }, want: []string{"ns1/sue-waits"}, wantSue: 500},
		{
			name: "sue's pod gone as a tombstone",
			release: func(e *env) {
				e.pl.onPodDelete(klog.FromContext(e.ctx), cache.DeletedFinalStateUnknown{Key: "ns1/sue-held", Obj: sueHeld})
			},
			want: []string{"ns1/sue-waits"}, wantSue: 0,
		},
		{name: "bob's pod deleted", release: func(e *env) { e.delete(bobHeld) }, want: []string{"ns1/bob-waits"}, wantSue: -1},
		{
			name:    "a pod in another leaf of the full parent queue deleted",
			release: func(e *env) { e.delete(teamHeld) }, want: []string{"ns1/team-waits"}, wantSue: -1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{config: perUserConfig})
			for _, p := range held {
				e.mustSchedule(p)
				e.bind(p)
			}
			for _, p := range append([]*v1.Pod{sueGone}, waiting["ns1/sue-waits"], waiting["ns1/bob-waits"], waiting["ns1/team-waits"]) {
				e.pending(p)
				if _, s := e.preFilter(p); s.Code() != fwk.UnschedulableAndUnresolvable {
					t.Fatalf("PreFilter(%s) = %v, want a refusal", p.Name, s)
				}
			}
			e.delete(sueGone)
			e.barrier()
			e.activator.reset()
			e.activator.setProbe(func() any { return userUsage(e.pl, "sue")["cpu"] })

			tc.release(e)
			e.waitFor("an Activate call", func() bool { return len(e.activator.activated()) > 0 })
			e.barrier() // every event handled: no other activation is coming
			if diff := cmp.Diff(tc.want, e.activator.activated()); diff != "" {
				t.Errorf("activated (-want,+got):\n%s", diff)
			}
			if tc.wantSue >= 0 {
				// The first call; the pods were refused moments ago, so a
				// second may follow (TestActivateAgainAfterTheCycle).
				if diff := cmp.Diff([]any{tc.wantSue}, e.activator.probed()[:1]); diff != "" {
					t.Errorf("sue's cpu when Activate was called (-want,+got):\n%s", diff)
				}
			}
			// The activated pods now fit.
			for _, key := range tc.want {
				if _, s := e.preFilter(waiting[key]); !s.IsSuccess() {
					t.Errorf("PreFilter(%s) after the release = %v, want success", key, s)
				}
			}
		})
	}
}

// TestLetInReachesASmallPodBehindMany: a release tries the pods held by
// the limits it touched far enough to reach a small pod held behind more
// larger ones than the let-in of old looked at (64), and lets it in when
// it fits; the larger ones, which still do not fit, stay held.
func TestLetInReachesASmallPodBehindMany(t *testing.T) {
	// root.team may run 2 cpu; its users have no limits of their own.
	e := newEnv(t, envOptions{config: perUserConfig})
	running := userPod("running", "carl", "", "root.team.a", "1")
	leaving := userPod("leaving", "dan", "", "root.team.a", "1")
	for _, p := range []*v1.Pod{running, leaving} {
		e.mustSchedule(p)
		e.bind(p)
	}
	var big []*v1.Pod
	for i := 0; i < 100; i++ {
		big = append(big, userPod(fmt.Sprintf("big-%03d", i), fmt.Sprintf("u%03d", i), "", "root.team.a", "2"))
	}
	small := userPod("small", "zed", "", "root.team.a", "1")
	for _, p := range append(big, small) {
		if s := e.preEnqueue(p); s.Code() != fwk.UnschedulableAndUnresolvable {
			t.Fatalf("PreEnqueue(%s) = %v, want held", p.Name, s)
		}
	}
	if got := e.pl.held.book.Len(); got != 101 {
		t.Fatalf("%d pods held, want 101", got)
	}
	e.barrier()
	e.activator.reset()
	e.delete(leaving) // 1 of 2 cpu in use: room for the small pod only
	e.waitFor("the small pod let in", func() bool { return len(e.activator.activated()) > 0 })
	e.barrier()
	if diff := cmp.Diff([]string{"ns1/small"}, e.activator.activated()); diff != "" {
		t.Errorf("activated (-want,+got):\n%s", diff)
	}
}

// TestEchoAfterTheCycle: a pod let in while it may still be in the
// scheduling cycle that refused it is activated once more at its next
// PreEnqueue (the cycle's end, when the queue may put it in the backoff
// queue), off the queue's lock; a pod held at PreEnqueue, never in a
// cycle, is activated once.
func TestEchoAfterTheCycle(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inCycle   bool
		wantCalls int
	}{
		{"refused in a cycle", true, 2},
		{"held at PreEnqueue", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			// The status writes never give way to the binding (they would
			// wait on the clock too).
			e := newEnv(t, envOptions{config: perUserConfig, clock: clk, args: &Args{StatusBusyQPS: DefaultStatusQPS}})
			// The books of resource-seconds wait on the clock for their
			// next checkpoint (minutes away): an echo is a waiter more.
			e.waitFor("the books' checkpoint timer", func() bool { return clk.Waiters() > 0 })
			others := clk.Waiters()
			echoPending := func() bool { return clk.Waiters() > others }
			held := userPod("sue-held", "sue", "", "sandbox", "2")
			e.mustSchedule(held)
			e.bind(held)
			waits := userPod("sue-waits", "sue", "", "sandbox", "1")
			e.pending(waits)
			var s *fwk.Status
			if tc.inCycle {
				_, s = e.preFilter(waits)
			} else {
				s = e.pl.PreEnqueue(e.ctx, waits)
			}
			if s.Code() != fwk.UnschedulableAndUnresolvable {
				t.Fatalf("refusal = %v, want UnschedulableAndUnresolvable", s)
			}
			e.barrier()
			e.activator.reset()
			e.delete(held)
			// The release and its let-in ran in the handler of the delete:
			// every event before the barrier's was handled.
			e.barrier()
			if n := len(e.activator.callsSoFar()); n != 1 {
				t.Fatalf("%d Activate calls at the release, want 1", n)
			}
			if echoPending() {
				t.Fatal("an activation is pending before the pod reached PreEnqueue")
			}
			// The cycle ends (or Activate moves the pod): PreEnqueue passes
			// it, its room held.
			if s := e.pl.PreEnqueue(e.ctx, waits); !s.IsSuccess() {
				t.Fatalf("PreEnqueue after the let-in = %v, want success", s)
			}
			if pending := echoPending(); pending != (tc.wantCalls == 2) {
				t.Fatalf("echo pending: %v, want %v", pending, tc.wantCalls == 2)
			}
			clk.Step(0)
			e.waitFor(fmt.Sprintf("%d Activate calls", tc.wantCalls), func() bool { return len(e.activator.callsSoFar()) >= tc.wantCalls })
			// Once: the echo's own PreEnqueue owes nothing.
			if s := e.pl.PreEnqueue(e.ctx, waits); !s.IsSuccess() {
				t.Fatalf("PreEnqueue of the echo = %v, want success", s)
			}
			if echoPending() {
				t.Error("a second echo is pending")
			}
			want := [][]string{{"ns1/sue-waits"}, {"ns1/sue-waits"}}[:tc.wantCalls]
			if diff := cmp.Diff(want, e.activator.callsSoFar()); diff != "" {
				t.Errorf("activated (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestActivationReachesAnInFlightPod runs the race on kube-scheduler's own
// scheduling queue, with UserQuota's PreEnqueue: room frees while the
// refused pod is still in its cycle, and the cycle ends a second later (a
// loaded machine). The queue turns that Activate into a backoff (10 s
// here); the echo from PreEnqueue at the cycle's end moves the pod to the
// active queue.
func TestActivationReachesAnInFlightPod(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	e := newEnv(t, envOptions{config: perUserConfig, clock: clk})
	q := queue.NewTestQueue(e.ctx, func(a, b fwk.QueuedPodInfo) bool { return a.GetTimestamp().Before(b.GetTimestamp()) },
		queue.WithPodInitialBackoffDuration(10*time.Second), queue.WithPodMaxBackoffDuration(10*time.Second),
		queue.WithPreEnqueuePluginMap(map[string]map[string]fwk.PreEnqueuePlugin{profileName: {Name: e.pl}}))
	e.activator.forward(q)
	logger := klog.FromContext(e.ctx)

	// sue-waits passes the door, its room held; a config change drops
	// that room (as UnadmitAll does) and sue-held takes it: the race
	// that refuses an admitted pod in its cycle.
	waits := userPod("sue-waits", "sue", "", "sandbox", "1")
	e.pending(waits)
	q.Add(logger, waits)
	pInfo, err := q.Pop(logger) // the cycle starts: the pod is in flight
	if err != nil || pInfo.Pod.UID != waits.UID {
		t.Fatalf("Pop = %v, %v", pInfo, err)
	}
	if _, ok := e.pl.ugm.Unadmit(string(waits.UID)); !ok {
		t.Fatal("sue-waits passed the door without room held")
	}
	held := userPod("sue-held", "sue", "", "sandbox", "2")
	e.mustSchedule(held)
	e.bind(held)
	if _, s := e.preFilter(waits); s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("PreFilter = %v, want a refusal", s)
	}
	e.delete(held) // room frees before the cycle ends
	e.waitFor("the first Activate", func() bool { return len(e.activator.activated()) > 0 })
	clk.Step(time.Second) // a slow cycle
	pInfo.UnschedulablePlugins = sets.New(Name)
	if err := q.AddUnschedulableIfNotPresent(logger, pInfo, q.SchedulingCycle()); err != nil {
		t.Fatal(err)
	}
	if got := q.PodsInBackoffQ(); len(got) != 1 {
		t.Fatalf("after the cycle the pod is in the backoff queue, want it there first; backoff queue %v", got)
	}
	clk.Step(0) // the echo
	e.waitFor("the pod in the active queue", func() bool {
		active := q.PodsInActiveQ()
		return len(active) == 1 && active[0].UID == waits.UID
	})
}

// TestActivateAfterUnreserve: a Reserve rolled back by Unreserve releases
// its charge and activates the pods it was blocking.
func TestActivateAfterUnreserve(t *testing.T) {
	e := newEnv(t, envOptions{config: perUserConfig})
	held := userPod("held", "sue", "", "sandbox", "2")
	state, s := e.preFilter(held)
	if !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	if s := e.reserve(state, held); !s.IsSuccess() {
		t.Fatalf("Reserve: %v", s)
	}
	for _, p := range []*v1.Pod{userPod("sue-waits", "sue", "", "sandbox", "1"), userPod("bob-bad", "bob", "", "nope", "1")} {
		e.pending(p)
		if _, s := e.preFilter(p); s.IsSuccess() {
			t.Fatalf("PreFilter(%s) passed, want a refusal", p.Name)
		}
	}
	e.unreserve(state, held)
	if diff := cmp.Diff([]string{"ns1/sue-waits"}, e.activator.activated()); diff != "" {
		t.Errorf("activated (-want,+got):\n%s", diff)
	}
}

func TestEventsToRegister(t *testing.T) {
	e := newEnv(t, envOptions{config: sandboxConfig})
	got, err := e.pl.EventsToRegister(e.ctx)
	if err != nil {
		t.Fatalf("EventsToRegister: %v", err)
	}
	var events []fwk.ClusterEvent
	for _, ev := range got {
		events = append(events, ev.Event)
		if ev.QueueingHintFn == nil {
			t.Errorf("event %v has no queueing hint", ev.Event)
		}
	}
	// One event: each costs a comparison per held pod per binding.
	want := []fwk.ClusterEvent{
		{Resource: fwk.Pod, ActionType: fwk.Delete | fwk.UpdatePodScaleDown | fwk.UpdatePodLabel},
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want,+got):\n%s", diff)
	}
}

// TestQueueingHints: a held pod is let in by the plugin, so the hints
// skip every event for it but its own update; a pod refused without being
// held is queued when a pod of ours frees room.
func TestQueueingHints(t *testing.T) {
	// sue holds 2 cpu (her limit) and ann (dev) 2 cpu: root.sandbox is at
	// its 4 cpu max and dev at 2 of 3.
	sueHeld := userPod("sue-held", "sue", "", "sandbox", "2")
	annHeld := userPod("ann-held", "ann", "dev", "sandbox", "2")
	// Refused: by sue's user limit, by the queue max, by dev's group limit.
	sueWaits := userPod("sue-waits", "sue", "", "sandbox", "1")
	carlWaits := userPod("carl-waits", "carl", "", "sandbox", "1")
	danWaits := podOf("dan-waits").Annotation(podmeta.AnnotationUserInfo, `{"user":"dan","groups":["dev"]}`).
		Label(podmeta.LabelQueue, "sandbox").Req(cpu("1500m")).Obj()
	// Not refused by us.
	stranger := userPod("stranger", "eve", "", "open", "1")
	// Released elsewhere: bob in root.open.
	bobOpen := userPod("bob-open", "bob", "", "open", "1")

	boundTo := func(p *v1.Pod, node string) *v1.Pod {
		c := p.DeepCopy()
		c.Spec.NodeName = node
		return c
	}
	otherScheduler := func(p *v1.Pod) *v1.Pod {
		c := boundTo(p, testNode)
		c.Spec.SchedulerName = "default-scheduler"
		return c
	}
	relabeled := func(p *v1.Pod) *v1.Pod {
		c := p.DeepCopy()
		c.Labels[podmeta.LabelQueue] = "open"
		return c
	}
	tomb := func(p *v1.Pod) interface{} {
		return cache.DeletedFinalStateUnknown{Key: p.Namespace + "/" + p.Name, Obj: boundTo(p, testNode)}
	}
	const (
		deleted = "delete"
		updated = "update"
	)
	tests := []struct {
		name  string
		kind  string
		pod   *v1.Pod     // the refused (or not) pod
		other interface{} // the pod the event is about
		want  fwk.QueueingHint
	}{
		// A held pod is let in by the plugin, never by the queue, except
		// when it changes itself (its queue may change).
		{name: "held: same user's pod deleted", kind: deleted, pod: sueWaits, other: boundTo(sueHeld, testNode), want: fwk.QueueSkip},
		{name: "held: same user's pod deleted, tombstone", kind: deleted, pod: sueWaits, other: tomb(sueHeld), want: fwk.QueueSkip},
		{name: "held by the queue: any pod of the queue deleted", kind: deleted, pod: carlWaits, other: boundTo(annHeld, testNode), want: fwk.QueueSkip},
		{name: "held by the group: a pod of the group deleted", kind: deleted, pod: danWaits, other: boundTo(annHeld, testNode), want: fwk.QueueSkip},
		{name: "held: same user's pod scaled down", kind: updated, pod: sueWaits, other: boundTo(sueHeld, testNode), want: fwk.QueueSkip},
		{name: "held: the pod's own labels changed", kind: updated, pod: sueWaits, other: relabeled(sueWaits), want: fwk.Queue},

		// A pod not held (refused in a cycle so that reclaim may make room,
		// or not ours to hold) may try again when a pod of ours frees room.
		{name: "not held: a bound pod of ours deleted", kind: deleted, pod: stranger, other: boundTo(sueHeld, testNode), want: fwk.Queue},
		{name: "not held: a bound pod of ours deleted, tombstone", kind: deleted, pod: stranger, other: tomb(bobOpen), want: fwk.Queue},
		{name: "not held: a pending pod deleted", kind: deleted, pod: stranger, other: sueHeld, want: fwk.QueueSkip},
		{name: "not held: a pod of another scheduler deleted", kind: deleted, pod: stranger, other: otherScheduler(sueHeld), want: fwk.QueueSkip},
		{name: "not a pod", kind: deleted, pod: stranger, other: &v1.Node{}, want: fwk.QueueSkip},
		{name: "not held: a bound pod of ours scaled down", kind: updated, pod: stranger, other: boundTo(bobOpen, testNode), want: fwk.Queue},
		{name: "not held: a pending pod updated", kind: updated, pod: stranger, other: sueHeld, want: fwk.QueueSkip},
		{name: "not held: a pod of another scheduler updated", kind: updated, pod: stranger, other: otherScheduler(sueHeld), want: fwk.QueueSkip},
		{name: "update of not a pod", kind: updated, pod: stranger, other: &v1.Node{}, want: fwk.QueueSkip},
		{name: "not held: its own labels changed", kind: updated, pod: stranger, other: relabeled(stranger), want: fwk.Queue},
	}

	e := newEnv(t, envOptions{config: sandboxConfig})
	e.mustSchedule(sueHeld)
	e.mustSchedule(annHeld)
	for p, want := range map[*v1.Pod]string{
		sueWaits:  `user "sue" would exceed maxresources in root.sandbox: cpu 2+1 > 2`,
		carlWaits: `queue root.sandbox would exceed max: cpu 4+1 > 4`,
		danWaits:  `group "dev" would exceed maxresources in root.sandbox: cpu 2+1500m > 3`,
	} {
		if _, s := e.preFilter(p); s.Message() != want {
			t.Fatalf("PreFilter(%s) = %v, want %q", p.Name, s, want)
		}
	}
	evs, _ := e.pl.EventsToRegister(e.ctx)
	if len(evs) != 1 {
		t.Fatalf("%d events registered, want 1", len(evs))
	}
	hint := evs[0].QueueingHintFn
	logger := klog.FromContext(e.ctx)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got fwk.QueueingHint
			var err error
			if tc.kind == deleted {
				got, err = hint(logger, tc.pod, tc.other, nil)
			} else {
				got, err = hint(logger, tc.pod, tc.other, tc.other)
			}
			if err != nil {
				t.Fatalf("hint: %v", err)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestForgetPodDropsRoomForGood: a pod deleted while a let-in is under
// way (room admitted, its hold not yet taken off the book) leaves no room
// held: the delete takes the hold off first, so the room it drops cannot
// be admitted again to the same, gone, pod.
func TestForgetPodDropsRoomForGood(t *testing.T) {
	activated := 0
	pl, _ := barePlugin(t, letInConfig, &activated)
	m := pl.ugm
	logger := klog.Background()

	run := userPod("sue-run", "sue", "", "root.q", "1")
	req, err := pl.podRequest(run, m.InForce().Partition, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := pl.ledger.Allocate(string(run.UID), req); err != nil {
		t.Fatal(err)
	}
	pod := userPod("sue-held", "sue", "", "root.q", "1")
	d := m.Decide(string(pod.UID), pl.placer(pod), false)
	if d.Err == nil {
		t.Fatal("sue-held fits while sue-run runs")
	}
	pl.holdPod(klog.Background(), pod, &d.Request, d.Err, false)
	// sue-run ends; the let-in admits sue-held's room ...
	if _, ok, err := pl.ledger.Release(string(run.UID)); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	if err := m.Admit(string(pod.UID), &d.Request); err != nil {
		t.Fatal(err)
	}
	// ... and sue-held is deleted before the let-in takes it off the book.
	pl.forgetPod(logger, pod.UID)
	if m.Admitted(string(pod.UID)) {
		t.Errorf("room still held for the deleted pod sue-held (activated %d)", activated)
	}
	if pl.held.get(pod.UID) != nil {
		t.Error("the deleted pod sue-held is still held")
	}
}

// TestAdmitStaleCopyOfBoundPod: a let-in or the queue's PreEnqueue may
// decide on a stale copy of a pod whose binding's charge came first. The
// room it admits is dropped as run: no admission outlives the pod's
// charge, and a gang's reservation ends when its whole minimum runs.
func TestAdmitStaleCopyOfBoundPod(t *testing.T) {
	for _, gangs := range []bool{false, true} {
		t.Run(map[bool]string{false: "ordinary pod", true: "gang"}[gangs], func(t *testing.T) {
			e := newEnv(t, envOptions{config: queueconfigtest.Gangs})
			pods := taskGroupPods("sue", "a", 2, 2, "")
			if !gangs {
				pods = []*v1.Pod{userPod("a-0", "sue", "", "root.g", "1"), userPod("a-1", "sue", "", "root.g", "1")}
			}
			if s := e.preEnqueue(pods[0]); !s.IsSuccess() {
				t.Fatalf("PreEnqueue(%s) = %v", pods[0].Name, s)
			}
			e.bind(pods[0])
			// The second is bound (and charged) before its stale copy is
			// decided.
			e.bind(pods[1])
			e.barrier()
			if s := e.pl.PreEnqueue(e.ctx, pods[1]); !s.IsSuccess() {
				t.Fatalf("PreEnqueue(stale %s) = %v", pods[1].Name, s)
			}
			for _, p := range pods {
				if e.pl.ugm.Admitted(string(p.UID)) {
					t.Errorf("%s runs and still holds room", p.Name)
				}
			}
			if held, ok := e.pl.ugm.GangHeld("TaskGroups ns1/a"); ok {
				t.Errorf("gang a runs its minimum and still holds a reservation (%v)", held)
			}
		})
	}
}

// TestLetInLogsEachDecision: at V(5) the let-in says what it decided for
// each held pod it tried, and why one stays held; below V(5) it says
// nothing of them.
func TestLetInLogsEachDecision(t *testing.T) {
	e := newEnv(t, envOptions{config: perUserConfig})
	big := userPod("sue-big", "sue", "", "sandbox", "2")
	e.mustSchedule(big)
	e.bind(big)
	waits := userPod("sue-waits", "sue", "", "sandbox", "1")
	e.pending(waits)
	if _, s := e.preFilter(waits); s.IsSuccess() {
		t.Fatal("sue-waits fits beside sue-big")
	}
	e.barrier()
	for _, tc := range []struct {
		verbosity int
		want      string
	}{
		{5, `Held pod stays held pod="ns1/sue-waits" reason="user \"sue\" would exceed maxresources in root.sandbox`},
		{4, ""},
	} {
		logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(tc.verbosity), ktesting.BufferLogs(true)))
		e.pl.letIn(logger, e.pl.held.all(queueOrder{e.pl.ugm}), true)
		got := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
		if tc.want == "" && strings.Contains(got, "Held pod") || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("V(%d) logged:\n%s\nwant %q", tc.verbosity, got, tc.want)
		}
	}
}
