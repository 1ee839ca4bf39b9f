package userquota

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/component-base/metrics/legacyregistry"
	fwk "k8s.io/kube-scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// gangEvents reads userquota_gangs_total{event} (0 before the first).
func gangEvents(t *testing.T, event string) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "userquota_gangs_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "event" && l.GetValue() == event {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// taskGroupPods are the n pods of user's application app, 1 cpu each, in
// one YuniKorn task group of minMember min; the first carries the task
// groups (as a Spark driver does), the others only their group's name.
// params, if set, is the schedulingPolicyParameters annotation.
func taskGroupPods(user, app string, n, min int, params string) []*v1.Pod {
	var pods []*v1.Pod
	for i := 0; i < n; i++ {
		w := podOf(fmt.Sprintf("%s-%d", app, i)).Annotation("userquota.io/user-info", fmt.Sprintf(`{"user":%q}`, user)).
			Label("userquota.io/queue", "root.g").Label("applicationId", app).Req(cpu("1")).
			Annotation(gang.AnnotationTaskGroupName, "workers")
		if i == 0 {
			w = w.Annotation(gang.AnnotationTaskGroups, fmt.Sprintf(`[{"name":"workers","minMember":%d,"minResource":{"cpu":"1"}}]`, min))
			if params != "" {
				w = w.Annotation(gang.AnnotationPolicyParameters, params)
			}
		}
		pods = append(pods, w.Obj())
	}
	return pods
}

// TestGangAllOrNothing is issue 19's scenario at PreEnqueue: two users'
// gangs of 8 fit (16 of 20 cpu); a third gang of 8 is held whole, none of
// its pods admitted and nothing held for it, though 4 pods would fit one
// by one; when the first gang completes, the third is let in whole.
// Ignoring gangs, the same third gang is admitted in part (4 of 8).
func TestGangAllOrNothing(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignoreGangs=%v", ignore), func(t *testing.T) {
			args := &Args{IgnoreGangs: ignore}
			e := newEnv(t, envOptions{config: queueconfigtest.Gangs, args: args})
			a := taskGroupPods("sue", "a", 8, 8, "")
			b := taskGroupPods("bob", "b", 8, 8, "")
			c := taskGroupPods("sue", "c", 8, 8, "")
			for _, p := range append(a, b...) {
				if s := e.preEnqueue(p); !s.IsSuccess() {
					t.Fatalf("PreEnqueue(%s) = %v, want admitted", p.Name, s)
				}
			}
			held0, reserved0 := gangEvents(t, metrics.GangHeld), gangEvents(t, metrics.GangReserved)
			admitted := 0
			for _, p := range c {
				s := e.preEnqueue(p)
				if s.IsSuccess() {
					admitted++
					continue
				}
				if !ignore && !strings.Contains(s.Message(), "gang TaskGroups ns1/c waits until its minimum of 8 pods (cpu=8,pods=8) fits at once: queue root.g would exceed max: cpu 16+8 > 20") {
					t.Errorf("PreEnqueue(%s) = %v, want held for the gang's minimum", p.Name, s)
				}
			}
			if ignore {
				if admitted != 4 {
					t.Fatalf("ignoring gangs, %d of gang c's pods admitted, want 4 (a partial gang)", admitted)
				}
				return
			}
			if admitted != 0 {
				t.Fatalf("%d of gang c's pods admitted, want none", admitted)
			}
			if _, ok := e.pl.ugm.GangHeld("TaskGroups ns1/c"); ok {
				t.Fatal("room held for gang c")
			}
			if d := gangEvents(t, metrics.GangHeld) - held0; d != 1 {
				t.Errorf("userquota_gangs_total{event=held} grew by %v for one gang held, want 1", d)
			}
			// Gang a runs, then completes.
			for _, p := range a {
				e.mustSchedule(p)
				e.bind(p)
			}
			e.barrier()
			e.activator.reset()
			for _, p := range a {
				e.delete(p)
			}
			want := make([]string, 0, len(c))
			for _, p := range c {
				want = append(want, "ns1/"+p.Name)
			}
			sort.Strings(want)
			e.waitFor("gang c let in", func() bool { return len(e.activator.activated()) == len(c) })
			if diff := cmp.Diff(want, e.activator.activated()); diff != "" {
				t.Errorf("activated (-want,+got):\n%s", diff)
			}
			for _, p := range c {
				if s := e.pl.PreEnqueue(e.ctx, p); !s.IsSuccess() {
					t.Errorf("PreEnqueue(%s) after the let-in = %v", p.Name, s)
				}
				if !e.pl.ugm.Admitted(string(p.UID)) {
					t.Errorf("%s let in without room", p.Name)
				}
			}
			if d := gangEvents(t, metrics.GangReserved) - reserved0; d != 1 {
				t.Errorf("userquota_gangs_total{event=reserved} grew by %v for gang c, want 1", d)
			}
		})
	}
}

