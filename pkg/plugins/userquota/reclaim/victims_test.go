package reclaim

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
)

// cpuMem builds a vector of millicores and GiB.
func cpuMem(milli, gib int64) resources.Vector {
	var v resources.Vector
	if milli > 0 {
		v.Set(resources.Intern("cpu"), milli)
	}
	if gib > 0 {
		v.Set(resources.Intern("memory"), gib<<30)
	}
	return v
}

// use is one elastic queue for a test: usage and runtime share (cpu in
// millicores, memory in GiB; a runtime of -1 leaves the resource unbounded).
type use struct {
	cpu, mem      int64
	rtCPU, rtMem  int64
	guaranteedCPU int64
}

func testReclaimState(queue string, priority int32, fences []string, reclaim bool, queues map[string]use) *State {
	rs := &State{queue: queue, priority: priority, reclaim: reclaim, queues: map[string]*queueUse{}}
	fenceOf := func(q string) string {
		for p := q; p != ""; p = queueconfig.ParentPath(p) {
			for _, f := range fences {
				if f == p {
					return p
				}
			}
		}
		return ""
	}
	rs.fenceOf = fenceOf
	rs.fence = fenceOf(queue)
	for path, u := range queues {
		rt := map[string]int64{}
		if u.rtCPU >= 0 {
			rt["cpu"] = u.rtCPU
		}
		if u.rtMem >= 0 {
			rt["memory"] = u.rtMem << 30
		}
		s := &shares.Share{Path: path, Runtime: resources.NewLimit(rt), Guaranteed: cpuMem(u.guaranteedCPU, 0), Configured: cpuMem(u.guaranteedCPU, 0)}
		q := &queueUse{usage: cpuMem(u.cpu, u.mem), share: s}
		q.over = overBy(q.usage, s)
		rs.queues[path] = q
	}
	return rs
}

// pod is a test victim: name, queue, cpu (millicores), priority, age.
func vpod(name, queue string, milli int64, prio int32, startedMinutesAgo int) *Victim {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": strings.SplitN(name, "-", 2)[0]}}}
	return &Victim{Pod: pod, Key: "ns/" + name, Queue: queue, Res: cpuMem(milli, 1), Priority: prio,
		Start: time.Unix(1_000_000, 0).Add(-time.Duration(startedMinutesAgo) * time.Minute), Preemptible: true}
}

func names(vs []*Victim) string {
	var out []string
	for _, v := range vs {
		out = append(out, strings.TrimPrefix(v.Key, "ns/")+":"+v.reason)
	}
	return strings.Join(out, " ")
}

