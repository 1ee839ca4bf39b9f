package main

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/userquota/userquota/pkg/podmeta"
)

// noTreeUsage is GET .../trees with the soak's trees and no usage.
const noTreeUsage = `{"trees":[
 {"name":"project","label":"tree.userquota.io/project","resourceNames":["pods"],"root":{"node":"all","quota":{"pods":40},"usage":{}}},
 {"name":"region","label":"tree.userquota.io/region","resourceNames":["cpu","memory"],"root":{"node":"world","quota":{"cpu":24000,"memory":1},"usage":{}}}]}`

func treePod(name, user, queue, cpu string, trees map[string]string) *v1.Pod {
	p := testPod(name, user, []string{"g0"}, queue, cpu)
	for t, n := range trees {
		p.Labels[podmeta.TreeLabel(t)] = n
	}
	return p
}

// Every version's trees load with the queue config (queueconfig, as the
// scheduler loads the ConfigMap), child quotas within their parents', the
// checksum covering the trees.
func TestGeneratedTrees(t *testing.T) {
	for _, users := range []int{4, 32, 60} {
		rng := rand.New(rand.NewSource(int64(users)))
		for v := 0; v < 50; v++ {
			c := newConfig(rng, v, users, min(6, users/2), vipUsers())
			cfg, err := c.load()
			if err != nil {
				t.Fatalf("%d users, version %d: %v\n%v", users, v, err, c.data())
			}
			if len(cfg.Trees) != 2 || c.sum != cfg.Checksum {
				t.Fatalf("%d trees, checksum %s, want 2 and %s", len(cfg.Trees), c.sum, cfg.Checksum)
			}
			for _, tr := range cfg.Trees {
				shape := shapeOf(tr.Name)
				if shape == nil || tr.Len() != len(shape.nodes) || tr.Root.Name != shape.nodes[0].name {
					t.Fatalf("tree %s loaded as %d nodes, root %s", tr.Name, tr.Len(), tr.Root.Name)
				}
				for _, n := range shape.nodes {
					node := tr.Node(n.name)
					if node == nil || node.Soft {
						t.Fatalf("tree %s node %s: %+v (all hard)", tr.Name, n.name, node)
					}
					if got := vec(node.Quota.Map()); !vecEqual(got, c.trees[tr.Name][n.name]) {
						t.Errorf("tree %s node %s: quota %v loaded, %v drawn", tr.Name, n.name, got, c.trees[tr.Name][n.name])
					}
				}
			}
		}
	}
	c := testConfig(t)
	if !strings.Contains(c.data()["region.tree.json"], `"parent": "nil"`) {
		t.Errorf("the root's parent is the seed's \"nil\":\n%s", c.data()["region.tree.json"])
	}
}

func TestTreePath(t *testing.T) {
	for _, tc := range []struct{ tree, node, want string }{
		{"region", "west-1", "west-1 west world"},
		{"region", "world", "world"},
		{"project", "green", "green all"},
		{"project", "nope", ""},
		{"nope", "all", ""},
	} {
		if got := strings.Join(treePath(tc.tree, tc.node), " "); got != tc.want {
			t.Errorf("treePath(%s, %s) = %q, want %q", tc.tree, tc.node, got, tc.want)
		}
	}
	labels := map[string]string{podmeta.TreeLabel("region"): "east-1", podmeta.TreeLabel("other"): "x", podmeta.LabelQueue: "root.default"}
	if got := treesOf(labels); len(got) != 1 || got["region"] != "east-1" {
		t.Errorf("treesOf = %v: the soak's trees only", got)
	}
}

