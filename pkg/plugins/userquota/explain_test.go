package userquota

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/estimate"
	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/rest"
	"github.com/userquota/userquota/pkg/rest/dao"
)

// explainConfig: every user may use 4 cpu in root.sandbox; root.team
// holds 4 cpu for everyone.
var explainConfig = queueconfigtest.Root(`
queues:
- name: sandbox
  limits:
  - limit: everyone
    users: ["*"]
    maxresources: {vcore: 4}
- name: team
  resources:
    max: {vcore: 4}
`)

// explainT0 is the fake clock's start.
var explainT0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

// explainEnv is the scene the explanation tests read, on a fake clock:
//
//   - sue's three pods of 1 cpu in root.sandbox ran and ended at minutes
//     1, 2 and 3 (completions: 3 cpu freed from minute 1 to now, minute 4);
//   - sue-1 and sue-2 (2 cpu each) run there: sue is at her 4 cpu;
//   - sue-3 (1 cpu), sue-4 (2 cpu) and sue-big (5 cpu) are held by her
//     limit, in that order, at minute 4;
//   - bob and ann run 2 cpu each in root.team, which is full; carl's pod
//     of 1 cpu is held by the queue's max;
//   - gated has scheduling gates, free fits and was let in, and other is
//     another scheduler's.
type explainEnv struct {
	*env
	clock *testingclock.FakeClock
	pods  map[string]*v1.Pod
}

func newExplainEnv(t *testing.T) *explainEnv {
	clk := testingclock.NewFakeClock(explainT0)
	e := &explainEnv{env: newEnv(t, envOptions{config: explainConfig, clock: clk}), clock: clk, pods: map[string]*v1.Pod{}}
	pod := func(name, user, queue, cpu string) *v1.Pod {
		p := userPod(name, user, "", queue, cpu)
		e.pods[name] = p
		return p
	}
	for i, name := range []string{"done-1", "done-2", "done-3"} {
		clk.SetTime(explainT0.Add(time.Duration(i+1) * time.Minute))
		p := pod(name, "sue", "sandbox", "1")
		e.bind(p)
		e.waitFor(name+" charged", func() bool { return e.pl.isCharged(p.UID) })
		e.delete(p)
		e.waitFor(name+" released", func() bool { return !e.pl.isCharged(p.UID) })
	}
	clk.SetTime(explainT0.Add(4 * time.Minute))
	for _, p := range []*v1.Pod{pod("sue-1", "sue", "sandbox", "2"), pod("sue-2", "sue", "sandbox", "2"),
		pod("bob-run", "bob", "root.team", "2"), pod("ann-run", "ann", "root.team", "2")} {
		e.bind(p)
		e.waitFor(p.Name+" charged", func() bool { return e.pl.isCharged(p.UID) })
	}
	for _, p := range []*v1.Pod{pod("sue-3", "sue", "sandbox", "1"), pod("sue-4", "sue", "sandbox", "2"),
		pod("sue-big", "sue", "sandbox", "5"), pod("carl-held", "carl", "root.team", "1")} {
		if s := e.preEnqueue(p); s.IsSuccess() {
			t.Fatalf("%s passed PreEnqueue, want it held", p.Name)
		}
	}
	gated := userPod("gated", "sue", "", "sandbox", "1")
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
	e.pods["gated"] = gated
	e.pending(gated)
	free := pod("free", "dan", "sandbox", "1")
	if s := e.preEnqueue(free); !s.IsSuccess() {
		t.Fatalf("free held: %v", s)
	}
	other := podOf("other").SchedulerName("default-scheduler").Annotation(podmeta.AnnotationUserInfo, `{"user":"sue"}`).Obj()
	e.pods["other"] = other
	e.pending(other)
	return e
}

var (
	admin = rest.Viewer{All: true}
	sue   = rest.Viewer{User: "sue"}
	carl  = rest.Viewer{User: "carl"}
	bob   = rest.Viewer{User: "bob"}
)