// TestGangHeldReasons: a gang that can never fit says so; a member whose
// gang's task groups no pod defined yet, or whose annotation is
// malformed, is held naming the annotation, and nothing is held for it.
func TestGangHeldReasons(t *testing.T) {
	e := newEnv(t, envOptions{config: queueconfigtest.Gangs})
	huge := taskGroupPods("sue", "huge", 1, 24, "")[0]
	orphan := taskGroupPods("sue", "orphan", 2, 2, "")[1]
	bad := taskGroupPods("sue", "bad", 1, 1, "")[0]
	bad.Annotations[gang.AnnotationTaskGroups] = `[{"name":"workers","minMember":1,`
	for _, tc := range []struct {
		pod  *v1.Pod
		want string
		kind hold.Kind
	}{
		{huge, "gang TaskGroups ns1/huge can never run: its minimum of 24 pods (cpu=24,pods=24) is more than a maximum on its path", hold.KindUser},
		{orphan, "gang TaskGroups ns1/orphan: annotation yunikorn.apache.org/task-groups: no pod of the application defines its task groups yet", hold.KindGang},
		{bad, "gang TaskGroups ns1/bad: annotation yunikorn.apache.org/task-groups: not a JSON list of task groups", hold.KindGang},
	} {
		s := e.preEnqueue(tc.pod)
		if s.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(s.Message(), tc.want) {
			t.Errorf("PreEnqueue(%s) = %v, want held: %q", tc.pod.Name, s, tc.want)
		}
		if p := e.pl.held.get(tc.pod.UID); p == nil || hold.KindOf(p.Reason) != tc.kind {
			t.Errorf("%s held as %v, want kind %s", tc.pod.Name, p, tc.kind)
		}
	}
	if n := e.pl.ugm.AdmittedCount(); n != 0 {
		t.Errorf("%d pods hold room", n)
	}
}

// TestGangTimeout: a reservation whose minimum is not all drawn by its
// timeout is released, and the room it held is let in to others; after a
// Soft timeout the gang's pods go on as ordinary pods, after a Hard one
// they are held as failed, room or not.
func TestGangTimeout(t *testing.T) {
	for _, style := range []gang.Style{gang.Soft, gang.Hard} {
		t.Run(string(style), func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			e := newEnv(t, envOptions{config: queueconfigtest.Gangs, clock: clk})
			// 4 of 6 pods exist; the minimum is 6, reserved by the first.
			pods := taskGroupPods("sue", "t", 4, 6, "placeholderTimeoutInSeconds=60 gangSchedulingStyle="+string(style))
			for _, p := range pods {
				if s := e.preEnqueue(p); !s.IsSuccess() {
					t.Fatalf("PreEnqueue(%s) = %v", p.Name, s)
				}
			}
			if held, _ := e.pl.ugm.GangHeld("TaskGroups ns1/t"); held.String() != "cpu=2,pods=2" {
				t.Fatalf("gang holds %s, want the 2 pods not yet drawn", held)
			}
			// Others fill the queue; the last one waits for the gang's 2.
			other := userPod("other", "bob", "", "root.g", "14")
			waits := userPod("waits", "carl", "", "root.g", "2")
			if s := e.preEnqueue(other); !s.IsSuccess() {
				t.Fatalf("PreEnqueue(other) = %v", s)
			}
			if s := e.preEnqueue(waits); s.IsSuccess() {
				t.Fatal("a pod took the gang's reserved room")
			}
			e.barrier()
			e.activator.reset()
			event := map[gang.Style]string{gang.Soft: metrics.GangTimedOut, gang.Hard: metrics.GangFailed}[style]
			before := gangEvents(t, event)
			clk.Step(61 * time.Second)
			e.waitFor("the gang's room let in", func() bool { return len(e.activator.activated()) > 0 })
			if diff := cmp.Diff([]string{"ns1/waits"}, e.activator.activated()); diff != "" {
				t.Errorf("activated (-want,+got):\n%s", diff)
			}
			if _, ok := e.pl.ugm.GangHeld("TaskGroups ns1/t"); ok {
				t.Error("the reservation outlived its timeout")
			}
			if d := gangEvents(t, event) - before; d != 1 {
				t.Errorf("userquota_gangs_total{event=%s} grew by %v, want 1", event, d)
			}
			// Room for the gang's fifth pod, alone.
			e.pl.ugm.Unadmit(string(other.UID))
			late := taskGroupPods("sue", "t", 5, 6, "")[4]
			s := e.preEnqueue(late)
			if style == gang.Soft && !s.IsSuccess() {
				t.Errorf("after a Soft timeout PreEnqueue(late) = %v, want admitted as an ordinary pod", s)
			}
			if style == gang.Hard && !strings.Contains(s.Message(), "gang TaskGroups ns1/t failed: its minimum did not run within 1m0s (gangSchedulingStyle=Hard)") {
				t.Errorf("after a Hard timeout PreEnqueue(late) = %v, want failed", s)
			}
		})
	}
}

