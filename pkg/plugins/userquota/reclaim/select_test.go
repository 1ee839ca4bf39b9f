package reclaim

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	policy "k8s.io/api/policy/v1"

	"github.com/userquota/userquota/pkg/resources"
)

// fakeNode is a node of cap millicores holding pods: the preemptor fits
// when the pods on it leave room for need. It records what was done.
type fakeNode struct {
	cap, need int64
	on        map[string]int64 // pod key -> cpu
	log       []string
	failOn    string // Add or Remove of this pod fails
}

func newFakeNode(cap, need int64, pods ...*Victim) *fakeNode {
	n := &fakeNode{cap: cap, need: need, on: map[string]int64{}}
	for _, p := range pods {
		n.on[p.Key] = p.Res.Get(resources.Intern("cpu"))
	}
	return n
}

func (n *fakeNode) Remove(v *Victim) error {
	if v.Key == n.failOn {
		return errors.New("remove failed")
	}
	n.log = append(n.log, "-"+strings.TrimPrefix(v.Key, "ns/"))
	delete(n.on, v.Key)
	return nil
}

func (n *fakeNode) Add(v *Victim) error {
	n.log = append(n.log, "+"+strings.TrimPrefix(v.Key, "ns/"))
	n.on[v.Key] = v.Res.Get(resources.Intern("cpu"))
	return nil
}

func (n *fakeNode) Fits() bool {
	used := int64(0)
	for _, c := range n.on {
		used += c
	}
	return used+n.need <= n.cap
}

// other is a pod on the node that is no victim (a queue within its share).
func other(name string, milli int64) *Victim { return vpod(name, "root.c", milli, 0, 1) }

