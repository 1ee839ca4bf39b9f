package userquota

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/ugm"
)

// policyConfig: root.on preempts as usual, root.off never, root.slow after
// one second (each guaranteed 1 cpu, so their pods pass the quota check);
// a and b share the rest of 8 cpu (guaranteed 2 each).
var policyConfig = queueconfigtest.Root(`
properties: {quota.sharing: elastic}
queues:
- name: on
  resources: {guaranteed: {vcore: 1}}
- name: off
  resources: {guaranteed: {vcore: 1}}
  properties: {preemption.policy: disabled}
- name: slow
  resources: {guaranteed: {vcore: 1}}
  properties: {preemption.delay: 1s}
- name: a
  resources: {guaranteed: {vcore: 2}, max: {vcore: 8}}
- name: b
  resources: {guaranteed: {vcore: 2}, max: {vcore: 8}}
`)

// TestPostFilterEligibility: which pods may preempt at all, and what the
// pod's status says when it may not.
func TestPostFilterEligibility(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	e := newEnv(t, envOptions{config: policyConfig, objects: []runtime.Object{readyNode(testNode, "8")}, clock: clk})
	e.waitFor("the first share table", func() bool { return e.pl.ugm.Shares() != nil })
	postFilter := func(pod *v1.Pod) statusOf {
		t.Helper()
		e.pending(pod)
		state, _ := e.preFilter(pod)
		_, s := e.pl.PostFilter(e.ctx, state, pod, framework.NewDefaultNodeToStatus())
		return summary(s)
	}

	never := userPod("never", "ann", "", "root.on", "1")
	never.Spec.PreemptionPolicy = ptrTo(v1.PreemptNever)
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want statusOf
	}{
		{"queue policy disabled", userPod("off", "ann", "", "root.off", "1"),
			statusOf{fwk.Unschedulable, "preemption: not eligible: preemption.policy of queue root.off is disabled"}},
		{"refused by quota", userPod("over", "ann", "", "root.a", "9"),
			statusOf{fwk.Unschedulable, "preemption: not eligible: the pod is over a quota limit"}},
		{"preemptionPolicy Never", never,
			statusOf{fwk.Unschedulable, "preemption: not eligible due to preemptionPolicy=Never."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := postFilter(tc.pod); got != tc.want {
				t.Errorf("PostFilter = %+v, want %+v", got, tc.want)
			}
		})
	}

	t.Run("preemption delay", func(t *testing.T) {
		pod := userPod("slow", "ann", "", "root.slow", "1")
		want := statusOf{fwk.Unschedulable, "preemption: not eligible yet: queue root.slow sets preemption.delay 1s (1s left)"}
		if got := postFilter(pod); got != want {
			t.Fatalf("PostFilter = %+v, want %+v", got, want)
		}
		activated := func() bool {
			for _, k := range e.activator.activated() {
				if k == "ns1/slow" {
					return true
				}
			}
			return false
		}
		clk.Step(time.Second - time.Millisecond)
		if activated() {
			t.Fatal("activated before its delay was over")
		}
		clk.Step(time.Millisecond)
		e.waitFor("the pod to be activated when its delay is over", func() bool {
			for _, k := range e.activator.activated() {
				if k == "ns1/slow" {
					return true
				}
			}
			return false
		})
		state, _ := e.preFilter(pod)
		_, s := e.pl.PostFilter(e.ctx, state, pod, framework.NewDefaultNodeToStatus())
		if strings.Contains(s.Message(), "not eligible") {
			t.Errorf("after the delay: %v", s)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }

// borrowed sets the scene of a reclaim under policyConfig on one node of
// 8 cpu: b runs 6 cpu (it borrowed), a 2, and a's pending pod of 1 cpu,
// returned, fits a's share (grown to 3 by its demand) but not root's.
func borrowed(e *env) *v1.Pod {
	e.t.Helper()
	e.waitFor("the first share table", func() bool { return e.pl.ugm.Shares() != nil })
	for i, q := range []string{"root.b", "root.b", "root.b", "root.a"} {
		e.bind(userPod("run-"+string(rune('0'+i)), "u", "", q, "2"))
	}
	pending := userPod("a-more", "ann", "", "root.a", "1")
	e.create(pending)
	// 8 cpu: a 2 (guaranteed) + 1 (its demand), b 2 + 3; b holds 6.
	e.waitFor("a's share to grow to 3", func() bool { return runtimeCPU(e.pl, "root.a") == 3000 })
	return pending
}

// TestPreFilterReclaimable: a pod that fits its queue's share but not its
// parent's, because another queue borrowed, is refused as Unschedulable
// (not Unresolvable) with what it needs in the cycle state, so that the
// PostFilter may take the room back; a pod over its own queue's share is
// refused as before.
func TestPreFilterReclaimable(t *testing.T) {
	e := newEnv(t, envOptions{config: policyConfig, objects: []runtime.Object{readyNode(testNode, "8")}})
	pending := borrowed(e)
	state, s := e.preFilter(pending)
	want := statusOf{fwk.Unschedulable, "queue root is at its share: cpu 8+1 > 8 (guaranteed 8, nothing lent by other queues)"}
	if got := summary(s); got != want {
		t.Fatalf("PreFilter = %+v, want %+v", got, want)
	}
	ps, err := getPreFilterState(state)
	if err != nil || !reflect.DeepEqual(ps.blockedQueues(), []string{"root"}) {
		t.Fatalf("cycle state = %+v, %v; want the pod's request with root blocked", ps, err)
	}

	over := userPod("a-big", "ann", "", "root.a", "2")
	e.create(over)
	if got := summary(func() *fwk.Status { _, s := e.preFilter(over); return s }()); got.Code != fwk.UnschedulableAndUnresolvable ||
		!strings.HasPrefix(got.Message, "queue root.a is at its share") {
		t.Errorf("over its own share: %+v", got)
	}
}

// TestBlockedActivatedOnRelease: a pod refused for room lent out is not
// held, so no let-in moves it. The scheduler's hint queues it on the
// delete of a pod of ours, but that event may come before this plugin
// released the pod's charge, and a decision in between refuses it again
// (TestReclaimBeyondGuaranteed lost a pod there): the release itself
// activates it.
func TestBlockedActivatedOnRelease(t *testing.T) {
	e := newEnv(t, envOptions{config: policyConfig, objects: []runtime.Object{readyNode(testNode, "8")}})
	pending := borrowed(e)
	want := pending.Namespace + "/" + pending.Name
	// A share recompute still on its way (the setup's pods; debounced by
	// sharesDebounce) counts as a free too and activates the pod once: decide it
	// again until a decision stays unactivated for twice that, so that only
	// the release can activate it.
	decide := func() {
		e.activator.reset()
		if _, s := e.preFilter(pending); s.Code() != fwk.Unschedulable {
			t.Fatalf("PreFilter = %v, want Unschedulable (root at its share)", s)
		}
	}
	decide()
	err := wait.PollUntilContextTimeout(e.ctx, 2*sharesDebounce, 10*time.Second, false, func(context.Context) (bool, error) {
		if slices.Contains(e.activator.activated(), want) {
			decide()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("every decision was activated before the release: %v", err)
	}
	e.delete(userPod("run-0", "u", "", "root.b", "2"))
	e.waitFor("the blocked pod activated by the release", func() bool {
		return slices.Contains(e.activator.activated(), want)
	})
}

// TestActivateBlockedOnce: a blocked pod is activated by the first free
// counted after its decision, once; a later decision records it again.
func TestActivateBlockedOnce(t *testing.T) {
	a := &recordingActivator{}
	b := newReclaimBook(clock.RealClock{}, a.Activate)
	logger := klog.Background()
	pod := userPod("p", "ann", "", "root.a", "1")
	key := pod.Namespace + "/" + pod.Name
	b.addBlocked(pod, 3)
	for _, step := range []struct {
		now  uint64
		want int
	}{{3, 0}, {4, 1}, {5, 1}} {
		b.activateBlocked(logger, step.now)
		if got := len(a.callsSoFar()); got != step.want {
			t.Errorf("after a free at %d: %d activations %v, want %d", step.now, got, a.callsSoFar(), step.want)
		}
	}
	b.addBlocked(pod, 5)
	b.forget(pod.UID)
	b.activateBlocked(logger, 6)
	if got := a.activated(); len(got) != 1 || got[0] != key {
		t.Errorf("activated %v, want %s once (a bound or deleted pod is forgotten)", got, key)
	}
}

// TestNonPreemptibleLabel: the label is read into the request.
func TestNonPreemptibleLabel(t *testing.T) {
	for _, tc := range []struct {
		value string
		np    bool
	}{{"false", true}, {"False", true}, {" FALSE ", true}, {"true", false}, {"", false}, {"no", false}} {
		pod := userPod("p", "ann", "", "root.a", "1")
		if tc.value != "" {
			pod.Labels[podmeta.LabelPreemptible] = tc.value
		}
		if got := !podPreemptible(pod); got != tc.np {
			t.Errorf("label %q: non-preemptible %v, want %v", tc.value, got, tc.np)
		}
	}
}

// fakeCandidate is a preemption candidate on testNode with the given victims.
type fakeCandidate struct{ victims []*v1.Pod }

func (c fakeCandidate) Victims() *extenderv1.Victims { return &extenderv1.Victims{Pods: c.victims} }
func (c fakeCandidate) Name() string                 { return testNode }

// TestPreemptPodOnce: a victim already preempted, picked again from a
// snapshot that does not show its deletion yet (the informer lags under
// load), is not deleted, reported or counted a second time.
func TestPreemptPodOnce(t *testing.T) {
	e := newEnv(t, envOptions{config: policyConfig, objects: []runtime.Object{readyNode(testNode, "8")}})
	victim := e.bind(userPod("victim", "bob", "", "root.b", "1"))
	e.waitFor("the victim to be charged", func() bool { _, ok := e.pl.ledger.Get(string(victim.UID)); return ok })
	preemptor := userPod("preemptor", "ann", "", "root.a", "1")
	c := fakeCandidate{victims: []*v1.Pod{victim}}
	before := len(e.recorder.list(ReasonPreempted))
	if err := e.pl.preemptPod(e.ctx, c, preemptor, victim, Name); err != nil {
		t.Fatalf("first preemption: %v", err)
	}
	if got := len(e.recorder.list(ReasonPreempted)) - before; got != 1 {
		t.Fatalf("%d Preempted events after the first preemption, want 1", got)
	}
	// The fake clientset deletes at once, where a real API server keeps a
	// bound pod terminating for its grace period: put it back, still
	// leaving as far as the plugin knows.
	e.waitFor("the victim to be released", func() bool { _, ok := e.pl.ledger.Get(string(victim.UID)); return !ok })
	e.bind(victim)
	e.pl.reclaim.markLeaving(victim.UID, ugm.Request{Queue: "root.b"})
	if err := e.pl.preemptPod(e.ctx, c, preemptor, victim, Name); err != nil {
		t.Fatalf("second preemption: %v", err)
	}
	if got := len(e.recorder.list(ReasonPreempted)) - before; got != 1 {
		t.Errorf("%d Preempted events after preempting the same pod twice, want 1", got)
	}
	if _, err := e.cs.CoreV1().Pods(victim.Namespace).Get(e.ctx, victim.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the victim was deleted a second time: %v", err)
	}
}
