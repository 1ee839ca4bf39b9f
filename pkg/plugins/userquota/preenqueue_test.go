package userquota

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	apipod "k8s.io/kubernetes/pkg/api/v1/pod"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// statusWrites counts the status patches of pod name the plugin made.
func (e *env) statusWrites(name string) int {
	n := 0
	for _, a := range e.cs.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetSubresource() == "status" && p.GetName() == name {
			n++
		}
	}
	return n
}

// condition returns pod name's condition of type ct as the cluster has it.
func (e *env) condition(name string, ct v1.PodConditionType) *v1.PodCondition {
	p, err := e.cs.CoreV1().Pods("ns1").Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	_, c := apipod.GetPodCondition(&p.Status, ct)
	return c
}

// heldEvents returns the QuotaHeld events about pod name.
func (e *env) heldEvents(name string) []string {
	list, err := e.cs.EventsV1().Events("ns1").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Reason == ReasonQuotaHeld && ev.Regarding.Name == name {
			out = append(out, ev.Note)
		}
	}
	return out
}

// preEnqueue creates pod in the cluster (a pod in the scheduling queue
// exists) and runs PreEnqueue on it.
func (e *env) preEnqueue(pod *v1.Pod) *fwk.Status {
	e.t.Helper()
	e.pending(pod)
	return e.pl.PreEnqueue(e.ctx, pod)
}