// TestGangFoundRunning: a gang whose pods run already (a restart finds
// them bound) reserves only the rest of its minimum; one that runs its
// minimum reserves nothing and its pods are ordinary pods.
func TestGangFoundRunning(t *testing.T) {
	e := newEnv(t, envOptions{config: queueconfigtest.Gangs})
	pods := taskGroupPods("sue", "r", 5, 4, "")
	for _, p := range pods[:3] {
		e.bind(p)
	}
	e.barrier()
	// The fourth defines nothing itself: the minimum comes from the first,
	// which runs; put the definition on the fourth as a driver restarted.
	fourth := pods[3]
	fourth.Annotations[gang.AnnotationTaskGroups] = pods[0].Annotations[gang.AnnotationTaskGroups]
	if s := e.preEnqueue(fourth); !s.IsSuccess() {
		t.Fatalf("PreEnqueue(fourth) = %v", s)
	}
	if held, ok := e.pl.ugm.GangHeld("TaskGroups ns1/r"); !ok || !held.IsZero() {
		t.Fatalf("gang holds %v (%v), want a reservation of the one pod missing, drawn", held, ok)
	}
	e.mustSchedule(fourth)
	e.bind(fourth)
	e.barrier()
	// Its minimum runs: a fifth pod is an ordinary pod, and a restarted
	// plugin (a new gang book) reserves nothing for it.
	e.pl.gangs = newGangBook(e.pl.gangs.clock)
	fifth := pods[4]
	fifth.Annotations[gang.AnnotationTaskGroups] = pods[0].Annotations[gang.AnnotationTaskGroups]
	if s := e.preEnqueue(fifth); !s.IsSuccess() {
		t.Fatalf("PreEnqueue(fifth) = %v", s)
	}
	if _, ok := e.pl.ugm.GangHeld("TaskGroups ns1/r"); ok {
		t.Error("a gang that runs its minimum holds a reservation")
	}
}

// TestGangDeletedWhole: a reserved gang whose pods are all deleted
// before its minimum runs leaves nothing behind: the reservation goes at
// once (not at its timeout) and its room is let in; the book forgets the
// gang.
func TestGangDeletedWhole(t *testing.T) {
	e := newEnv(t, envOptions{config: queueconfigtest.Gangs})
	pods := taskGroupPods("sue", "d", 2, 8, "")
	for _, p := range pods {
		if s := e.preEnqueue(p); !s.IsSuccess() {
			t.Fatalf("PreEnqueue(%s) = %v", p.Name, s)
		}
	}
	other := userPod("other", "bob", "", "root.g", "16")
	if s := e.preEnqueue(other); s.IsSuccess() {
		t.Fatal("a pod took the gang's reserved room")
	}
	e.barrier()
	e.activator.reset()
	for _, p := range pods {
		e.delete(p)
	}
	e.waitFor("the gang's room let in", func() bool { return len(e.activator.activated()) > 0 })
	if diff := cmp.Diff([]string{"ns1/other"}, e.activator.activated()); diff != "" {
		t.Errorf("activated (-want,+got):\n%s", diff)
	}
	if _, ok := e.pl.ugm.GangHeld("TaskGroups ns1/d"); ok {
		t.Error("the reservation outlived its gang's pods")
	}
	if gangs, pods := e.pl.gangs.size(); gangs != 0 || pods != 0 {
		t.Errorf("the gang book kept %d gangs, %d pods", gangs, pods)
	}
}

