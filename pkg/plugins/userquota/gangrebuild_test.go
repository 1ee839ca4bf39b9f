package userquota

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// TestGangRebuild: a replica that starts finds a gang's
// pods running, fewer than its minimum, and reserves what the minimum
// still needs, within the gang's timeout counted from its first binding;
// a gang that runs its minimum, one past its timeout or one being
// deleted gets nothing. The pods to come draw on it; another pod of the
// user finds the room taken.
func TestGangRebuild(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	for _, tc := range []struct {
		name    string
		running int           // gang a's pods found running (minimum 8)
		bound   time.Duration // how long ago they were bound
		params  string
		leaving bool
		// reserved is what the rebuild holds for gang a, in cpu ("": none).
		reserved string
		// next is PreEnqueue's answer for a pod of gang a still to come
		// ("": admitted).
		next string
	}{
		{name: "part running", running: 3, bound: time.Minute, reserved: "cpu=5,pods=5"},
		{name: "its minimum runs", running: 8, bound: time.Minute},
		{name: "past its timeout, Soft", running: 3, bound: 20 * time.Minute},
		{name: "past its timeout, Hard", running: 3, bound: 20 * time.Minute, params: "gangSchedulingStyle=Hard",
			next: "gang TaskGroups ns1/a failed: its minimum did not run within 15m0s"},
		{name: "within a short timeout", running: 3, bound: time.Minute, params: "placeholderTimeoutInSeconds=120", reserved: "cpu=5,pods=5"},
		{name: "being deleted", running: 3, bound: time.Minute, leaving: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := taskGroupPods("sue", "a", 9, 8, tc.params)
			var objs []runtime.Object
			for _, p := range pods[:tc.running] {
				p := p.DeepCopy()
				p.Spec.NodeName = testNode
				p.Status.Phase = v1.PodRunning
				p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-tc.bound))}}
				if tc.leaving && p.Name == "a-1" {
					p.DeletionTimestamp = &metav1.Time{Time: now}
					p.Finalizers = []string{"example.com/hold"}
				}
				objs = append(objs, p)
			}
			c := testingclock.NewFakeClock(now)
			e := newEnv(t, envOptions{config: queueconfigtest.Gangs, objects: objs, clock: c})
			// newEnv returns after start-up, which rebuilt the gangs.
			held, ok := e.pl.ugm.GangHeld("TaskGroups ns1/a")
			if got := map[bool]string{true: held.String()}[ok]; got != tc.reserved {
				t.Fatalf("reserved for gang a: %q, want %q", got, tc.reserved)
			}
			if tc.reserved != "" {
				// sue runs 3 cpu; 5 more are held for her gang: a pod of
				// 9 cpu would fit her 16 without the reservation.
				other := userPod("other", "sue", "", "root.g", "9")
				if s := e.preEnqueue(other); s.IsSuccess() || !strings.Contains(s.Message(), "cpu 8+9 > 16") {
					t.Errorf("PreEnqueue(a pod of 9 cpu) = %v, want held: 3 running and 5 reserved", s)
				}
			}
			next := pods[tc.running]
			s := e.preEnqueue(next)
			switch {
			case tc.next == "" && !s.IsSuccess():
				t.Errorf("PreEnqueue(%s) = %v, want admitted", next.Name, s)
			case tc.next != "" && !strings.Contains(s.Message(), tc.next):
				t.Errorf("PreEnqueue(%s) = %v, want held: %s", next.Name, s, tc.next)
			}
		})
	}
}