// The model's tree lines and the flattening of GET .../trees agree on an
// answer in the shape docs/forests.md shows, and a leak on one node is
// seen on that node.
func TestTreeSnapMatchesREST(t *testing.T) {
	c := testConfig(t)
	m := newUsageModel(c)
	m.charge(chargeOf(treePod("a", "ann", "root.default", "500m", map[string]string{"region": "west-1", "project": "green"})))
	m.charge(chargeOf(treePod("b", "bob", "root.default", "1", map[string]string{"region": "east-2"})))
	m.charge(chargeOf(treePod("c", "cy", "root.default", "250m", nil)))
	gone := chargeOf(treePod("d", "dan", "root.default", "2", map[string]string{"region": "west-1", "project": "red"}))
	m.charge(gone)
	m.uncharge(gone, m.groupFor(gone))
	const mem = 64 << 20
	answer := func(worldCPU int) string {
		return fmt.Sprintf(`{"trees":[
 {"name":"project","label":"tree.userquota.io/project","resourceNames":["pods"],"root":{"node":"all","quota":{"pods":40},"usage":{"pods":1},"children":[
   {"node":"blue","quota":{"pods":20},"usage":{}},{"node":"green","quota":{"pods":3},"usage":{"pods":1}},{"node":"red","quota":{"pods":20},"usage":{}}]}},
 {"name":"region","label":"tree.userquota.io/region","resourceNames":["cpu","memory"],"root":{"node":"world","quota":{"cpu":30000,"memory":1},"usage":{"cpu":%d,"memory":%d},"children":[
   {"node":"east","quota":{"cpu":1},"usage":{"cpu":1000,"memory":%d},"children":[
     {"node":"east-1","quota":{"cpu":1},"usage":{}},{"node":"east-2","quota":{"cpu":1},"usage":{"cpu":1000,"memory":%d}}]},
   {"node":"west","quota":{"cpu":1},"usage":{"cpu":500,"memory":%d},"children":[
     {"node":"west-1","quota":{"cpu":1},"usage":{"cpu":500,"memory":%d}},{"node":"west-2","quota":{"cpu":1},"usage":{}}]}]}}]}`,
			worldCPU, 2*mem, mem, mem, mem, mem)
	}
	sched := func(body string) snap {
		s := snap{lines: map[string]string{}, pods: map[string]int64{}}
		if err := addRESTTrees(s, []byte(body)); err != nil {
			t.Fatal(err)
		}
		return s
	}
	model := func() snap {
		s := snap{lines: map[string]string{}, pods: map[string]int64{}}
		m.treeSnap(s)
		return s
	}
	if lines, n, _ := diff(sched(answer(1500)), model()); n != 0 {
		t.Fatalf("differ:\n%s", strings.Join(lines, "\n"))
	}
	// A release the scheduler did not take back at the root.
	lines, n, _ := diff(sched(answer(3500)), model())
	if n != 1 || !strings.HasPrefix(lines[0], "tree region world\n") || !strings.Contains(lines[0], "cpu:3500") {
		t.Fatalf("want the root's line to differ, got %d: %v", n, lines)
	}
	// A tree missing from the scheduler's answer is a difference too.
	if _, n, _ := diff(sched(`{"trees":[]}`), model()); n < 2 {
		t.Errorf("no trees in force: %d lines differ", n)
	}
}

func TestHistoryTreeQuota(t *testing.T) {
	c := testConfig(t)
	h := newHistory(c, nil)
	v := h.addVersion(c)
	v.applied = time.Now()
	quota := c.trees["project"]["green"][resPods]
	rev := int64(1)
	green := map[string]string{"project": "green"}
	var pods []*v1.Pod
	for i := int64(0); i < quota; i++ {
		// Each its own user: no user or queue limit comes near.
		p := treePod(fmt.Sprintf("g%d", i), fmt.Sprintf("u%03d", 10+i), "root.default", "100m", green)
		pods = append(pods, p)
		put(t, h, rev, p)
		p.Spec.NodeName = "n"
		put(t, h, rev+1, p)
		rev += 2
	}
	if h.violation != "" || h.c.treeBound != int(quota) {
		t.Fatalf("within the quota: %q, %d tree bindings", h.violation, h.c.treeBound)
	}
	// Full: a green pod does not fit, one on red does.
	held := treePod("held", "u020", "root.default", "100m", green)
	held.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "QuotaHeld",
		Message: fmt.Sprintf("held by quota: quota tree project node green would exceed its quota: pods %d+1 > %d", quota, quota)}}
	put(t, h, rev, held)
	red := treePod("red", "u021", "root.default", "100m", map[string]string{"project": "red"})
	put(t, h, rev+1, red)
	rev += 2
	if fp := h.fittingPending(); len(fp) != 1 || fp[0] != "soak-a/red" {
		t.Errorf("fitting pending %v, want soak-a/red only", fp)
	}
	if h.c.treeHeld != 1 {
		t.Errorf("treeHeld %d, want 1", h.c.treeHeld)
	}
	// The wait invariant: held by the tree, it does not count; once a
	// green pod ends it fits, and 6 s later it is a lost let-in.
	now := h.pods[podPrefix+held.Namespace+"/"+held.Name].refusedAt
	calm := now.Add(-time.Minute)
	h.checkWaits(now.Add(10*time.Second), calm, 5*time.Second)
	if h.violation != "" {
		t.Fatalf("held by a full node: %s", h.violation)
	}
	pods[0].Status.Phase = v1.PodSucceeded
	put(t, h, rev, pods[0])
	rev++
	h.checkWaits(now.Add(11*time.Second), calm, 5*time.Second)
	h.checkWaits(now.Add(17*time.Second), calm, 5*time.Second)
	if !strings.Contains(h.violation, "has fitted every limit for 6.0s") {
		t.Fatalf("a pod the node has room for again: violation %q", h.violation)
	}
	// A binding over the node's quota.
	h.violation = ""
	over := treePod("over", "u022", "root.default", "100m", green)
	put(t, h, rev, over)
	held.Spec.NodeName = "n"
	put(t, h, rev+1, held)
	if h.violation != "" {
		t.Fatalf("into the room a release made: %s", h.violation)
	}
	over.Spec.NodeName = "n"
	put(t, h, rev+2, over)
	if !strings.Contains(h.violation, "was bound while quota tree project node green was at its quota: with it pods") {
		t.Fatalf("violation %q", h.violation)
	}
	// And a quiet check finds the node above its quota.
	m := newUsageModel(c)
	for _, p := range h.pods {
		if p.charged {
			m.charge(p.charge)
		}
	}
	if why := h.staticCheck(m, time.Now().Add(-time.Minute)); !strings.Contains(why, "quota tree project node green is above its quota") {
		t.Errorf("staticCheck = %q", why)
	}
}