// reference is the accuracy an explanation quotes before its scheduler
// compared estimates of its own.
var reference = dao.Accuracy{Scope: "simulator", Compared: estimate.ReferenceCompared,
	P50Seconds: int64(estimate.ReferenceP50 / time.Second), P90Seconds: int64(estimate.ReferenceP90 / time.Second),
	Reference: estimate.ReferenceTrace}

// TestWhy: what each pod's explanation says, and to whom.
func TestWhy(t *testing.T) {
	e := newExplainEnv(t)
	since := explainT0.Add(4 * time.Minute)
	at := since
	sueLimit := func(request int64) *dao.Limit {
		return &dao.Limit{Who: "user", Name: "sue", Queue: "root.sandbox", Limit: "resources", Resource: "cpu", Usage: 4000, Request: request, Max: 4000}
	}
	sueHolders := []dao.Holder{{Pod: "ns1/sue-1", User: "sue", Pods: 1, Amount: 2000}, {Pod: "ns1/sue-2", User: "sue", Pods: 1, Amount: 2000}}
	// 3 cpu freed by 3 completions over the 3 minutes since the first.
	rate := func(wait int64) dao.Estimate {
		return dao.Estimate{Known: true, At: at, WaitSeconds: wait, Freed: 3000, Completions: 3, SpanSeconds: 180, Accuracy: reference}
	}
	for _, tc := range []struct {
		name    string
		pod     string
		viewer  rest.Viewer
		want    *dao.PodExplanation
		wantErr error
	}{
		{
			name: "held by its user's limit, first in its queue's line: 1 cpu to free at 1 cpu a minute", pod: "sue-3", viewer: sue,
			want: &dao.PodExplanation{Pod: "ns1/sue-3", State: dao.StateHeld, User: "sue", Queue: "root.sandbox", Application: "ns1/pod/uid-sue-3",
				Request: map[string]int64{"cpu": 1000, "pods": 1},
				Message: `Held by quota: user "sue" would exceed maxresources in root.sandbox: cpu 4+1 > 4`,
				Held: &dao.HeldExplanation{Kind: "User", Reason: `user "sue" would exceed maxresources in root.sandbox: cpu 4+1 > 4`,
					Limit: sueLimit(1000), Since: since, Position: 1, QueueHeld: 3,
					LetIn:    &dao.LetIn{Resource: "cpu", Own: 1000, Holders: sueHolders},
					Estimate: rate(60)}},
		},
		{
			name: "second in line: sue-3's 1 cpu ahead of its own 2", pod: "sue-4", viewer: admin,
			want: &dao.PodExplanation{Pod: "ns1/sue-4", State: dao.StateHeld, User: "sue", Queue: "root.sandbox", Application: "ns1/pod/uid-sue-4",
				Request: map[string]int64{"cpu": 2000, "pods": 1},
				Message: `Held by quota: user "sue" would exceed maxresources in root.sandbox: cpu 4+2 > 4`,
				Held: &dao.HeldExplanation{Kind: "User", Reason: `user "sue" would exceed maxresources in root.sandbox: cpu 4+2 > 4`,
					Limit: sueLimit(2000), Since: since, Position: 2, QueueHeld: 3,
					LetIn:    &dao.LetIn{Resource: "cpu", Own: 2000, Ahead: 1000, AheadPods: 1, Holders: sueHolders},
					Estimate: rate(180)}},
		},
		{
			name: "more than the limit: no release lets it in, no estimate", pod: "sue-big", viewer: sue,
			want: &dao.PodExplanation{Pod: "ns1/sue-big", State: dao.StateHeld, User: "sue", Queue: "root.sandbox", Application: "ns1/pod/uid-sue-big",
				Request: map[string]int64{"cpu": 5000, "pods": 1},
				Message: `Held by quota: user "sue" would exceed maxresources in root.sandbox: cpu 4+5 > 4`,
				Held: &dao.HeldExplanation{Kind: "User", Reason: `user "sue" would exceed maxresources in root.sandbox: cpu 4+5 > 4`,
					Limit: sueLimit(5000), Since: since, Position: 3, QueueHeld: 3,
					Estimate: dao.Estimate{At: at, Unknown: "never, unless the limit is raised: it asks more cpu than the whole limit", Accuracy: reference}}},
		},
		{
			name: "held by its queue's max: other users' pods counted, not named", pod: "carl-held", viewer: carl,
			want: &dao.PodExplanation{Pod: "ns1/carl-held", State: dao.StateHeld, User: "carl", Queue: "root.team", Application: "ns1/pod/uid-carl-held",
				Request: map[string]int64{"cpu": 1000, "pods": 1},
				Message: "Held by quota: queue root.team would exceed max: cpu 4+1 > 4",
				Held: &dao.HeldExplanation{Kind: "Queue", Reason: "queue root.team would exceed max: cpu 4+1 > 4",
					Limit: &dao.Limit{Who: "queue", Name: "root.team", Queue: "root.team", Limit: "resources", Resource: "cpu", Usage: 4000, Request: 1000, Max: 4000},
					Since: since, Position: 1, QueueHeld: 1,
					LetIn:    &dao.LetIn{Resource: "cpu", Own: 1000, Holders: []dao.Holder{{Pod: dao.Hidden, Pods: 2, Amount: 4000}}},
					Estimate: dao.Estimate{At: at, Unknown: "too few completions seen on this limit to estimate (0 in the last 6h0m0s, 3 needed)", Accuracy: reference}}},
		},
		{
			name: "the same to an admin: every holder named", pod: "carl-held", viewer: admin,
			want: &dao.PodExplanation{Pod: "ns1/carl-held", State: dao.StateHeld, User: "carl", Queue: "root.team", Application: "ns1/pod/uid-carl-held",
				Request: map[string]int64{"cpu": 1000, "pods": 1},
				Message: "Held by quota: queue root.team would exceed max: cpu 4+1 > 4",
				Held: &dao.HeldExplanation{Kind: "Queue", Reason: "queue root.team would exceed max: cpu 4+1 > 4",
					Limit: &dao.Limit{Who: "queue", Name: "root.team", Queue: "root.team", Limit: "resources", Resource: "cpu", Usage: 4000, Request: 1000, Max: 4000},
					Since: since, Position: 1, QueueHeld: 1,
					LetIn: &dao.LetIn{Resource: "cpu", Own: 1000, Holders: []dao.Holder{
						{Pod: "ns1/ann-run", User: "ann", Pods: 1, Amount: 2000}, {Pod: "ns1/bob-run", User: "bob", Pods: 1, Amount: 2000}}},
					Estimate: dao.Estimate{At: at, Unknown: "too few completions seen on this limit to estimate (0 in the last 6h0m0s, 3 needed)", Accuracy: reference}}},
		},
		{
			name: "running: what it is charged to", pod: "sue-1", viewer: sue,
			want: &dao.PodExplanation{Pod: "ns1/sue-1", State: dao.StateRunning, User: "sue", Queue: "root.sandbox", Application: "ns1/pod/uid-sue-1",
				Request: map[string]int64{"cpu": 2000, "pods": 1},
				Message: `Running on node-1, charged to user "sue" in queue root.sandbox.`,
				Charged: &dao.ChargeExplanation{User: "sue", Queue: "root.sandbox", Application: "ns1/pod/uid-sue-1",
					Resources: map[string]int64{"cpu": 2000, "pods": 1}, Forced: true, Preemptible: true}},
		},
		{
			name: "gated: quota decides it once ungated", pod: "gated", viewer: sue,
			want: &dao.PodExplanation{Pod: "ns1/gated", State: dao.StateGated, User: "sue", Queue: "root.sandbox", Application: "ns1/pod/uid-gated",
				Request: map[string]int64{"cpu": 1000, "pods": 1},
				Message: "It has scheduling gates: quota decides it once they are removed."},
		},
		{
			name: "let in: room held, waiting for its cycle or a node", pod: "free", viewer: admin,
			want: &dao.PodExplanation{Pod: "ns1/free", State: dao.StateAdmitted, User: "dan", Queue: "root.sandbox", Application: "ns1/pod/uid-free",
				Request: map[string]int64{"cpu": 1000, "pods": 1},
				Message: "Let in by quota (room is held for it): it waits for its scheduling cycle or for a node that fits it (kubectl describe pod shows the scheduler's reason when no node fits)."},
		},
		{name: "another user's pod: as if it did not exist", pod: "sue-3", viewer: bob, wantErr: rest.ErrNoPod},
		{name: "no such pod", pod: "missing", viewer: admin, wantErr: rest.ErrNoPod},
		{name: "no such pod, to a user", pod: "missing", viewer: sue, wantErr: rest.ErrNoPod},
		{name: "another scheduler's pod, to its user", pod: "other", viewer: sue, wantErr: &rest.NotOursError{SchedulerName: "default-scheduler", Ours: profileName}},
		{name: "another scheduler's pod, to someone else", pod: "other", viewer: bob, wantErr: rest.ErrNoPod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.pl.why("ns1", tc.pod, tc.viewer)
			var notOurs *rest.NotOursError
			switch want := tc.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("err = %v", err)
				}
			case *rest.NotOursError:
				if !errors.As(err, &notOurs) || *notOurs != *want {
					t.Fatalf("err = %v, want %v", err, want)
				}
			default:
				if !errors.Is(err, want) {
					t.Fatalf("err = %v, want %v", err, want)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("why (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestWhyAccuracy: an estimate given is compared with the pod's let-in;
// once minCompared were, explanations quote this scheduler's accuracy
// instead of the reference.
func TestWhyAccuracy(t *testing.T) {
	e := newExplainEnv(t)
	got, err := e.pl.why("ns1", "sue-3", sue)
	if err != nil || got.Held.Estimate.WaitSeconds != 60 {
		t.Fatalf("why: %v, %+v; want an estimate of 60 s", err, got)
	}
	// Two minutes on, sue-1 ends: sue-3 is let in, a minute later than
	// estimated.
	e.clock.Step(2 * time.Minute)
	e.delete(e.pods["sue-1"])
	e.waitFor("sue-3 let in", func() bool { return e.pl.held.get(e.pods["sue-3"].UID) == nil })
	e.waitFor("the estimate compared", func() bool {
		e.pl.waits.mu.Lock()
		defer e.pl.waits.mu.Unlock()
		return e.pl.waits.accuracy.All().Compared == 1
	})
	e.pl.waits.mu.Lock()
	all := e.pl.waits.accuracy.All()
	e.pl.waits.mu.Unlock()
	if all.P50 != time.Minute {
		t.Errorf("error %s, want 1m (estimated 1m, let in after 2m)", all.P50)
	}
	if got := accuracyOf("root.sandbox", all, all); got != reference {
		t.Errorf("with 1 compared the explanation quotes %+v, want the reference", got)
	}
	five := estimate.Summary{Compared: minCompared, P50: time.Minute, P90: 2 * time.Minute}
	want := dao.Accuracy{Scope: "queue root.sandbox", Compared: minCompared, P50Seconds: 60, P90Seconds: 120}
	if got := accuracyOf("root.sandbox", five, five); got != want {
		t.Errorf("with %d compared in the queue: %+v, want %+v", minCompared, got, want)
	}
	want.Scope = "all queues"
	if got := accuracyOf("root.sandbox", estimate.Summary{}, five); got != want {
		t.Errorf("with %d compared elsewhere: %+v, want %+v", minCompared, got, want)
	}
}

// TestHeldPods: a queue's held pods in let-in order, paged.
func TestHeldPods(t *testing.T) {
	e := newExplainEnv(t)
	since := explainT0.Add(4 * time.Minute)
	heldPod := func(pos int, name string, cpu int64) dao.HeldPod {
		p := e.pods[name]
		return dao.HeldPod{Position: pos, Pod: "ns1/" + name, User: "sue", Application: "ns1/pod/uid-" + name,
			Created: p.CreationTimestamp.UTC(), Since: since, Kind: "User",
			Reason:  `user "sue" would exceed maxresources in root.sandbox: cpu 4+` + map[int64]string{1000: "1", 2000: "2", 5000: "5"}[cpu] + ` > 4`,
			Request: map[string]int64{"cpu": cpu, "pods": 1}}
	}
	for _, tc := range []struct {
		name          string
		queue         string
		offset, limit int
		want          dao.HeldPods
	}{
		{"the whole line", "root.sandbox", 0, 100, dao.HeldPods{Queue: "root.sandbox", Total: 3, Limit: 100,
			Pods: []dao.HeldPod{heldPod(1, "sue-3", 1000), heldPod(2, "sue-4", 2000), heldPod(3, "sue-big", 5000)}}},
		{"a page", "root.sandbox", 1, 1, dao.HeldPods{Queue: "root.sandbox", Total: 3, Offset: 1, Limit: 1,
			Pods: []dao.HeldPod{heldPod(2, "sue-4", 2000)}}},
		{"past the end", "root.sandbox", 5, 10, dao.HeldPods{Queue: "root.sandbox", Total: 3, Offset: 5, Limit: 10, Pods: []dao.HeldPod{}}},
		{"a queue with none held", "root.other", 0, 10, dao.HeldPods{Queue: "root.other", Limit: 10, Pods: []dao.HeldPod{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, e.pl.heldPods(tc.queue, tc.offset, tc.limit)); diff != "" {
				t.Errorf("heldPods (-want,+got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(map[string]int{"root.sandbox": 3, "root.team": 1}, e.pl.held.queueCounts()); diff != "" {
		t.Errorf("queueCounts (-want,+got):\n%s", diff)
	}
}

// TestWhyBorrowing: a running pod of an elastic queue using more than
// its guaranteed share borrows; once the lender's pods come and its
// queue's share shrinks below what it uses, it may be reclaimed; a
// non-preemptible one never.
func TestWhyBorrowing(t *testing.T) {
	e := newEnv(t, envOptions{config: elasticConfig, objects: []runtime.Object{readyNode(testNode, "4")}})
	e.waitFor("the first share table", func() bool { return e.pl.ugm.Shares() != nil })
	run := userPod("b-run", "bob", "", "root.b", "2")
	more := userPod("b-more", "bob", "", "root.b", "1")
	more.Labels[podmeta.LabelPreemptible] = "false"
	for _, p := range []*v1.Pod{run, more} {
		e.bind(p)
		e.waitFor(p.Name+" charged", func() bool { return e.pl.isCharged(p.UID) })
	}
	e.waitFor("b's share to cover its 3 cpu", func() bool { return runtimeCPU(e.pl, "root.b") == 3000 })
	charge := func(name string) *dao.ChargeExplanation {
		got, err := e.pl.why("ns1", name, admin)
		if err != nil || got.Charged == nil {
			t.Fatalf("why %s: %v, %+v", name, err, got)
		}
		return got.Charged
	}
	borrow := func(share int64) []dao.Borrow {
		return []dao.Borrow{{Queue: "root.b", Resource: "cpu", Usage: 3000, Guaranteed: 2000, Share: share, OverShare: share < 3000}}
	}
	want := &dao.ChargeExplanation{User: "bob", Queue: "root.b", Application: "ns1/pod/uid-b-run", Resources: map[string]int64{"cpu": 2000, "pods": 1},
		Forced: true, Preemptible: true, Elastic: true, Borrowing: borrow(3000)}
	if diff := cmp.Diff(want, charge("b-run")); diff != "" {
		t.Errorf("borrowing within its share (-want,+got):\n%s", diff)
	}
	e.create(userPod("a-1", "ann", "", "root.a", "2"))
	e.waitFor("b's share to shrink to its guaranteed", func() bool { return runtimeCPU(e.pl, "root.b") == 2000 })
	want.Borrowing, want.Reclaimable = borrow(2000), true
	if diff := cmp.Diff(want, charge("b-run")); diff != "" {
		t.Errorf("over its share (-want,+got):\n%s", diff)
	}
	if got := charge("b-more"); got.Reclaimable || got.Preemptible || len(got.Borrowing) != 1 {
		t.Errorf("a non-preemptible pod over its share: %+v, want borrowing, never reclaimable", got)
	}
}

// TestWhyBehind: a pod that fits but is kept behind another user's pod
// that waited longer than the starvation wait is held by that pod's
// limit, with that pod ahead of it; the starving pod is named to an
// admin, not to the pod's user.
func TestWhyBehind(t *testing.T) {
	clk := testingclock.NewFakeClock(explainT0)
	e := newEnv(t, envOptions{config: explainConfig, clock: clk})
	bobRun, annRun := userPod("bob-run", "bob", "", "root.team", "2"), userPod("ann-run", "ann", "", "root.team", "2")
	for _, p := range []*v1.Pod{bobRun, annRun} {
		e.bind(p)
		e.waitFor(p.Name+" charged", func() bool { return e.pl.isCharged(p.UID) })
	}
	if s := e.preEnqueue(userPod("ann-big", "ann", "", "root.team", "3")); s.IsSuccess() {
		t.Fatal("ann-big passed PreEnqueue")
	}
	clk.Step(3 * time.Minute) // past the starvation wait (2m)
	e.delete(bobRun)
	e.waitFor("bob-run released", func() bool { return !e.pl.isCharged(bobRun.UID) })
	if s := e.preEnqueue(userPod("carl-small", "carl", "", "root.team", "1")); s.IsSuccess() {
		t.Fatal("carl-small passed PreEnqueue, want it kept behind ann-big")
	}
	for _, tc := range []struct {
		viewer rest.Viewer
		names  string
	}{{carl, dao.Hidden}, {admin, "ns1/ann-big"}} {
		got, err := e.pl.why("ns1", "carl-small", tc.viewer)
		if err != nil {
			t.Fatal(err)
		}
		h := got.Held
		if h.Kind != "Behind" || !strings.HasPrefix(h.Reason, "waiting behind pod "+tc.names+", held since 10:00:00") {
			t.Errorf("to %+v: kind %s, reason %q; want Behind naming %s", tc.viewer, h.Kind, h.Reason, tc.names)
		}
		if tc.viewer == carl && strings.Contains(h.Reason, "ann") {
			t.Errorf("carl is told of ann's pod: %s", h.Reason)
		}
		wantLimit := &dao.Limit{Who: "queue", Name: "root.team", Queue: "root.team", Limit: "resources", Resource: "cpu", Usage: 2000, Request: 1000, Max: 4000}
		if diff := cmp.Diff(wantLimit, h.Limit); diff != "" {
			t.Errorf("limit (-want,+got):\n%s", diff)
		}
		// ann-big's 3 cpu are ahead: 2 + 3 + 1 - 4 = 2 to release.
		if l := h.LetIn; l == nil || l.Own != 0 || l.Ahead != 3000 || l.AheadPods != 1 {
			t.Errorf("let in %+v, want nothing of its own short and ann-big's 3 cpu ahead", l)
		}
	}
}

// TestWhyGroupHolders: the holders of a group's limit are the pods whose
// applications are tracked against that group: for the cumulative group
// "*", not a pod of a user tracked against a named group.
func TestWhyGroupHolders(t *testing.T) {
	e := newEnv(t, envOptions{config: groupsConfig})
	for _, p := range []*v1.Pod{userPod("gil-run", "gil", "guests", "a", "2"), userPod("dan-run", "dan", "dev,guests", "a", "1")} {
		e.mustSchedule(p)
		e.bind(p)
	}
	if s := e.preEnqueue(userPod("big", "gus", "guests", "a", "2")); s.IsSuccess() {
		t.Fatal(`big let in past group "*"'s limit`)
	}
	got, err := e.pl.why("ns1", "big", admin)
	if err != nil || got.Held == nil || got.Held.LetIn == nil {
		t.Fatalf("why: %v, %+v", err, got)
	}
	want := []dao.Holder{{Pod: "ns1/gil-run", User: "gil", Pods: 1, Amount: 2000}}
	if diff := cmp.Diff(want, got.Held.LetIn.Holders); diff != "" {
		t.Errorf("holders of group \"*\"'s limit (-want,+got):\n%s", diff)
	}
}