// TestGangRebuildWaitsForWorkloads: start-up rebuilds a Workload gang
// found part-running only once the Workload informer has seen every
// Workload, however late its list comes after the pods': 2 of the gang's
// 4 members run, and the other 2 are reserved. (PodGroups are waited for
// in New already.) Without the wait, the rebuild finds the Workload "not
// found" and reserves nothing.
func TestGangRebuildWaitsForWorkloads(t *testing.T) {
	tc := gangObjectCases[1]
	o := tc.options(tc.object("w", 4))
	pods := objectGangPods(tc.form, "sue", "w", 3)
	for _, p := range pods[:2] {
		p := p.DeepCopy()
		p.Spec.NodeName = testNode
		p.Status.Phase = v1.PodRunning
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}}
		o.objects = append(o.objects, p)
	}
	// The Workloads' list fails until released (the informer lists again
	// after a backoff; a reactor cannot block: the fake client holds its
	// lock while one runs).
	var released, listed atomic.Bool
	o.reactors = func(cs *fake.Clientset) {
		cs.PrependReactor("list", "workloads", func(clienttesting.Action) (bool, runtime.Object, error) {
			listed.Store(true)
			if !released.Load() {
				return true, nil, errors.New("not yet")
			}
			return false, nil, nil
		})
	}
	o.noStart = true
	e := newEnv(t, o)
	e.informers.Start(e.ctx.Done())
	e.waitFor("the plugin's pod handler to sync", e.pl.podsSynced)
	e.waitFor("the Workloads' list to be asked for", listed.Load)
	// The Workloads come once start-up is over, or after a second if it
	// waits for them (as it must).
	go func() {
		defer released.Store(true)
		deadline := time.After(time.Second)
		for !e.pl.held.isReady() {
			select {
			case <-deadline:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	e.waitFor("the plugin to decide pods (start-up over)", e.pl.held.isReady)
	key := gangKey(tc.form, "w")
	if held, ok := e.pl.ugm.GangHeld(key); !ok || held.String() != "cpu=2,pods=2" {
		t.Fatalf("reserved for gang %s: %v (%v), want cpu=2,pods=2: its 2 members not running", key, held, ok)
	}
	if s := e.preEnqueue(pods[2]); !s.IsSuccess() {
		t.Errorf("PreEnqueue(%s) = %v, want admitted on the reservation", pods[2].Name, s)
	}
}

// TestGangFoundRunningAfterStartUp: a replica whose informer first sees
// a gang's driver (the pod that defines its task groups) already bound,
// after start-up (a relist after a dropped watch: it never saw the
// driver pending), learns what the rebuild would have: the executor held
// because no pod defined the task groups is let in and decided as after
// a rebuild (drawing on the reservation of what the minimum still needs,
// held as failed past a Hard timeout, an ordinary pod past a Soft one).
// Members found running later trim the reservation to what the minimum
// still needs (they drew nothing on it).
func TestGangFoundRunningAfterStartUp(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	for _, tc := range []struct {
		name   string
		bound  time.Duration // how long ago the driver was bound
		params string
		// held is the executor's hold after the driver is found ("": let
		// in); reserved what the gang holds then ("": nothing).
		held, reserved string
	}{
		{name: "within its timeout", bound: time.Minute, reserved: "cpu=2,pods=2"},
		{name: "past its timeout, Soft", bound: 20 * time.Minute},
		{name: "past its timeout, Hard", bound: 20 * time.Minute, params: "gangSchedulingStyle=Hard",
			held: "gang TaskGroups ns1/s failed: its minimum did not run within 15m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testingclock.NewFakeClock(now)
			e := newEnv(t, envOptions{config: queueconfigtest.Gangs, clock: c})
			pods := taskGroupPods("sue", "s", 4, 4, tc.params)
			driver, exec := pods[0], pods[1]
			orphan := "no pod of the application defines its task groups yet"
			if s := e.preEnqueue(exec); s.IsSuccess() || !strings.Contains(s.Message(), orphan) {
				t.Fatalf("PreEnqueue(%s) = %v, want held: %s", exec.Name, s, orphan)
			}
			e.barrier()
			e.activator.reset()
			// The driver appears bound.
			d := driver.DeepCopy()
			d.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-tc.bound))}}
			e.bind(d)
			e.barrier()
			if tc.held == "" {
				e.waitFor("the executor let in", func() bool { return contains(e.activator.activated(), "ns1/"+exec.Name) })
				if !e.pl.ugm.Admitted(string(exec.UID)) {
					t.Errorf("%s let in without room", exec.Name)
				}
			} else {
				e.waitFor("the executor held as failed", func() bool {
					p := e.pl.held.get(exec.UID)
					return p != nil && strings.Contains(p.Reason.Error(), tc.held)
				})
				if got := e.activator.activated(); len(got) != 0 {
					t.Errorf("activated %v, want none", got)
				}
			}
			held, ok := e.pl.ugm.GangHeld("TaskGroups ns1/s")
			if got := map[bool]string{true: held.String()}[ok]; got != tc.reserved {
				t.Fatalf("reserved for gang s: %q, want %q", got, tc.reserved)
			}
			if tc.reserved == "" {
				return
			}
			// A second executor is found running too: 2 of 4 run and 1 is
			// admitted, so 1 stays reserved, and the room let go is others'.
			e.bind(pods[2])
			e.barrier()
			if held, _ := e.pl.ugm.GangHeld("TaskGroups ns1/s"); held.String() != "cpu=1,pods=1" {
				t.Errorf("after a member found running the gang holds %s, want cpu=1,pods=1", held)
			}
			// sue: 2 running, 1 admitted, 1 reserved: 12 more fit her 16.
			if s := e.preEnqueue(userPod("other", "sue", "", "root.g", "12")); !s.IsSuccess() {
				t.Errorf("PreEnqueue(a pod of 12 cpu) = %v, want admitted", s)
			}
		})
	}
}
