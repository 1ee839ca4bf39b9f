package ugm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
)

// softTreeJSON: R (hard root, 10 cpu) holds S (soft, 6) with L1 and L2
// (soft, 2 each) and H (hard, 1), and M (hard, 4) with X (soft, 1) and Y
// (hard, 2).
const softTreeJSON = `{"kind":"QuotaTree","metadata":{"name":"soft"},"spec":{"resourceNames":["cpu"],"nodes":{
 "R":{"parent":"nil","hard":"true","quota":{"cpu":"10"}},
 "S":{"parent":"R","hard":"false","quota":{"cpu":"6"}},
 "L1":{"parent":"S","hard":"false","quota":{"cpu":"2"}},
 "L2":{"parent":"S","hard":"false","quota":{"cpu":"2"}},
 "H":{"parent":"S","hard":"true","quota":{"cpu":"1"}},
 "M":{"parent":"R","hard":"true","quota":{"cpu":"4"}},
 "X":{"parent":"M","hard":"false","quota":{"cpu":"1"}},
 "Y":{"parent":"M","hard":"true","quota":{"cpu":"2"}}}}}`

// softQueues: the pods go to root.b, without limits (only the tree bounds).
var softQueues = forestQueues

// softReq is bob's request in root.b (no limits) on node of tree soft.
func softReq(t testing.TB, app, node, cpu string) *Request {
	r := treeReq(t, app, res(t, "cpu", cpu), "soft", node)
	r.User, r.Queue = "bob", "root.b"
	return r
}

func withSoftTree(t testing.TB, tree string) *Manager {
	t.Helper()
	m := New()
	if err := m.Enforce(forestConfig(t, softQueues, map[string]string{"soft.tree.json": tree}), queueconfig.DefaultPartition); err != nil {
		t.Fatal(err)
	}
	return m
}

// aNodeOf is the aNode the committed r is allocated at in tree.
func aNodeOf(r *Request, tree string) string {
	for _, n := range r.Trees.nodes() {
		if n.Tree == tree {
			return n.ANode
		}
	}
	return ""
}

