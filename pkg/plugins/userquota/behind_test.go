package userquota

import (
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// behindConfig: ann may run 4 cpu in all; root.a and root.b have no max.
var behindConfig = queueconfigtest.Root(`
limits:
- limit: ann
  users: [ann]
  maxresources: {vcore: 4}
queues:
- name: default
- name: a
- name: b
`)

// behindConfig2 lets ann run 8 cpu and caps root.b at 3.
var behindConfig2 = queueconfigtest.Root(`
limits:
- limit: ann
  users: [ann]
  maxresources: {vcore: 8}
queues:
- name: default
- name: a
- name: b
  resources: {max: {vcore: 3}}
`)

// TestStarvingPodLetInAtPreEnqueue: the pods held behind a starving pod
// are tried when it is let in at PreEnqueue, not only by a let-in: the
// scheduling queue's retry of it may reach it before the release's
// let-in does (here the charge goes from the ledger alone, and big is
// tried at the door).
func TestStarvingPodLetInAtPreEnqueue(t *testing.T) {
	e, ann, _, big, small := behindSetup(t)
	e.barrier()
	e.activator.reset()
	mustBeBehind(t, e, small, big)
	if _, released, err := e.pl.ledger.Release(string(ann.UID)); !released || err != nil {
		t.Fatalf("releasing ann's running pod: %v %v", released, err)
	}
	if s := e.preEnqueue(big); !s.IsSuccess() {
		t.Fatalf("big at PreEnqueue after the release: %v", s)
	}
	e.waitFor("small to be let in", func() bool { return contains(e.activator.activated(), "ns1/small") })
}

// behindSetup: ann runs 3 cpu in root.a and bob 2 in root.b (returned
// bound); big (ann, 2 cpu, root.b) is held by ann's 4 and starves; small
// (ann, 1 cpu, root.a) fits, and is held behind big.
func behindSetup(t *testing.T) (e *env, ann, bob, big, small *v1.Pod) {
	clk := testingclock.NewFakeClock(time.Now())
	e = newEnv(t, envOptions{config: behindConfig, clock: clk})
	ann = userPod("ann-running", "ann", "", "a", "3")
	bob = userPod("bob-running", "bob", "", "b", "2")
	e.mustSchedule(ann)
	ann = e.bind(ann)
	e.mustSchedule(bob)
	bob = e.bind(bob)
	big = userPod("big", "ann", "", "b", "2")
	if s := e.preEnqueue(big); s.IsSuccess() {
		t.Fatal("big let in past ann's limit")
	}
	clk.Step(hold.DefaultStarvation + time.Second)
	small = userPod("small", "ann", "", "a", "1")
	if s := e.preEnqueue(small); s.IsSuccess() || !strings.Contains(s.Message(), "waiting behind pod ns1/big") {
		t.Fatalf("small = %v, want held behind big", s)
	}
	return e, ann, bob, big, small
}

// TestReheldStarvingPodRetriesThoseBehind: a starving pod held again by a
// limit the pods behind it do not count against keeps no room from them:
// they are tried at once. After the new config big is held by root.b's
// max; small (root.a) goes in without any release.
func TestReheldStarvingPodRetriesThoseBehind(t *testing.T) {
	e, _, _, big, _ := behindSetup(t)
	e.barrier()
	e.activator.reset()
	e.setConfig(behindConfig2)
	e.waitFor("small to be let in", func() bool { return contains(e.activator.activated(), "ns1/small") })
	if p := e.pl.held.get(big.UID); p == nil || !strings.HasPrefix(p.Reason.Error(), "queue root.b would exceed max") {
		t.Errorf("big after the new config: %v, want held by root.b's max", p)
	}
}

// mustBeBehind fails t unless pod is held behind ahead.
func mustBeBehind(t *testing.T, e *env, pod, ahead *v1.Pod) {
	t.Helper()
	p := e.pl.held.get(pod.UID)
	var behind *hold.BehindError
	if p == nil || !errors.As(p.Reason, &behind) || behind.Pod.Key != string(ahead.UID) {
		t.Fatalf("%s held as %+v, want behind %s", pod.Name, p, ahead.Name)
	}
}

// scopedConfig: ann may run 2 cpu in root.b; root.a has no limit.
var scopedConfig = queueconfigtest.Root(`
queues:
- name: default
- name: a
- name: b
  limits:
  - limit: ann
    users: [ann]
    maxresources: {vcore: 2}
`)

// TestBarrierKeepsToItsLimitsQueue: a starving pod held by its user's
// limit on root.b keeps that room from the user's pods in root.b only;
// the user's pods in root.a take nothing from it and are not held.
func TestBarrierKeepsToItsLimitsQueue(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	e := newEnv(t, envOptions{config: scopedConfig, clock: clk})
	running := userPod("running", "ann", "", "b", "1")
	e.mustSchedule(running)
	e.bind(running)
	if s := e.preEnqueue(userPod("big", "ann", "", "b", "2")); s.IsSuccess() {
		t.Fatal("big let in past ann's limit on root.b")
	}
	clk.Step(hold.DefaultStarvation + time.Second)
	if s := e.preEnqueue(userPod("in-a", "ann", "", "a", "1")); !s.IsSuccess() {
		t.Errorf("ann's pod in root.a = %v, want let in", s)
	}
	if s := e.preEnqueue(userPod("in-b", "ann", "", "b", "1")); s.IsSuccess() || !strings.Contains(s.Message(), "waiting behind pod ns1/big") {
		t.Errorf("ann's pod in root.b = %v, want held behind big", s)
	}
}

// groupsConfig: group dev may run 4 cpu in all, every other group
// together (the cumulative group "*") 3.
var groupsConfig = queueconfigtest.Root(`
limits:
- limit: dev
  groups: [dev]
  maxresources: {vcore: 4}
- limit: others
  groups: ["*"]
  maxresources: {vcore: 3}
queues:
- name: default
- name: a
`)

// TestBarrierKeepsToItsGroup: a starving pod held by the cumulative group
// "*"'s limit keeps that room from pods tracked against "*" only. A member
// of dev is tracked against dev, even with another group that alone would
// go to "*": it takes nothing from "*"'s limit and is not held.
func TestBarrierKeepsToItsGroup(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	e := newEnv(t, envOptions{config: groupsConfig, clock: clk})
	running := userPod("running", "gil", "guests", "a", "2")
	e.mustSchedule(running)
	e.bind(running)
	if s := e.preEnqueue(userPod("big", "gus", "guests", "a", "2")); s.IsSuccess() {
		t.Fatal(`big let in past group "*"'s limit`)
	}
	clk.Step(hold.DefaultStarvation + time.Second)
	if s := e.preEnqueue(userPod("dev-pod", "dan", "dev,guests", "a", "1")); !s.IsSuccess() {
		t.Errorf("dev's pod = %v, want let in", s)
	}
	if s := e.preEnqueue(userPod("guest-pod", "gwen", "visitors", "a", "1")); s.IsSuccess() || !strings.Contains(s.Message(), "waiting behind pod ns1/big") {
		t.Errorf(`a pod tracked against "*" = %v, want held behind big`, s)
	}
}
