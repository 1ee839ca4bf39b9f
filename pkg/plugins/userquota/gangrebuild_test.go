package userquota

import (
	"strings"
	"testing"
	"time"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	testingclock "k8s.io/utils/clock/testing"
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
