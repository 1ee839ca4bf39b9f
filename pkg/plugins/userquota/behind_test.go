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

// TestPodsBehindFollowTheStarvingPod: the pods held behind a starving pod
// are let in when it is, however it is let in and whichever limit holds
// it by then. Setup: ann runs 3 cpu in root.a and bob 2 in root.b; big
// (ann, 2 cpu, root.b) is held by ann's 4 and starves; small (ann, 1 cpu,
// root.a) fits, and is held behind big.
func TestPodsBehindFollowTheStarvingPod(t *testing.T) {
	for _, tc := range []struct {
		name string
		// free makes room for big and lets it in without a let-in
		// that tries small too.
		free func(e *env, ann, bob, big, small *v1.Pod)
	}{{
		// A new config holds big by root.b's max, after small was held
		// behind it by ann's limit (root.a's pods are tried first); bob's
		// release opens root.b, not ann's limit.
		name: "held again by another limit",
		free: func(e *env, _, bob, big, small *v1.Pod) {
			e.setConfig(behindConfig2)
			e.waitConfig(behindConfig2)
			e.barrier()
			if p := e.pl.held.get(big.UID); p == nil || !strings.HasPrefix(p.Reason.Error(), "queue root.b would exceed max") {
				t.Fatalf("big after the new config: %v, want held by root.b's max", p)
			}
			mustBeBehind(t, e, small, big)
			e.delete(bob)
		},
	}, {
		// The scheduling queue's PreEnqueue lets big in before the
		// release's let-in gets to it (here: the charge goes from the
		// ledger alone, and big is tried at the door).
		name: "let in at PreEnqueue",
		free: func(e *env, ann, _, big, small *v1.Pod) {
			mustBeBehind(t, e, small, big)
			if _, released, err := e.pl.ledger.Release(string(ann.UID)); !released || err != nil {
				t.Fatalf("releasing ann's running pod: %v %v", released, err)
			}
			if s := e.preEnqueue(big); !s.IsSuccess() {
				t.Fatalf("big at PreEnqueue after the release: %v", s)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			e := newEnv(t, envOptions{config: behindConfig, clock: clk})
			ann := userPod("ann-running", "ann", "", "a", "3")
			bob := userPod("bob-running", "bob", "", "b", "2")
			for i, p := range []*v1.Pod{ann, bob} {
				e.mustSchedule(p)
				b := e.bind(p)
				if i == 0 {
					ann = b
				} else {
					bob = b
				}
			}
			big := userPod("big", "ann", "", "b", "2")
			if s := e.preEnqueue(big); s.IsSuccess() {
				t.Fatal("big let in past ann's limit")
			}
			clk.Step(hold.DefaultStarvation + time.Second)
			small := userPod("small", "ann", "", "a", "1")
			if s := e.preEnqueue(small); s.IsSuccess() || !strings.Contains(s.Message(), "waiting behind pod ns1/big") {
				t.Fatalf("small = %v, want held behind big", s)
			}
			e.barrier()
			e.activator.reset()
			tc.free(e, ann, bob, big, small)
			e.waitFor("small to be let in", func() bool { return contains(e.activator.activated(), "ns1/small") })
		})
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