// An ancestor's quota holds too: the two west leaves may together exceed
// west.
func TestHistoryTreeAncestor(t *testing.T) {
	c := testConfig(t)
	c.trees["region"]["west"][resCPU] = 1000
	h := newHistory(c, nil)
	v := h.addVersion(c)
	v.applied = time.Now()
	a := treePod("a", "u010", "root.default", "600m", map[string]string{"region": "west-1"})
	a.Spec.NodeName = "n"
	put(t, h, 1, a)
	b := treePod("b", "u011", "root.default", "600m", map[string]string{"region": "west-2"})
	put(t, h, 2, b)
	if fp := h.fittingPending(); len(fp) != 0 {
		t.Errorf("west has 400m left: %v fits", fp)
	}
	b.Spec.NodeName = "n"
	put(t, h, 3, b)
	if !strings.Contains(h.violation, "quota tree region node west was at its quota") {
		t.Fatalf("violation %q", h.violation)
	}
}

func TestLimitCountsTree(t *testing.T) {
	c := podCharge{user: "u1", queue: "root.alpha.a1", trees: map[string]string{"region": "west-1"}}
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{`held by quota: quota tree region node west-1 would exceed its quota: cpu 3+1 > 3`, true},
		{`held by quota: quota tree region node west (above west-2) would exceed its quota: cpu 3+1 > 3`, true},
		{`held by quota: quota tree region node world (above east-1) would exceed its quota: cpu 3+1 > 3`, true},
		{`held by quota: quota tree region node west-2 would exceed its quota: cpu 3+1 > 3`, false},
		{`held by quota: quota tree region node east (above east-1) would exceed its quota: cpu 3+1 > 3`, false},
		{`held by quota: quota tree project node green would exceed its quota: pods 3+1 > 3`, false},
	} {
		if got := limitCounts(tc.msg, c, ""); got != tc.want {
			t.Errorf("limitCounts(%q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
}

// The JSON the soak writes is the seed's form, which the scheduler reads.
func TestRenderTree(t *testing.T) {
	c := testConfig(t)
	var doc struct {
		Kind string `json:"kind"`
		Spec struct {
			ResourceNames []string `json:"resourceNames"`
			Nodes         map[string]struct {
				Parent, Hard string
				Quota        map[string]string
			} `json:"nodes"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(c.data()["project.tree.json"]), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Kind != "QuotaTree" || len(doc.Spec.Nodes) != 4 || doc.Spec.Nodes["green"].Parent != "all" || doc.Spec.Nodes["green"].Hard != "true" {
		t.Errorf("%+v", doc)
	}
}