// TestPreEnqueueHoldsAndLetsIn: pods pass PreEnqueue while their quota
// takes them, each with room held, so a burst passes only as far as the
// limit goes; the next is held, its status says so once (one patch, one
// event, not one per retry), and a release lets it in, in order, with a
// last write saying it was admitted.
func TestPreEnqueueHoldsAndLetsIn(t *testing.T) {
	e := newEnv(t, envOptions{config: sandboxConfig})
	p1 := userPod("p1", "sue", "", "sandbox", "1")
	p2 := userPod("p2", "sue", "", "sandbox", "1")
	p3 := userPod("p3", "sue", "", "sandbox", "1")
	for _, p := range []*v1.Pod{p1, p2} {
		if s := e.preEnqueue(p); !s.IsSuccess() {
			t.Fatalf("PreEnqueue(%s) = %v, want success", p.Name, s)
		}
		if !e.pl.ugm.Admitted(string(p.UID)) {
			t.Fatalf("%s passed without room held", p.Name)
		}
	}
	want := `user "sue" would exceed maxresources in root.sandbox: cpu 2+1 > 2 (2 of it admitted, not running yet)`
	if s := e.preEnqueue(p3); s.Code() != fwk.UnschedulableAndUnresolvable || s.Message() != want {
		t.Fatalf("PreEnqueue(p3) = %v, want held with %q", s, want)
	}
	e.waitFor("p3's status to say it is held", func() bool {
		c := e.condition("p3", ConditionQuotaAdmitted)
		return c != nil && c.Status == v1.ConditionFalse && c.Reason == "UserLimit" && c.Message == want
	})
	if c := e.condition("p3", v1.PodScheduled); c == nil || c.Status != v1.ConditionFalse || c.Reason != ReasonQuotaHeld || !strings.Contains(c.Message, want) {
		t.Errorf("PodScheduled = %+v, want False/%s with the refusal", c, ReasonQuotaHeld)
	}
	e.waitFor("one QuotaHeld event", func() bool { return len(e.heldEvents("p3")) == 1 })

	// Held again for the same limit (a retry): nothing more is written. A
	// later pod's write, after it in the writer's queue, shows the writer
	// got past p3's retry.
	if s := e.preEnqueue(p3); s.IsSuccess() {
		t.Fatal("p3 let in on a retry")
	}
	e.preEnqueue(userPod("marker", "carl", "", "parent", "1")) // a parent queue: held
	e.waitFor("the marker's status", func() bool { return e.condition("marker", ConditionQuotaAdmitted) != nil })
	if n := e.statusWrites("p3"); n != 1 {
		t.Errorf("%d status writes for p3, want 1 (written when what holds it changes, not per retry)", n)
	}
	if n := len(e.heldEvents("p3")); n != 1 {
		t.Errorf("%d QuotaHeld events for p3, want 1", n)
	}

	// p1 runs and ends: p3 is let in with room, and told so.
	e.mustSchedule(p1)
	if e.pl.ugm.Admitted(string(p1.UID)) {
		t.Error("p1 still holds room after Reserve committed it")
	}
	bound := e.update(p1, func(p *v1.Pod) { p.Spec.NodeName, p.Status.Phase = testNode, v1.PodRunning })
	e.barrier()
	e.activator.reset()
	e.delete(bound)
	e.waitFor("p3 to be let in", func() bool { return contains(e.activator.activated(), "ns1/p3") })
	if !e.pl.ugm.Admitted(string(p3.UID)) {
		t.Error("p3 let in without room")
	}
	if s := e.pl.PreEnqueue(e.ctx, p3); !s.IsSuccess() {
		t.Errorf("PreEnqueue(p3) after the let-in = %v", s)
	}
	e.waitFor("p3's status to say it was admitted", func() bool {
		c := e.condition("p3", ConditionQuotaAdmitted)
		return c != nil && c.Status == v1.ConditionTrue && c.Reason == ReasonAdmitted
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestPreEnqueuePassesWithoutRoom: a scheduling-gated pod is not ours to
// count until ungated, and a pod only reclaim can make room for goes
// through the cycle (to PostFilter); neither holds room.
func TestPreEnqueuePassesWithoutRoom(t *testing.T) {
	e := newEnv(t, envOptions{config: policyConfig, objects: []runtime.Object{readyNode(testNode, "8")}})
	gated := userPod("gated", "ann", "", "root.a", "100")
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
	if s := e.preEnqueue(gated); !s.IsSuccess() || e.pl.ugm.Admitted(string(gated.UID)) {
		t.Errorf("gated pod: %v, admitted %v; want success without room", s, e.pl.ugm.Admitted(string(gated.UID)))
	}

	// b borrowed; a's pod fits a's share, not root's.
	pending := borrowed(e)
	if s := e.preEnqueue(pending); !s.IsSuccess() || e.pl.ugm.Admitted(string(pending.UID)) {
		t.Errorf("reclaimable pod: %v, admitted %v; want success without room", s, e.pl.ugm.Admitted(string(pending.UID)))
	}
	if e.pl.held.get(pending.UID) != nil {
		t.Error("reclaimable pod held")
	}
}

// TestPreEnqueueAtStartUp: until the running pods are accounted no pod is
// decided (it would be on partial usage); they wait, and are decided once
// the pod handler synced: on whole usage, so a pod the running pods leave
// no room for stays held (its status says why) and is not activated.
func TestPreEnqueueAtStartUp(t *testing.T) {
	running := e0Bound(userPod("running", "sue", "", "sandbox", "2"))
	early := userPod("early", "sue", "", "sandbox", "1")
	fits := userPod("fits", "bob", "", "sandbox", "1")
	// PreEnqueue's wait off: each pod is held as it comes (as after the
	// wait, TestPreEnqueueWaitsForStartUp).
	e := newEnv(t, envOptions{config: sandboxConfig, objects: []runtime.Object{running, early, fits}, noStart: true,
		args: &Args{StartUpWait: "0s"}})
	for _, pod := range []*v1.Pod{early, fits} {
		if s := e.pl.PreEnqueue(e.ctx, pod); s.IsSuccess() || !strings.Contains(s.Message(), "start-up") {
			t.Fatalf("PreEnqueue(%s) before sync = %v, want a start-up wait", pod.Name, s)
		}
	}
	e.start()
	e.waitFor("the pod that fits activated", func() bool { return contains(e.activator.activated(), "ns1/fits") })
	// Decided on whole usage: sue's running pod fills her limit.
	if contains(e.activator.activated(), "ns1/early") {
		t.Error("early pod activated past sue's limit")
	}
	if h := e.pl.held.get(early.UID); h == nil || hold.KindOf(h.Reason) != hold.KindUser {
		t.Errorf("early pod held as %v, want held by sue's limit", h)
	}
	if !e.pl.ugm.Admitted(string(fits.UID)) {
		t.Error("the pod that fits was activated without room")
	}
	if s := e.pl.PreEnqueue(e.ctx, early); s.IsSuccess() {
		t.Error("early pod let in past sue's limit")
	}
}

// TestPreEnqueueWaitsForStartUp: at start-up PreEnqueue waits until the
// start-up let-in has decided the pods the pod handler saw waiting, then
// decides as after start-up: the pod that fits goes to the active queue
// at its first PreEnqueue (never held, so nothing activates it), the pod
// over sue's limit is held by that limit, not for start-up. So only pods
// that stay held enter the scheduling queue's unschedulable pods.
func TestPreEnqueueWaitsForStartUp(t *testing.T) {
	running := e0Bound(userPod("running", "sue", "", "sandbox", "2"))
	early := userPod("early", "sue", "", "sandbox", "1")
	fits := userPod("fits", "bob", "", "sandbox", "1")
	e := newEnv(t, envOptions{config: sandboxConfig, objects: []runtime.Object{running, early, fits}, noStart: true})
	got := make(chan *fwk.Status, 2)
	go func() {
		for _, pod := range []*v1.Pod{fits, early} {
			got <- e.pl.PreEnqueue(e.ctx, pod)
		}
	}()
	select {
	case s := <-got:
		t.Fatalf("PreEnqueue decided (%v) before the running pods were accounted", s)
	case <-time.After(100 * time.Millisecond):
	}
	e.start()
	for _, want := range []struct {
		pod  *v1.Pod
		pass bool
	}{{fits, true}, {early, false}} {
		var s *fwk.Status
		select {
		case s = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("PreEnqueue(%s) still waiting 10s after start-up", want.pod.Name)
		}
		if s.IsSuccess() != want.pass || strings.Contains(s.Message(), "start-up") {
			t.Errorf("PreEnqueue(%s) = %v, want success %v, not a start-up wait", want.pod.Name, s, want.pass)
		}
	}
	if !e.pl.ugm.Admitted(string(fits.UID)) {
		t.Error("the pod that fits passed PreEnqueue without room")
	}
	if h := e.pl.held.get(early.UID); h == nil || hold.KindOf(h.Reason) != hold.KindUser {
		t.Errorf("early pod held as %v, want held by sue's limit", h)
	}
	if a := e.activator.activated(); len(a) != 0 {
		t.Errorf("activated %v: no pod was among the queue's unschedulable pods", a)
	}
}

// TestStartUpLetsInInOrder: the pods that waited for start-up are decided
// in let-in order (priority, then age), not in whatever order they came:
// with room for 3 of sue's 8 pods (one application), the 2 of highest
// priority are let in, then the oldest.
func TestStartUpLetsInInOrder(t *testing.T) {
	pods, objs := sueTraining()
	e := newEnv(t, envOptions{config: sandboxConfig, objects: objs, noStart: true, args: &Args{StartUpWait: "0s"}})
	for _, pod := range pods {
		e.pl.PreEnqueue(e.ctx, pod)
	}
	e.start()
	want := []string{"ns1/p2", "ns1/p5", "ns1/p7"}
	e.waitFor("three pods activated", func() bool { return len(e.activator.activated()) >= len(want) })
	got := e.activator.activated()
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("activated %v, want %v (the two of priority 10, then the oldest)", got, want)
	}
	for _, pod := range pods {
		in := contains(want, pod.Namespace+"/"+pod.Name)
		if held := e.pl.held.get(pod.UID) != nil; held == in {
			t.Errorf("%s: held %v, let in %v", pod.Name, held, in)
		}
	}
}

// sueTraining is sue's 8 pending pods of one application, p0 to p7 (p7
// the oldest, p2 and p5 of priority 10), and the objects of a cluster
// with them and a running pod of hers that leaves room for 3 of them.
func sueTraining() ([]*v1.Pod, []runtime.Object) {
	var pods []*v1.Pod
	var objs []runtime.Object
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 8 {
		pod := userPod(fmt.Sprintf("p%d", i), "sue", "", "sandbox", "500m")
		pod.Labels[podmeta.LabelAppID] = "train"
		// Younger by name: p7 is the oldest. p2 and p5 outrank the rest.
		pod.CreationTimestamp = metav1.NewTime(base.Add(time.Duration(8-i) * time.Minute))
		if i == 2 || i == 5 {
			pod.Spec.Priority = ptr.To[int32](10)
		}
		pods = append(pods, pod)
		objs = append(objs, pod)
	}
	running := e0Bound(userPod("running", "sue", "", "sandbox", "500m"))
	running.Labels[podmeta.LabelAppID] = "train"
	return pods, append(objs, running)
}

// TestStartUpWaitKeepsLetInOrder: with PreEnqueue waiting at start-up
// the pods that waited are still decided in let-in order (the start-up
// let-in takes them from the pod handler), not in the order PreEnqueue is
// asked about them: of sue's 8 pods, asked about p0 first, the 2 of
// highest priority and the oldest pass, the others are held by her limit.
func TestStartUpWaitKeepsLetInOrder(t *testing.T) {
	pods, objs := sueTraining()
	e := newEnv(t, envOptions{config: sandboxConfig, objects: objs, noStart: true})
	passed := make(chan []string, 1)
	go func() {
		var in []string
		for _, pod := range pods {
			if e.pl.PreEnqueue(e.ctx, pod).IsSuccess() {
				in = append(in, pod.Name)
			}
		}
		passed <- in
	}()
	e.start()
	var got []string
	select {
	case got = <-passed:
	case <-time.After(10 * time.Second):
		t.Fatal("PreEnqueue still waiting 10s after start-up")
	}
	if want := []string{"p2", "p5", "p7"}; !reflect.DeepEqual(got, want) {
		t.Errorf("passed PreEnqueue: %v, want %v (the two of priority 10, then the oldest)", got, want)
	}
	if a := e.activator.activated(); len(a) != 0 {
		t.Errorf("activated %v: no pod was among the queue's unschedulable pods", a)
	}
}

// TestStartUpActivatesInArrivalOrder: the pods that waited for start-up
// are decided in let-in order but sent to the active queue one a call, in
// the order they reached PreEnqueue (the queue's own, which keeps its heap
// cheap to pop: holds.send), an updated pod in its first place.
func TestStartUpActivatesInArrivalOrder(t *testing.T) {
	var pods []*v1.Pod
	var objs []runtime.Object
	for i := range 5 {
		pod := userPod(fmt.Sprintf("p%d", i), fmt.Sprintf("u%d", i), "", "default", "500m")
		// The later a pod arrives, the earlier it is let in.
		pod.Spec.Priority = ptr.To(int32(i))
		pods = append(pods, pod)
		objs = append(objs, pod)
	}
	e := newEnv(t, envOptions{config: sandboxConfig, objects: objs, noStart: true, args: &Args{StartUpWait: "0s"}})
	for _, i := range []int{3, 0, 4, 1, 2} {
		e.pl.PreEnqueue(e.ctx, pods[i])
	}
	updated := pods[3].DeepCopy()
	updated.Labels["updated"] = "yes"
	e.pl.PreEnqueue(e.ctx, updated)
	e.start()
	e.waitFor("five pods activated", func() bool { return len(e.activator.activated()) >= 5 })
	want := [][]string{{"ns1/p3"}, {"ns1/p0"}, {"ns1/p4"}, {"ns1/p1"}, {"ns1/p2"}}
	if diff := cmp.Diff(want, e.activator.callsSoFar()); diff != "" {
		t.Errorf("Activate calls (-want,+got):\n%s", diff)
	}
}

// TestStartingKeepsOnePlace: a pod seen again while the running pods are
// accounted (an update) is waiting once, as its latest object, in the
// place it first arrived at; after start-up nothing waits.
func TestStartingKeepsOnePlace(t *testing.T) {
	h := newHolds(testingclock.NewFakeClock(time.Now()), nil, 0)
	a, b := userPod("a", "sue", "", "default", "1"), userPod("b", "bob", "", "default", "1")
	a2 := a.DeepCopy()
	for _, p := range []*v1.Pod{a, b, a2} {
		if !h.starting(p) {
			t.Fatalf("%s not kept waiting before start-up", p.Name)
		}
	}
	got, _ := h.started()
	if len(got) != 2 || got[0] != a2 || got[1] != b {
		var names []string
		for _, p := range got {
			names = append(names, p.Name)
		}
		t.Errorf("started() = %v (a updated: %v), want [a b], a as its update", names, len(got) > 0 && got[0] == a2)
	}
	if h.starting(b) {
		t.Error("a pod kept waiting after start-up")
	}
}

// e0Bound is pod as bound to testNode and running, to seed a cluster.
func e0Bound(pod *v1.Pod) *v1.Pod {
	pod.Spec.NodeName = testNode
	pod.Status.Phase = v1.PodRunning
	return pod
}

// queueConfig: root.q runs at most 4 cpu.
var queueConfig = queueconfigtest.Root(`
queues:
- name: default
- name: q
  resources: {max: {vcore: 4}}
`)

// TestStarvationKeepsRoom: a big held pod does not block smaller ones
// while it has waited less than starvationWait; after that the room it
// needs is kept: smaller pods are held behind it, and once a release makes
// room it goes first, then those behind it as far as room goes.
func TestStarvationKeepsRoom(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	e := newEnv(t, envOptions{config: queueConfig, clock: clk})
	ann := func(name, cpu string) *v1.Pod { return userPod(name, "ann", "", "q", cpu) }
	running := ann("running", "2")
	e.mustSchedule(running)
	running = e.bind(running)
	big := ann("big", "3")
	if s := e.preEnqueue(big); s.IsSuccess() {
		t.Fatal("big let in past the queue max")
	}
	if s := e.preEnqueue(ann("small-1", "1")); !s.IsSuccess() {
		t.Fatalf("a small pod is blocked by the big one before the starvation wait: %v", s)
	}
	clk.Step(2*time.Minute + time.Second)
	small2 := ann("small-2", "1")
	s := e.preEnqueue(small2)
	if s.IsSuccess() || !strings.Contains(s.Message(), "waiting behind pod ns1/big") {
		t.Fatalf("after the starvation wait a small pod = %v, want held behind big", s)
	}
	e.waitFor("small-2's status to say Behind", func() bool {
		c := e.condition("small-2", ConditionQuotaAdmitted)
		return c != nil && c.Reason == "BehindLimit"
	})

	// 2 cpu free: big (3) fits with small-1's 1; small-2 then does not.
	e.barrier()
	e.activator.reset()
	e.delete(running)
	e.waitFor("big to be let in", func() bool { return contains(e.activator.activated(), "ns1/big") })
	if contains(e.activator.activated(), "ns1/small-2") {
		t.Error("small-2 let in past the queue max")
	}
	e.waitFor("small-2 held by the queue now", func() bool {
		p := e.pl.held.get(small2.UID)
		return p != nil && strings.HasPrefix(p.Reason.Error(), "queue root.q would exceed max")
	})
}

// TestLetInOrder: room for one pod goes to the held pod first in its
// queue's order: fifo lets in the oldest application's, fair the
// application using least.
func TestLetInOrder(t *testing.T) {
	for _, tc := range []struct {
		policy, want string
	}{
		{"fifo", "ns1/old-app"},
		{"fair", "ns1/light-app"},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			cfg := queueConfig + "      properties: {application.sort.policy: " + tc.policy + "}\n"
			e := newEnv(t, envOptions{config: cfg})
			// heavy runs 2 of the 4 cpu, light 1; a third app fills it.
			app := func(name, app, cpu string) *v1.Pod {
				p := userPod(name, "ann", "", "q", cpu)
				p.Labels["userquota.io/app-id"] = app
				return p
			}
			var filler *v1.Pod
			for _, p := range []*v1.Pod{app("heavy-1", "heavy", "2"), app("light-1", "light", "1"), app("filler", "filler", "1")} {
				e.mustSchedule(p)
				b := e.bind(p)
				if p.Name == "filler" {
					filler = b
				}
			}
			// Held: an older pod of heavy, a younger one of light.
			old := app("old-app", "heavy", "1")
			old.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Hour))
			young := app("light-app", "light", "1")
			young.CreationTimestamp = metav1.NewTime(time.Now())
			for _, p := range []*v1.Pod{young, old} {
				if s := e.preEnqueue(p); s.IsSuccess() {
					t.Fatalf("%s let in past the max", p.Name)
				}
			}
			e.barrier()
			e.activator.reset()
			e.delete(filler)
			e.waitFor("a let-in", func() bool { return len(e.activator.activated()) > 0 })
			e.barrier()
			if diff := cmp.Diff([]string{tc.want}, e.activator.activated()); diff != "" {
				t.Errorf("let in (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestAuditDropsLeakedRoom: room held for a pod whose delete event never
// came is dropped by two audits in a row.
func TestAuditDropsLeakedRoom(t *testing.T) {
	e := newEnv(t, envOptions{config: sandboxConfig})
	p := userPod("p", "sue", "", "sandbox", "1")
	if s := e.preEnqueue(p); !s.IsSuccess() {
		t.Fatal(s)
	}
	stored, err := e.informers.Core().V1().Pods().Lister().Pods("ns1").Get("p")
	if err != nil {
		t.Fatal(err)
	}
	e.storeDelete(stored)
	logger := klog.FromContext(context.Background())
	e.pl.audit.audit(logger)
	if !e.pl.ugm.Admitted(string(p.UID)) {
		t.Fatal("room dropped on the first audit (the event may be on its way)")
	}
	e.pl.audit.audit(logger)
	if e.pl.ugm.Admitted(string(p.UID)) {
		t.Error("room of a pod the informer no longer has kept after two audits")
	}
}

// TestPreEnqueueStaleCopy: the scheduling queue's handler may run seconds
// behind ours (a follower resumed after a freeze) and put a pod through
// PreEnqueue from a copy older than what our handler saw: a pod bound
// (charged, so its own charge takes it over the limit) or deleted
// meanwhile. It is refused, but not booked: a hold kept for it would stay
// until its next event, a starvation barrier to the pods behind it.
func TestPreEnqueueStaleCopy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		otherCPU string                    // sue's other running pod
		after    func(e *env, pod *v1.Pod) // what the cluster did before the stale PreEnqueue
	}{
		{"bound meanwhile", "1", func(e *env, pod *v1.Pod) { e.mustSchedule(pod); e.bind(pod) }},
		{"deleted meanwhile", "2", func(e *env, pod *v1.Pod) { e.delete(pod) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{config: sandboxConfig})
			other := userPod("other", "sue", "", "sandbox", tc.otherCPU)
			e.mustSchedule(other)
			e.bind(other)
			pod := userPod("stale", "sue", "", "sandbox", "1")
			e.pending(pod)
			stale := pod.DeepCopy()
			tc.after(e, pod)
			e.barrier()
			if s := e.pl.PreEnqueue(e.ctx, stale); s.IsSuccess() {
				t.Fatalf("PreEnqueue of the stale copy = %v, want refused (sue is at her limit)", s)
			}
			if p := e.pl.held.get(pod.UID); p != nil {
				t.Errorf("the stale copy is booked as held (%v): it would bar the pods behind it", p.Reason)
			}
		})
	}
}
