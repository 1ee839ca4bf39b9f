package userquota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/userquota/userquota/pkg/podmeta"
)

func TestPreFilter(t *testing.T) {
	rs := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
	web := func(name, hash, cpuQty string) *v1.Pod {
		return podOf(name).Annotation(podmeta.AnnotationUserInfo, `{"user":"sue"}`).Label(podmeta.LabelQueue, "sandbox").
			Label("pod-template-hash", hash).OwnerReference("web-"+hash, rs).Req(cpu(cpuQty)).Obj()
	}
	tests := []struct {
		name string
		// charged are scheduled (PreFilter + Reserve) first, in order.
		charged []*v1.Pod
		pod     *v1.Pod
		want    statusOf
	}{
		{
			name: "fits every limit",
			pod:  userPod("p", "sue", "dev", "sandbox", "2"),
			want: statusOf{Code: fwk.Success},
		},
		{
			name:    "user limit",
			charged: []*v1.Pod{userPod("a", "sue", "", "sandbox", "1500m")},
			pod:     userPod("p", "sue", "", "root.sandbox", "1"),
			want:    statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `user "sue" would exceed maxresources in root.sandbox: cpu 1500m+1 > 2`},
		},
		{
			name:    "group limit",
			charged: []*v1.Pod{userPod("a", "ann", "dev", "sandbox", "3")},
			pod:     userPod("p", "bob", "dev", "sandbox", "500m"),
			want:    statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `group "dev" would exceed maxresources in root.sandbox: cpu 3+500m > 3`},
		},
		{
			name:    "queue max",
			charged: []*v1.Pod{userPod("a", "ann", "", "sandbox", "3"), userPod("b", "bob", "", "sandbox", "500m")},
			pod:     userPod("p", "carl", "", "sandbox", "1"),
			want:    statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `queue root.sandbox would exceed max: cpu 3500m+1 > 4`},
		},
		{
			name: "queue maxapplications",
			charged: []*v1.Pod{
				userPod("a", "ann", "", "sandbox", "100m"), userPod("b", "bob", "", "sandbox", "100m"), userPod("c", "carl", "", "sandbox", "100m"),
			},
			pod:  userPod("p", "dora", "", "sandbox", "100m"),
			want: statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `queue root.sandbox would exceed maxapplications: 3+1 > 3`},
		},
		{
			name: "a new ReplicaSet of the same Deployment is the same application",
			charged: []*v1.Pod{
				web("w1", "aaa", "100m"), userPod("b", "bob", "", "sandbox", "100m"), userPod("c", "carl", "", "sandbox", "100m"),
			},
			pod:  web("w2", "bbb", "100m"),
			want: statusOf{Code: fwk.Success},
		},
		{
			name: "another Deployment is a new application",
			charged: []*v1.Pod{
				web("w1", "aaa", "100m"), userPod("b", "bob", "", "sandbox", "100m"), userPod("c", "carl", "", "sandbox", "100m"),
			},
			pod: podOf("api").Annotation(podmeta.AnnotationUserInfo, `{"user":"sue"}`).Label(podmeta.LabelQueue, "sandbox").
				Label("pod-template-hash", "ccc").OwnerReference("api-ccc", rs).Req(cpu("100m")).Obj(),
			want: statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `queue root.sandbox would exceed maxapplications: 3+1 > 3`},
		},
		{
			name: "a queue that does not exist",
			pod:  userPod("p", "sue", "", "root.nope", "1"),
			want: statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `queue "root.nope" does not exist in the queue config`},
		},
		{
			name: "a leaf name that does not exist",
			pod:  userPod("p", "sue", "", "nope", "1"),
			want: statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `queue "nope" (from label userquota.io/queue) does not exist in the queue config`},
		},
		{
			name: "a parent queue",
			pod:  userPod("p", "sue", "", "parent", "1"),
			want: statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `queue "root.parent" is a parent queue; pods run only in leaf queues`},
		},
		{
			name: "a leaf under a parent",
			pod:  userPod("p", "sue", "", "leaf", "1"),
			want: statusOf{Code: fwk.Success},
		},
		{
			name: "malformed user info",
			pod:  podOf("p").Annotation(podmeta.AnnotationUserInfo, `sue`).Req(cpu("1")).Obj(),
			want: statusOf{Code: fwk.UnschedulableAndUnresolvable,
				Message: `annotation userquota.io/user-info is not valid user info JSON ({"user":"name","groups":[...]}): invalid character 's' looking for beginning of value`},
		},
		{
			name:    "an application held by another user",
			charged: []*v1.Pod{podOf("a").Annotation(podmeta.AnnotationUserInfo, `{"user":"sue"}`).Label(podmeta.LabelAppID, "shared").Req(cpu("1")).Obj()},
			pod:     podOf("p").Annotation(podmeta.AnnotationUserInfo, `{"user":"bob"}`).Label(podmeta.LabelAppID, "shared").Req(cpu("1")).Obj(),
			want: statusOf{Code: fwk.UnschedulableAndUnresolvable,
				Message: `application ns1/shared is already charged to user "sue" in queue root.default (this pod: user "bob", queue root.default)`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{config: sandboxConfig})
			for _, p := range tc.charged {
				e.mustSchedule(p)
			}
			before := snapshot(e.pl)
			state, s := e.preFilter(tc.pod)
			if diff := cmp.Diff(tc.want, summary(s)); diff != "" {
				t.Errorf("PreFilter status (-want,+got):\n%s", diff)
			}
			if !s.IsSuccess() && s.Plugin() != Name {
				t.Errorf("status plugin = %q, want %q", s.Plugin(), Name)
			}
			if _, err := getPreFilterState(state); s.IsSuccess() != (err == nil) {
				t.Errorf("PreFilter status %v, but the cycle state read gives %v", s, err)
			}
			// PreFilter checks and commits nothing.
			if diff := cmp.Diff(before, snapshot(e.pl)); diff != "" {
				t.Errorf("usage changed by PreFilter (-before,+after):\n%s", diff)
			}
			// No event of our own per refusal: the scheduler's
			// FailedScheduling carries the message.
			if evs := e.recorder.except(ReasonConfigApplied); len(evs) != 0 {
				t.Errorf("PreFilter raised events: %+v", evs)
			}
		})
	}
}