// TestForestSoftBorrow: a pod that does not fit its soft node takes room
// at the lowest ancestor it fits, through soft nodes only, up to and
// including the first hard node (the root is hard); it counts there and
// above, not below; a hard node, or a full node above a hard one, refuses;
// the release gives back exactly where it was charged, and the aNode
// does not move meanwhile.
func TestForestSoftBorrow(t *testing.T) {
	m := withSoftTree(t, softTreeJSON)
	pods := map[string]*Request{}
	type step struct {
		op, app, node, cpu string
		want               string // error
		anode              string
		usage              map[string]int64 // after the step, "soft/node" -> cpu (milli)
	}
	for _, s := range []step{
		{op: "+", app: "l1a", node: "L1", cpu: "2", anode: "L1", usage: map[string]int64{"soft/R": 2000, "soft/S": 2000, "soft/L1": 2000}},
		// L1 full: S (soft) has room.
		{op: "+", app: "l1b", node: "L1", cpu: "2", anode: "S", usage: map[string]int64{"soft/R": 4000, "soft/S": 4000, "soft/L1": 2000}},
		// L1 and S full: the root.
		{op: "+", app: "l1c", node: "L1", cpu: "3", anode: "R", usage: map[string]int64{"soft/R": 7000, "soft/S": 4000, "soft/L1": 2000}},
		// H is hard: no borrowing from S even though S is soft.
		{op: "+", app: "h1", node: "H", cpu: "2", want: "quota tree soft node H would exceed its quota: cpu 0+2 > 1"},
		{op: "+", app: "x1", node: "X", cpu: "1", anode: "X"},
		// X full: M, the first hard node, lends.
		{op: "+", app: "x2", node: "X", cpu: "1", anode: "M", usage: map[string]int64{"soft/R": 9000, "soft/S": 4000, "soft/L1": 2000, "soft/M": 2000, "soft/X": 1000}},
		// Not beyond M: it is hard.
		{op: "+", app: "x3", node: "X", cpu: "3", want: "quota tree soft node M (above X) would exceed its quota: cpu 2+3 > 4"},
		// L2 has room; the root does not (l1c borrowed it).
		{op: "+", app: "l2a", node: "L2", cpu: "2", want: "quota tree soft node R (above L2) would exceed its quota: cpu 9+2 > 10"},
		{op: "-", app: "l1c", usage: map[string]int64{"soft/R": 6000, "soft/S": 4000, "soft/L1": 2000, "soft/M": 2000, "soft/X": 1000}},
		{op: "+", app: "l2a", node: "L2", cpu: "2", anode: "L2", usage: map[string]int64{"soft/R": 8000, "soft/S": 6000, "soft/L1": 2000, "soft/L2": 2000, "soft/M": 2000, "soft/X": 1000}},
		// l1a goes: l1b stays allocated at S (no slide down).
		{op: "-", app: "l1a", usage: map[string]int64{"soft/R": 6000, "soft/S": 4000, "soft/L2": 2000, "soft/M": 2000, "soft/X": 1000}},
		{op: "-", app: "l1b"}, {op: "-", app: "l2a"}, {op: "-", app: "x1"}, {op: "-", app: "x2", usage: map[string]int64{}},
	} {
		switch s.op {
		case "+":
			r := softReq(t, s.app, s.node, s.cpu)
			got := ""
			if err := m.Increase(r); err != nil {
				got = err.Error()
			} else {
				pods[s.app] = r
				if a := aNodeOf(r, "soft"); a != s.anode {
					t.Errorf("%s: allocated at %q, want %q", s.app, a, s.anode)
				}
			}
			if got != s.want {
				t.Errorf("%s: %q, want %q", s.app, got, s.want)
			}
		case "-":
			if err := m.Decrease(pods[s.app]); err != nil {
				t.Fatalf("release %s: %v", s.app, err)
			}
		}
		if s.usage != nil {
			if diff := cmp.Diff(s.usage, nodeUsage(m, "cpu")); diff != "" {
				t.Errorf("after %s %s (-want,+got):\n%s", s.op, s.app, diff)
			}
		}
	}
	if len(m.forest.charged) != 0 {
		t.Errorf("charged after the releases: %v", m.forest.charged)
	}
}

// TestForestSoftNeeds: Decide with reclaim says, for a pod a full node
// refuses, what borrowers allocated at that node must give back: Lower
// when the pod fits below that node (any preemptible borrower gives way),
// not when the node is where it would be allocated itself (only lower
// priority); nothing when non-preemptible borrowers hold the room, or
// borrowers hold too little.
func TestForestSoftNeeds(t *testing.T) {
	for _, c := range []struct {
		name    string
		np      bool // l1c non-preemptible
		node    string
		cpu     string
		want    []TreeNeed
		wantErr string
	}{
		{name: "fits lower", node: "L2", cpu: "2", want: []TreeNeed{{Tree: "soft", Node: "R", Need: res(t, "cpu", "1"), Lower: true}},
			wantErr: "quota tree soft node R (above L2) would exceed its quota: cpu 9+2 > 10"},
		{name: "allocated at the full node", node: "L1", cpu: "3", want: []TreeNeed{{Tree: "soft", Node: "R", Need: res(t, "cpu", "2")}},
			wantErr: "quota tree soft node R (above L1) would exceed its quota: cpu 9+3 > 10"},
		{name: "borrowers hold too little", node: "L2", cpu: "2", np: false, want: nil},
		{name: "non-preemptible borrower", np: true, node: "L2", cpu: "2", want: nil,
			wantErr: "quota tree soft node R (above L2) would exceed its quota: cpu 9+2 > 10"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := withSoftTree(t, softTreeJSON)
			for _, p := range []struct {
				app, node, cpu string
				np             bool
			}{{"l1a", "L1", "2", false}, {"l1b", "L1", "2", false}, {"l1c", "L1", "3", c.np}, {"x1", "X", "1", false}, {"x2", "X", "1", false}} {
				r := softReq(t, p.app, p.node, p.cpu)
				r.NonPreemptible = p.np
				if err := m.Increase(r); err != nil {
					t.Fatal(err)
				}
			}
			cpu := c.cpu
			if c.name == "borrowers hold too little" {
				cpu = "5" // borrows at R, needs 4 there, l1c holds 3
				c.wantErr = "quota tree soft node R (above L2) would exceed its quota: cpu 9+5 > 10"
			}
			r := softReq(t, "new", c.node, cpu)
			d := m.Decide("new", func(*InForce, Queues) (Request, error) { return *r, nil }, true)
			if d.Err == nil || d.Err.Error() != c.wantErr {
				t.Errorf("err %v, want %s", d.Err, c.wantErr)
			}
			if diff := cmp.Diff(c.want, d.TreeNeeds, cmp.Comparer(func(a, b resources.Vector) bool { return a.Equal(b) })); diff != "" {
				t.Errorf("needs (-want,+got):\n%s", diff)
			}
			if d := m.Decide("new", func(*InForce, Queues) (Request, error) { return *r, nil }, false); d.TreeNeeds != nil {
				t.Errorf("needs without reclaim: %v", d.TreeNeeds)
			}
		})
	}
}