func TestChooseVictims(t *testing.T) {
	// Shares of a two-level tree; a and b are siblings under root, p.x
	// and p.y under p. Usage and runtime in millicores.
	flat := map[string]use{
		"root.a": {cpu: 0, rtCPU: 16000, rtMem: -1, guaranteedCPU: 16000},
		"root.b": {cpu: 24000, mem: 24, rtCPU: 16000, rtMem: -1, guaranteedCPU: 16000}, // over by 8 cpu
		"root.c": {cpu: 8000, mem: 8, rtCPU: 8000, rtMem: -1},                          // at its share
	}
	nonPreemptible := vpod("b-np", "root.b", 4000, -10, 1)
	nonPreemptible.Preemptible = false
	memOnly := vpod("b-mem", "root.b", 0, -10, 1)

	for _, tc := range []struct {
		name     string
		rs       *State
		pods     []*Victim
		pdbs     []*policy.PodDisruptionBudget
		want     string
		wantNone bool
	}{
		{
			name: "only queues over their share lose pods",
			rs:   testReclaimState("root.a", 0, nil, true, flat),
			pods: []*Victim{vpod("c-1", "root.c", 4000, -5, 1), vpod("b-1", "root.b", 4000, 0, 1)},
			want: "b-1:reclaim",
		},
		{
			name: "never below the share: b may lose 8 of its 24",
			rs:   testReclaimState("root.a", 0, nil, true, flat),
			pods: []*Victim{vpod("b-1", "root.b", 4000, 0, 4), vpod("b-2", "root.b", 4000, 0, 3), vpod("b-3", "root.b", 4000, 0, 2), vpod("b-4", "root.b", 4000, 0, 1)},
			want: "b-4:reclaim b-3:reclaim",
		},
		{
			name: "lowest priority first, then youngest; a higher priority preemptor is not needed",
			rs:   testReclaimState("root.a", -100, nil, true, flat),
			pods: []*Victim{vpod("b-old-high", "root.b", 2000, 10, 9), vpod("b-old-low", "root.b", 2000, 0, 9), vpod("b-new-high", "root.b", 2000, 10, 1), vpod("b-new-low", "root.b", 2000, 0, 1), vpod("b-mid", "root.b", 2000, 5, 5)},
			want: "b-new-low:reclaim b-old-low:reclaim b-mid:reclaim b-new-high:reclaim",
		},
		{
			name: "a pod too big for the allowance is skipped, smaller ones after it still fit",
			rs:   testReclaimState("root.a", 0, nil, true, flat),
			pods: []*Victim{vpod("b-big", "root.b", 12000, 0, 1), vpod("b-small", "root.b", 4000, 1, 1)},
			want: "b-small:reclaim",
		},
		{
			name: "non-preemptible pods and pods that hold nothing the queue is over in are skipped",
			rs:   testReclaimState("root.a", 0, nil, true, flat),
			pods: []*Victim{nonPreemptible, memOnly, vpod("b-1", "root.b", 4000, 0, 1)},
			want: "b-1:reclaim",
		},
		{
			name: "own queue: lower priority only, whatever the share",
			rs:   testReclaimState("root.c", 5, nil, true, flat),
			pods: []*Victim{vpod("c-low", "root.c", 4000, 0, 1), vpod("c-same", "root.c", 4000, 5, 1), vpod("c-high", "root.c", 4000, 9, 1)},
			want: "c-low:priority",
		},
		{
			name:     "own queue: a non-preemptible pod is never a victim",
			rs:       testReclaimState("root.b", 5, nil, true, flat),
			pods:     []*Victim{nonPreemptible},
			wantNone: true,
		},
		{
			name:     "without shares no pod of another queue is taken",
			rs:       testReclaimState("root.a", 100, nil, false, flat),
			pods:     []*Victim{vpod("b-1", "root.b", 4000, 0, 1)},
			wantNone: true,
		},
		{
			name: "hierarchy: only below the common queue, and every elastic queue there must be over",
			rs: testReclaimState("root.p.x", 0, nil, true, map[string]use{
				"root.p":   {cpu: 20000, rtCPU: 32000, rtMem: -1}, // within its share: irrelevant, the preemptor is in it too
				"root.p.x": {cpu: 0, rtCPU: 8000, rtMem: -1},
				"root.p.y": {cpu: 20000, rtCPU: 12000, rtMem: -1}, // over by 8
				"root.q":   {cpu: 12000, rtCPU: 0, rtMem: -1},     // over by 12
				"root.q.z": {cpu: 12000, rtCPU: 12000, rtMem: -1}, // at its share inside q
			}),
			pods: []*Victim{vpod("y-1", "root.p.y", 4000, 0, 1), vpod("z-1", "root.q.z", 4000, -1, 1)},
			want: "y-1:reclaim",
		},
		{
			name: "hierarchy: a parent over its share shares one allowance between its children",
			rs: testReclaimState("root.a", 0, nil, true, map[string]use{
				"root.a":   {cpu: 0, rtCPU: 16000, rtMem: -1},
				"root.b":   {cpu: 22000, rtCPU: 16000, rtMem: -1}, // over by 6
				"root.b.x": {cpu: 11000, rtCPU: 8000, rtMem: -1},  // over by 3
				"root.b.y": {cpu: 11000, rtCPU: 8000, rtMem: -1},  // over by 3
			}),
			pods: []*Victim{vpod("x-1", "root.b.x", 2000, 0, 1), vpod("x-2", "root.b.x", 2000, 0, 2), vpod("y-1", "root.b.y", 2000, 0, 3), vpod("y-2", "root.b.y", 2000, 0, 4)},
			want: "x-1:reclaim y-1:reclaim", // x-2 would take x below its share; y-2 would take b below its own
		},
		{
			name: "fence: a fenced pod takes no victim outside its fence",
			rs: testReclaimState("root.t.x", 0, []string{"root.t"}, true, map[string]use{
				"root.b":   {cpu: 24000, rtCPU: 16000, rtMem: -1},
				"root.t":   {cpu: 8000, rtCPU: 16000, rtMem: -1},
				"root.t.x": {cpu: 0, rtCPU: 8000, rtMem: -1},
				"root.t.y": {cpu: 8000, rtCPU: 4000, rtMem: -1},
			}),
			pods: []*Victim{vpod("b-1", "root.b", 4000, 0, 1), vpod("ty-1", "root.t.y", 4000, 0, 2)},
			want: "ty-1:reclaim",
		},
		{
			name: "fence: an outsider takes no victim inside a fence",
			rs: testReclaimState("root.a", 0, []string{"root.t"}, true, map[string]use{
				"root.a":   {cpu: 0, rtCPU: 16000, rtMem: -1},
				"root.b":   {cpu: 24000, rtCPU: 16000, rtMem: -1},
				"root.t":   {cpu: 24000, rtCPU: 16000, rtMem: -1},
				"root.t.y": {cpu: 24000, rtCPU: 16000, rtMem: -1},
			}),
			pods: []*Victim{vpod("b-1", "root.b", 4000, 0, 1), vpod("ty-1", "root.t.y", 4000, -5, 2)},
			want: "b-1:reclaim",
		},
		{
			name: "PDB: pods a budget protects go last, after more important ones",
			rs:   testReclaimState("root.a", 0, nil, true, flat),
			pods: []*Victim{vpod("db-1", "root.b", 4000, 0, 1), vpod("db-2", "root.b", 4000, 0, 2), vpod("web-1", "root.b", 4000, 10, 3)},
			pdbs: []*policy.PodDisruptionBudget{pdb("db", 1)},
			// One db pod may go (the budget allows 1): as kube-scheduler
			// counts, the allowance goes to the more important (older)
			// db-2, and db-1 would violate; within b's allowance of 8,
			// db-2 and web-1 are taken before db-1, although db-1 is the
			// least important.
			want: "db-2:reclaim web-1:reclaim",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.rs.choose(tc.pods, tc.pdbs)
			if tc.wantNone {
				if len(got) != 0 {
					t.Fatalf("chose %s, want none", names(got))
				}
				return
			}
			if names(got) != tc.want {
				t.Errorf("chose %q, want %q", names(got), tc.want)
			}
		})
	}
}