// TestReserveUnreserveRoundTrip: Reserve commits what PreFilter computed to
// the user, the group and every queue of the path; Unreserve takes back
// exactly that, to zero, once.
func TestReserveUnreserveRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want usage
	}{
		{
			name: "user and group in a leaf",
			pod:  userPod("p", "sue", "dev", "sandbox", "1500m"),
			want: usage{
				Users:  map[string]map[string]map[string]int64{"sue": {"root": {"cpu": 1500, "pods": 1}, "root.sandbox": {"cpu": 1500, "pods": 1}}},
				Groups: map[string]map[string]map[string]int64{"dev": {"root": {"cpu": 1500, "pods": 1}, "root.sandbox": {"cpu": 1500, "pods": 1}}},
				Queues: map[string]map[string]int64{"root": {"cpu": 1500, "pods": 1}, "root.sandbox": {"cpu": 1500, "pods": 1}},
				Apps:   map[string][]string{"sue": {"ns1/pod/uid-p"}},
				Pods:   []string{"uid-p"},
			},
		},
		{
			name: "a group with no limit is not tracked; a two-level path",
			pod: podOf("p").Annotation(podmeta.AnnotationUserInfo, `{"user":"bob","groups":["ops"]}`).Label(podmeta.LabelQueue, "root.parent.leaf").
				Req(map[v1.ResourceName]string{"cpu": "1", "memory": "1Gi"}).Obj(),
			want: usage{
				Users: map[string]map[string]map[string]int64{"bob": {
					"root":             {"cpu": 1000, "memory": 1 << 30, "pods": 1},
					"root.parent":      {"cpu": 1000, "memory": 1 << 30, "pods": 1},
					"root.parent.leaf": {"cpu": 1000, "memory": 1 << 30, "pods": 1},
				}},
				Groups: map[string]map[string]map[string]int64{},
				Queues: map[string]map[string]int64{
					"root":             {"cpu": 1000, "memory": 1 << 30, "pods": 1},
					"root.parent":      {"cpu": 1000, "memory": 1 << 30, "pods": 1},
					"root.parent.leaf": {"cpu": 1000, "memory": 1 << 30, "pods": 1},
				},
				Apps: map[string][]string{"bob": {"ns1/pod/uid-p"}},
				Pods: []string{"uid-p"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{config: sandboxConfig})
			state, s := e.preFilter(tc.pod)
			if !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			if s := e.reserve(state, tc.pod); !s.IsSuccess() {
				t.Fatalf("Reserve: %v", s)
			}
			if diff := cmp.Diff(tc.want, snapshot(e.pl)); diff != "" {
				t.Errorf("usage after Reserve (-want,+got):\n%s", diff)
			}
			e.unreserve(state, tc.pod)
			if diff := cmp.Diff(emptyUsage(), snapshot(e.pl)); diff != "" {
				t.Errorf("usage after Unreserve (-want,+got):\n%s", diff)
			}
			// The framework may call Unreserve again; nothing is left to give back.
			e.unreserve(state, tc.pod)
			if diff := cmp.Diff(emptyUsage(), snapshot(e.pl)); diff != "" {
				t.Errorf("usage after a second Unreserve (-want,+got):\n%s", diff)
			}
			// And the room is really free: the pod fits again.
			e.mustSchedule(tc.pod)
			if diff := cmp.Diff(tc.want, snapshot(e.pl)); diff != "" {
				t.Errorf("usage after scheduling again (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestUnreserveWithoutReserve: the framework calls Unreserve on every
// Reserve plugin when any later step fails, also when ours never committed
// in this cycle. A charge the cycle did not take must stay.
func TestUnreserveWithoutReserve(t *testing.T) {
	sueUsage := func(cpu int64) usage {
		return usage{
			Users:  map[string]map[string]map[string]int64{"sue": {"root": {"cpu": cpu, "pods": 1}, "root.sandbox": {"cpu": cpu, "pods": 1}}},
			Groups: map[string]map[string]map[string]int64{},
			Queues: map[string]map[string]int64{"root": {"cpu": cpu, "pods": 1}, "root.sandbox": {"cpu": cpu, "pods": 1}},
			Apps:   map[string][]string{"sue": {"ns1/pod/uid-p"}},
			Pods:   []string{"uid-p"},
		}
	}
	tests := []struct {
		name string
		// cycle runs the scheduling cycle of p up to the failure, on an
		// env where p is already bound and charged by the informer.
		cycle func(e *env, p *v1.Pod) fwk.CycleState
	}{
		{
			name: "PreFilter only (an earlier Reserve plugin failed)",
			cycle: func(e *env, p *v1.Pod) fwk.CycleState {
				state, s := e.preFilter(p)
				if !s.IsSuccess() {
					e.t.Fatalf("PreFilter: %v", s)
				}
				return state
			},
		},
		{
			name: "Reserve found the pod already charged by the informer",
			cycle: func(e *env, p *v1.Pod) fwk.CycleState {
				state, s := e.preFilter(p)
				if !s.IsSuccess() {
					e.t.Fatalf("PreFilter: %v", s)
				}
				if s := e.reserve(state, p); !s.IsSuccess() {
					e.t.Fatalf("Reserve: %v", s)
				}
				return state
			},
		},
		{
			name: "no PreFilter state at all",
			cycle: func(e *env, p *v1.Pod) fwk.CycleState {
				state, _ := e.preFilter(podOf("other").Obj())
				return state
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{config: sandboxConfig})
			p := userPod("p", "sue", "", "sandbox", "1")
			e.bind(p)
			e.waitFor("the informer to charge the bound pod", func() bool { _, ok := e.pl.ledger.Get("uid-p"); return ok })
			state := tc.cycle(e, p)
			e.unreserve(state, p)
			if diff := cmp.Diff(sueUsage(1000), snapshot(e.pl)); diff != "" {
				t.Errorf("usage after Unreserve (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestReserveRefusedAfterChange: two pods pass PreFilter against the same
// usage; the second Reserve finds the room taken and returns Unschedulable
// with ugm's reason. Its Unreserve then leaves the first pod's charge alone.
func TestReserveRefusedAfterChange(t *testing.T) {
	tests := []struct {
		name   string
		first  *v1.Pod
		second *v1.Pod
		want   statusOf
	}{
		{
			name:   "user limit",
			first:  userPod("a", "sue", "", "sandbox", "1500m"),
			second: userPod("b", "sue", "", "sandbox", "1"),
			want:   statusOf{Code: fwk.Unschedulable, Message: `user "sue" would exceed maxresources in root.sandbox: cpu 1500m+1 > 2`},
		},
		{
			name:   "group limit",
			first:  userPod("a", "ann", "dev", "sandbox", "2"),
			second: userPod("b", "bob", "dev", "sandbox", "2"),
			want:   statusOf{Code: fwk.Unschedulable, Message: `group "dev" would exceed maxresources in root.sandbox: cpu 2+2 > 3`},
		},
		{
			name:   "queue max",
			first:  userPod("a", "ann", "", "sandbox", "3"),
			second: userPod("b", "bob", "", "sandbox", "2"),
			want:   statusOf{Code: fwk.Unschedulable, Message: `queue root.sandbox would exceed max: cpu 3+2 > 4`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{config: sandboxConfig})
			e.pending(tc.second)
			s1, st1 := e.preFilter(tc.first)
			s2, st2 := e.preFilter(tc.second)
			if !st1.IsSuccess() || !st2.IsSuccess() {
				t.Fatalf("PreFilter: %v, %v; want both to pass", st1, st2)
			}
			if s := e.reserve(s1, tc.first); !s.IsSuccess() {
				t.Fatalf("Reserve of the first pod: %v", s)
			}
			want := snapshot(e.pl)
			if diff := cmp.Diff(tc.want, summary(e.reserve(s2, tc.second))); diff != "" {
				t.Errorf("Reserve of the second pod (-want,+got):\n%s", diff)
			}
			e.unreserve(s2, tc.second)
			if diff := cmp.Diff(want, snapshot(e.pl)); diff != "" {
				t.Errorf("usage (-want,+got):\n%s", diff)
			}
			// The refused pod is remembered: releasing the first pod
			// activates it.
			e.unreserve(s1, tc.first)
			if diff := cmp.Diff([]string{"ns1/b"}, e.activator.activated()); diff != "" {
				t.Errorf("activated after the first pod's Unreserve (-want,+got):\n%s", diff)
			}
		})
	}
}