func TestSelectOnNode(t *testing.T) {
	// b is over its share by 8 cpu, c at its share.
	flat := map[string]use{
		"root.a": {cpu: 0, rtCPU: 16000, rtMem: -1, guaranteedCPU: 16000},
		"root.b": {cpu: 24000, rtCPU: 16000, rtMem: -1, guaranteedCPU: 16000},
		"root.c": {cpu: 8000, rtCPU: 8000, rtMem: -1},
	}
	leaving := vpod("b-leaving", "root.b", 2000, 0, 1)
	leaving.Leaving = true
	nested := testReclaimState("root.p.x", 0, nil, true, map[string]use{
		"root.p":   {cpu: 16000, rtCPU: 16000, rtMem: -1},
		"root.p.x": {cpu: 4000, rtCPU: 8000, rtMem: -1},
		"root.p.y": {cpu: 12000, rtCPU: 8000, rtMem: -1}, // over by 4
	})
	nested.within = "root.p"
	// Two pods of b, one under a budget that allows no disruption.
	dbAndWeb := func() []*Victim {
		return []*Victim{vpod("db-1", "root.b", 2000, 0, 1), vpod("web-1", "root.b", 2000, 0, 2)}
	}
	noDisruption := []*policy.PodDisruptionBudget{pdb("db", 0)}
	nested.need = map[string]resources.Vector{"root.p": cpuMem(4000, 0)}

	for _, tc := range []struct {
		name      string
		state     *State
		pods      []*Victim // on the node; the first `others` are no victims
		pdbs      []*policy.PodDisruptionBudget
		cap, need int64
		want      string // victims, most important first
		wantPDB   int
		wantWhy   string // Unresolvable
		notFit    bool
		wantLog   string // what was taken off and given back, when checked
	}{
		{
			name:  "the most important are given back while the pod still fits",
			state: testReclaimState("root.a", 0, nil, true, flat),
			pods:  []*Victim{vpod("b-low", "root.b", 2000, 0, 1), vpod("b-high", "root.b", 2000, 5, 1), vpod("b-mid", "root.b", 4000, 1, 1)},
			cap:   8000, need: 2000,
			want:    "b-low:reclaim",
			wantLog: "-b-low -b-mid -b-high +b-high +b-mid +b-low -b-low",
		},
		{
			name:  "a pod that would take its queue below its share stays",
			state: testReclaimState("root.a", 0, nil, true, flat),
			pods:  []*Victim{vpod("b-1", "root.b", 6000, 0, 1), vpod("b-2", "root.b", 6000, 0, 2)},
			cap:   12000, need: 12000,
			notFit: true, // only one of them may go: 6 of the 12 needed
		},
		{name: "a budget's pod is given back first, and counted when it must go", state: testReclaimState("root.a", 0, nil, true, flat),
			pods: dbAndWeb(), pdbs: noDisruption, cap: 4000, need: 4000, want: "web-1:reclaim db-1:reclaim", wantPDB: 1},
		{name: "a budget's pod is spared when another makes room", state: testReclaimState("root.a", 0, nil, true, flat),
			pods: dbAndWeb(), pdbs: noDisruption, cap: 4000, need: 2000, want: "web-1:reclaim"},
		{
			name:  "a terminating pod's room is waited for rather than another evicted",
			state: testReclaimState("root.a", 0, nil, true, flat),
			pods:  []*Victim{vpod("b-1", "root.b", 2000, 0, 1), leaving},
			cap:   4000, need: 2000,
			want: "b-leaving:",
		},
		{
			name:    "no pod may be taken",
			state:   testReclaimState("root.a", 0, nil, true, flat),
			pods:    []*Victim{other("c-1", 4000)},
			cap:     4000,
			need:    2000,
			wantWhy: NoneEligible,
			wantLog: "",
		},
		{
			name:  "the node's filters refuse even with every eligible pod off",
			state: testReclaimState("root.a", 0, nil, true, flat),
			pods:  []*Victim{other("c-1", 3000), vpod("b-1", "root.b", 1000, 0, 1)},
			cap:   4000, need: 2000,
			notFit: true,
		},
		{
			name:    "the parent's share needs more than the node's pods free",
			state:   nested,
			pods:    []*Victim{vpod("y-1", "root.p.y", 2000, 0, 1)},
			cap:     100000,
			need:    1000,
			wantWhy: "queue root.p is at its share and the pods on the node do not free enough of it",
		},
		{
			name:  "the parent's share keeps victims the node would give back",
			state: nested,
			pods:  []*Victim{vpod("y-1", "root.p.y", 2000, 0, 1), vpod("y-2", "root.p.y", 2000, 0, 2)},
			cap:   100000, need: 1000,
			want: "y-2:reclaim y-1:reclaim",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := newFakeNode(tc.cap, tc.need, tc.pods...)
			got, err := tc.state.SelectOnNode(tc.pods, tc.pdbs, node)
			if err != nil {
				t.Fatal(err)
			}
			want := NodeResult{NumViolating: tc.wantPDB, Unresolvable: tc.wantWhy, NotFit: tc.notFit}
			gotSummary := fmt.Sprintf("%s|%d|%s|%v", names(got.Victims), got.NumViolating, got.Unresolvable, got.NotFit)
			wantSummary := fmt.Sprintf("%s|%d|%s|%v", tc.want, want.NumViolating, want.Unresolvable, want.NotFit)
			if diff := cmp.Diff(wantSummary, gotSummary); diff != "" {
				t.Errorf("victims|pdb violations|unresolvable|not fit (-want,+got):\n%s", diff)
			}
			if tc.wantLog != "" || tc.wantWhy == NoneEligible {
				if diff := cmp.Diff(tc.wantLog, strings.Join(node.log, " ")); diff != "" {
					t.Errorf("node operations (-want,+got):\n%s", diff)
				}
			}
		})
	}
}

// TestSelectOnNodeError: a failing dry-run step is the node's error, not a
// choice.
func TestSelectOnNodeError(t *testing.T) {
	s := testReclaimState("root.a", 0, nil, true, map[string]use{"root.b": {cpu: 4000, rtCPU: 0, rtMem: -1}})
	pods := []*Victim{vpod("b-1", "root.b", 2000, 0, 1)}
	node := newFakeNode(4000, 2000, pods...)
	node.failOn = "ns/b-1"
	if _, err := s.SelectOnNode(pods, nil, node); err == nil {
		t.Fatal("no error from a failing Remove")
	}
}
