package reclaim

import (
	"testing"

	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// onTree makes v charged on node of tree "t", allocated at anode, with
// path (node first).
func onTree(v *Victim, node, anode string, path ...string) *Victim {
	v.Trees = &ugm.TreePart{Nodes: []ugm.TreeNode{{Tree: "t", Node: node, ANode: anode, Path: path}}}
	return v
}

// TestTreeBorrowers: the preemptor needs room at node R of tree t, where
// pods of L1 borrowed: when it fits below R (Lower) any preemptible
// borrower at R gives way whatever its priority; otherwise only a lower
// priority one. Pods allocated at their own node, borrowers at another
// node, non-preemptible borrowers and pods of another fence are no tree
// victims; the victims must free the need at R (pods already leaving
// counted out of it); the reason is ReasonTree and Why says so.
func TestTreeBorrowers(t *testing.T) {
	mk := func() []*Victim {
		np := onTree(vpod("np-1", "root.b", 2000, -5, 1), "L1", "R", "L1", "S", "R")
		np.Preemptible = false
		return []*Victim{
			onTree(vpod("hi-1", "root.b", 2000, 10, 1), "L1", "R", "L1", "S", "R"),
			onTree(vpod("lo-1", "root.b", 1000, -1, 2), "L1", "R", "L1", "S", "R"),
			onTree(vpod("home-1", "root.b", 2000, -5, 3), "L1", "L1", "L1", "S", "R"),
			onTree(vpod("mid-1", "root.b", 2000, -5, 4), "L1", "S", "L1", "S", "R"),
			np,
			onTree(vpod("fenced-1", "root.f.x", 2000, -5, 1), "L1", "R", "L1", "S", "R"),
		}
	}
	for _, c := range []struct {
		name    string
		lower   bool
		need    int64
		leaving []ugm.Request
		chosen  string
		unmet   string // needUnmet of the chosen ones
	}{
		{name: "fits lower", lower: true, need: 3000, chosen: "lo-1:tree hi-1:tree"},
		{name: "allocated at R itself", need: 1000, chosen: "lo-1:tree"},
		{name: "not enough of lower priority", need: 3000, chosen: "lo-1:tree", unmet: "quota tree t node R is full and the pods on the node allocated there from below it do not free enough of it"},
		{name: "leaving pods give back", need: 3000, chosen: "lo-1:tree",
			leaving: []ugm.Request{{Resources: cpuMem(2000, 0), Trees: &ugm.TreePart{Nodes: []ugm.TreeNode{{Tree: "t", Node: "L2", ANode: "R", Path: []string{"L2", "S", "R"}}}}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := testReclaimState("root.a", 0, []string{"root.f"}, false, nil)
			rs.treeNeeds = treeNeedsLeft([]ugm.TreeNeed{{Tree: "t", Node: "R", Need: resources.FromMap(map[string]int64{"cpu": c.need}), Lower: c.lower}}, c.leaving)
			got := rs.choose(mk(), nil)
			if names(got) != c.chosen {
				t.Errorf("chose %q, want %q", names(got), c.chosen)
			}
			if u := rs.needUnmet(got, nil); u != c.unmet {
				t.Errorf("needUnmet %q, want %q", u, c.unmet)
			}
		})
	}
	rs := testReclaimState("root.a", 0, nil, false, nil)
	rs.treeNeeds = []ugm.TreeNeed{{Tree: "t", Node: "R", Need: cpuMem(1000, 0), Lower: true}}
	why, reason := rs.WhyCharge(ugm.Request{Queue: "root.b", Trees: onTree(&Victim{}, "L1", "R", "L1", "S", "R").Trees}, 10)
	if reason != metrics.ReasonTree || why != "quota tree t: allocated at node R above its node L1 (room borrowed through soft nodes), which a pod of queue root.a that fits below node R takes back" {
		t.Errorf("why %q (%s)", why, reason)
	}
	if _, reason := rs.WhyCharge(ugm.Request{Queue: "root.a"}, -1); reason != metrics.ReasonPriority {
		t.Errorf("a lower priority pod of the queue: %s", reason)
	}
}