// TestForestSoftRestartAndConfig: a pod found running is allocated where
// it fits on usage alone, past soft nodes (over only when nowhere);
// admissions hold room from their aNode up; charges are kept by node and
// aNode across configs, counted from the aNode while it is above the
// node, else at the node.
func TestForestSoftRestartAndConfig(t *testing.T) {
	m := withSoftTree(t, softTreeJSON)
	r1 := softReq(t, "f1", "L1", "2")
	r2 := softReq(t, "f2", "L1", "2")
	for _, r := range []*Request{r1, r2} {
		if over, err := m.ForceCommit("", r); err != nil || over != nil {
			t.Fatalf("forced %s: over %v, err %v", r.App.ID, over, err)
		}
	}
	if a := aNodeOf(r2, "soft"); a != "S" {
		t.Errorf("found running, L1 full: allocated at %q, want S", a)
	}
	// Held room counts from the aNode up: an admission at L1 now borrows
	// at S and holds nothing at L1.
	if err := m.Admit("k3", softReq(t, "a3", "L1", "1")); err != nil {
		t.Fatal(err)
	}
	if h := m.adm.trees[treeKey{"soft", "L1"}]; h != nil {
		t.Errorf("held at L1: %v", h.res)
	}
	if h := m.adm.trees[treeKey{"soft", "S"}]; h == nil || h.res.Get(resources.Intern("cpu")) != 1000 {
		t.Errorf("held at S: %v", h)
	}
	m.Unadmit("k3")
	// L1 moves under R: f2's aNode S is no longer above it, so f2 counts
	// at L1 until released.
	moved := strings.Replace(softTreeJSON, `"L1":{"parent":"S"`, `"L1":{"parent":"R"`, 1)
	if err := m.Enforce(forestConfig(t, softQueues, map[string]string{"soft.tree.json": moved}), queueconfig.DefaultPartition); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"soft/R": 4000, "soft/L1": 4000}, nodeUsage(m, "cpu")); diff != "" {
		t.Errorf("L1 moved (-want,+got):\n%s", diff)
	}
	if err := m.Enforce(forestConfig(t, softQueues, map[string]string{"soft.tree.json": softTreeJSON}), queueconfig.DefaultPartition); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"soft/R": 4000, "soft/S": 4000, "soft/L1": 2000}, nodeUsage(m, "cpu")); diff != "" {
		t.Errorf("back (-want,+got):\n%s", diff)
	}
	// Nowhere to fit: forced at its node, over.
	r3 := softReq(t, "f3", "L1", "9")
	over, err := m.ForceCommit("", r3)
	if err != nil || over == nil || over.Error() != "quota tree soft node R (above L1) would exceed its quota: cpu 4+9 > 10" {
		t.Fatalf("forced over: %v, %v", over, err)
	}
	if a := aNodeOf(r3, "soft"); a != "L1" {
		t.Errorf("forced over: allocated at %q, want L1", a)
	}
	for _, r := range []*Request{r1, r2, r3} {
		if err := m.Decrease(r); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.forest.charged) != 0 || len(nodeUsage(m, "cpu")) != 0 {
		t.Errorf("after the releases: %v %v", m.forest.charged, nodeUsage(m, "cpu"))
	}
}