// TestGangHardTimeoutStatus: a pod of a Hard gang still pending when the
// gang's reservation times out short of its minimum (here a member asking
// more than its task group's minResource, whose rest did not fit the
// full queue) is held as failed by the timeout itself, though the
// release's let-in never reaches it (a pod ahead of it on the same limit
// is refused first): its status says PodScheduled=False/QuotaHeld and
// QuotaAdmitted=False/GangLimit with the failure, with one QuotaHeld
// Warning event for it, and a retry writes nothing more.
func TestGangHardTimeoutStatus(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	e := newEnv(t, envOptions{config: queueconfigtest.Gangs, clock: clk})
	// The status writer's events, as it makes them: the fake API server
	// sets no resourceVersion, so events/v1 folds a pod's second QuotaHeld
	// event into the first one's series, keeping the first note (a real
	// API server's status patch changes the pod's resourceVersion, part of
	// the event's key). Set before any pod is held (the writer reads it
	// after the queue hands it a pod).
	e.pl.status.recorder = e.recorder
	// 4 of 6 pods draw; the reservation holds the other 2 cpu.
	pods := taskGroupPods("sue", "h", 5, 6, "placeholderTimeoutInSeconds=60 gangSchedulingStyle=Hard")
	for _, p := range pods[:4] {
		if s := e.preEnqueue(p); !s.IsSuccess() {
			t.Fatalf("PreEnqueue(%s) = %v", p.Name, s)
		}
	}
	// bob fills root.g: 4 drawn + 2 reserved + 14 = 20.
	if s := e.preEnqueue(userPod("other", "bob", "", "root.g", "14")); !s.IsSuccess() {
		t.Fatalf("PreEnqueue(other) = %v", s)
	}
	// The fifth asks 3 cpu: 2 drawn on the reservation, the third does
	// not fit. It stays held waiting for the gang.
	big := pods[4]
	big.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("3")
	if s := e.preEnqueue(big); s.IsSuccess() || !strings.Contains(s.Message(), "queue root.g would exceed max") {
		t.Fatalf("PreEnqueue(%s) = %v, want held by the queue's max", big.Name, s)
	}
	// carl waits on the same limit, ahead of it (priority), for as much.
	ahead := podOf("ahead").Annotation("userquota.io/user-info", `{"user":"carl"}`).
		Label("userquota.io/queue", "root.g").Req(cpu("3")).Priority(10).Obj()
	if s := e.preEnqueue(ahead); s.IsSuccess() {
		t.Fatalf("PreEnqueue(ahead) = %v, want held", s)
	}
	heldEvents := func() int {
		n := 0
		for _, ev := range e.recorder.list(ReasonQuotaHeld) {
			if ev.Regarding == "*v1.Pod ns1/"+big.Name {
				n++
			}
		}
		return n
	}
	// The event follows the status write: the writer emits it only if no
	// newer status is wanted by then, so the clock moves on only after it.
	e.waitFor("the fifth pod's status and event to say the queue holds it", func() bool {
		c := e.condition(big.Name, ConditionQuotaAdmitted)
		return c != nil && c.Reason == "QueueLimit" && heldEvents() == 1
	})
	failed := "gang TaskGroups ns1/h failed: its minimum did not run within 1m0s (gangSchedulingStyle=Hard)"
	before := gangEvents(t, metrics.GangFailed)
	clk.Step(61 * time.Second)
	e.waitFor("the fifth pod's status to say its gang failed", func() bool {
		c := e.condition(big.Name, ConditionQuotaAdmitted)
		return c != nil && c.Status == v1.ConditionFalse && c.Reason == "GangLimit" && strings.Contains(c.Message, failed)
	})
	if c := e.condition(big.Name, v1.PodScheduled); c == nil || c.Status != v1.ConditionFalse || c.Reason != ReasonQuotaHeld || !strings.Contains(c.Message, failed) {
		t.Errorf("PodScheduled = %+v, want False/%s with the failure", c, ReasonQuotaHeld)
	}
	if d := gangEvents(t, metrics.GangFailed) - before; d != 1 {
		t.Errorf("userquota_gangs_total{event=failed} grew by %v, want 1", d)
	}
	if p := e.pl.held.get(big.UID); p == nil || hold.KindOf(p.Reason) != hold.KindGang {
		t.Errorf("%s held as %v, want kind Gang", big.Name, p)
	}
	failedEvents := func() int {
		n := 0
		for _, ev := range e.recorder.list(ReasonQuotaHeld) {
			if ev.Regarding == "*v1.Pod ns1/"+big.Name && ev.Type == v1.EventTypeWarning && strings.Contains(ev.Note, "Held by quota (Gang limit): "+failed) {
				n++
			}
		}
		return n
	}
	e.waitFor("one QuotaHeld event saying the gang failed", func() bool { return failedEvents() == 1 })
	// A retry is held for the same reason: nothing more is written. A
	// later pod's write, after it in the writer's queue, shows the writer
	// got past it.
	if s := e.pl.PreEnqueue(e.ctx, big); !strings.Contains(s.Message(), failed) {
		t.Errorf("PreEnqueue(%s) after the timeout = %v, want failed", big.Name, s)
	}
	e.preEnqueue(userPod("marker", "dan", "", "root.g", "17")) // over the user limit: held
	e.waitFor("the marker's status", func() bool { return e.condition("marker", ConditionQuotaAdmitted) != nil })
	if n := failedEvents(); n != 1 {
		t.Errorf("%d QuotaHeld events saying the gang failed, want 1", n)
	}
	if n := e.statusWrites(big.Name); n != 2 {
		t.Errorf("%d status writes for %s, want 2: the queue's hold, then the failure", n, big.Name)
	}
	if n := heldEvents(); n != 2 {
		t.Errorf("%d QuotaHeld events for %s, want 2: the queue's, then the failure", n, big.Name)
	}
}