func TestOverBy(t *testing.T) {
	s := &shares.Share{Runtime: resources.NewLimit(map[string]int64{"cpu": 8000, "memory": 8 << 30})}
	got := overBy(cpuMem(10000, 4), s)
	if want := cpuMem(2000, 0); !reflect.DeepEqual(got.Map(), want.Map()) {
		t.Errorf("overBy = %v, want %v (memory is within the share)", got, want)
	}
	// A resource the share does not bound is never over.
	if got := overBy(cpuMem(10000, 4), &shares.Share{Runtime: resources.NewLimit(map[string]int64{"memory": 1 << 30})}); got.Get(resources.Intern("cpu")) != 0 {
		t.Errorf("unbounded cpu counted as over: %v", got)
	}
}

func TestQueuePaths(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"root.a", "root.b", "root"},
		{"root.p.x", "root.p.y", "root.p"},
		{"root.p.x", "root.p.x", "root.p.x"},
		{"root.p", "root.p.x", "root.p"},
		{"root.ab", "root.a", "root"},
	} {
		if got := CommonAncestor(tc.a, tc.b); got != tc.want {
			t.Errorf("CommonAncestor(%s, %s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
}

func pdb(app string, allowed int32) *policy.PodDisruptionBudget {
	return &policy.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: app},
		Spec:       policy.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status:     policy.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

// TestReclaimWithinParent: a pod that needs room in its parent's share
// (PreFilter refused it for root.p) takes only pods inside root.p, and the
// victims must give back enough there.
func TestReclaimWithinParent(t *testing.T) {
	rs := testReclaimState("root.p.x", 0, nil, true, map[string]use{
		"root.p":   {cpu: 16000, rtCPU: 16000, rtMem: -1},
		"root.p.x": {cpu: 4000, rtCPU: 8000, rtMem: -1},
		"root.p.y": {cpu: 12000, rtCPU: 8000, rtMem: -1}, // over by 4
		"root.q":   {cpu: 16000, rtCPU: 8000, rtMem: -1}, // over by 8, but outside root.p
	})
	rs.within = "root.p"
	rs.need = map[string]resources.Vector{"root.p": cpuMem(4000, 0)}
	pods := []*Victim{vpod("q-1", "root.q", 4000, -5, 1), vpod("y-1", "root.p.y", 2000, 0, 1), vpod("y-2", "root.p.y", 2000, 0, 2)}
	got := rs.choose(pods, nil)
	if names(got) != "y-1:reclaim y-2:reclaim" {
		t.Fatalf("chose %q, want only root.p.y's pods", names(got))
	}
	if q := rs.needUnmet(got, nil); q != "" {
		t.Errorf("needUnmet(both) = %q, want none", q)
	}
	if q := rs.needUnmet(got, func(v *Victim) bool { return v.Key == "ns/y-1" }); q != fmt.Sprintf(needUnmetFmt, "root.p") {
		t.Errorf("needUnmet(y-1 alone) = %q, want root.p (2 of the 4 needed)", q)
	}
}
