package main

// Quota trees in the soak (issue 23 point 6; docs/forests.md): beside the
// queue config, every config version carries two quota trees, all of
// their nodes hard, and most pods of the workload name a leaf of one or
// both with the label tree.userquota.io/<tree>. The structure is the same
// in every version, only the quotas change (as the queue config's). Some
// nodes are tight (west-1, west-2 and their parent west in "region";
// green in "project"), so that pods are held by a tree's node and let in
// when a pod on it ends.
//
// The oracle is the harness's own, written from docs/forests.md: a pod
// bound and not finished is charged its whole request on the node its
// label names and on every ancestor of it; a node's usage is the sum over
// its subtree, restricted to the tree's resources (what
// GET /ws/v1/partition/{p}/trees shows). A quiet check compares that with
// the scheduler's answer for every node of every tree, leader and
// follower; every binding is checked against the quotas that may have
// been in force; a pending pod that fits its nodes as well as its limits
// must be let in (the wait invariant).

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/userquota/userquota/pkg/podmeta"
)

// shapeNode is one node of a soak tree; weight is how often a labelled pod
// names it (leaves only).
type shapeNode struct {
	name, parent string
	weight       int
}

// treeShape is a soak tree's fixed structure.
type treeShape struct {
	name      string
	resources []string // resource names as the REST API spells them
	labelled  int      // percent of pods that carry the tree's label
	nodes     []shapeNode
}

// soakTrees are the trees of every config version. Gang Jobs carry no tree
// label (their reservations on trees are ugm's unit tests' business; the
// soak's gang model stays the queue tree's).
var soakTrees = []treeShape{
	{name: "region", resources: []string{resCPU, resMemory}, labelled: 65, nodes: []shapeNode{
		{name: "world"},
		{name: "east", parent: "world"},
		{name: "east-1", parent: "east", weight: 35},
		{name: "east-2", parent: "east", weight: 35},
		{name: "west", parent: "world"},
		{name: "west-1", parent: "west", weight: 15},
		{name: "west-2", parent: "west", weight: 15},
	}},
	{name: "project", resources: []string{resPods}, labelled: 50, nodes: []shapeNode{
		{name: "all"},
		{name: "red", parent: "all", weight: 40},
		{name: "blue", parent: "all", weight: 40},
		{name: "green", parent: "all", weight: 20},
	}},
}

func shapeOf(tree string) *treeShape {
	for i := range soakTrees {
		if soakTrees[i].name == tree {
			return &soakTrees[i]
		}
	}
	return nil
}

func (t *treeShape) node(name string) *shapeNode {
	for i := range t.nodes {
		if t.nodes[i].name == name {
			return &t.nodes[i]
		}
	}
	return nil
}

// treePath is the node and its ancestors, the node first, the root last;
// nil for a node the tree does not have.
func treePath(tree, node string) []string {
	t := shapeOf(tree)
	if t == nil {
		return nil
	}
	var out []string
	for n := t.node(node); n != nil; n = t.node(n.parent) {
		out = append(out, n.name)
		if n.parent == "" {
			break
		}
	}
	return out
}

// restrict is v in the tree's resources only.
func (t *treeShape) restrict(v vec) vec {
	out := vec{}
	for _, r := range t.resources {
		if x := v[r]; x != 0 {
			out[r] = x
		}
	}
	return out
}

// treeQuotas are one version's quotas: tree -> node -> quota.
type treeQuotas map[string]map[string]vec

// drawTrees draws one version's quotas, scaled with the number of users
// like the queue limits. A child's quota never exceeds its parent's (the
// loader refuses that); the two west leaves together may exceed west, so
// west itself holds pods too.
func drawTrees(r func(lo, hi int64) int64, users int) treeQuotas {
	u := int64(users)
	const mi = int64(1) << 20
	q := treeQuotas{"region": {}, "project": {}}
	reg := q["region"]
	reg["world"] = vec{resCPU: r(u*1000, u*1400), resMemory: r(u*512, u*1024) * mi}
	reg["east"] = vec{resCPU: r(u*600, u*900), resMemory: r(u*384, u*512) * mi}
	reg["east-1"] = vec{resCPU: r(u*350, u*600), resMemory: r(u*256, u*384) * mi}
	reg["east-2"] = vec{resCPU: r(u*350, u*600), resMemory: r(u*256, u*384) * mi}
	reg["west"] = vec{resCPU: r(4000, 6500), resMemory: r(4096, 6144) * mi}
	reg["west-1"] = vec{resCPU: r(2500, 4500), resMemory: r(2048, 4096) * mi}
	reg["west-2"] = vec{resCPU: r(2500, 4500), resMemory: r(2048, 4096) * mi}
	pro := q["project"]
	pro["all"] = vec{resPods: r(u*3/2, u*2)}
	pro["red"] = vec{resPods: r(u/2, u)}
	pro["blue"] = vec{resPods: r(u/2, u)}
	pro["green"] = vec{resPods: r(2, 4)}
	for _, t := range soakTrees {
		for _, n := range t.nodes { // parents first
			if n.parent == "" {
				continue
			}
			child, parent := q[t.name][n.name], q[t.name][n.parent]
			for k, x := range child {
				child[k] = min(x, parent[k])
			}
		}
	}
	return q
}

// treeKeyOf is the ConfigMap key of a tree.
func treeKeyOf(tree string) string { return tree + ".tree.json" }

// renderTree is a tree in the seed's QuotaTree JSON: "parent": "nil" for
// the root, "hard": "true" (strings, as the seed writes them), quotas as
// Kubernetes quantities.
func renderTree(t *treeShape, quotas map[string]vec) string {
	type node struct {
		Parent string            `json:"parent"`
		Hard   string            `json:"hard"`
		Quota  map[string]string `json:"quota"`
	}
	nodes := map[string]node{}
	for _, n := range t.nodes {
		parent := n.parent
		if parent == "" {
			parent = "nil"
		}
		qs := map[string]string{}
		for k, x := range quotas[n.name] {
			if k == resCPU {
				qs[k] = fmt.Sprintf("%dm", x)
			} else {
				qs[k] = fmt.Sprint(x)
			}
		}
		nodes[n.name] = node{Parent: parent, Hard: "true", Quota: qs}
	}
	doc := map[string]any{
		"kind":     "QuotaTree",
		"metadata": map[string]string{"name": t.name},
		"spec":     map[string]any{"resourceNames": t.resources, "nodes": nodes},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // maps of strings: cannot fail
	}
	return string(b) + "\n"
}

// treeLimit is the quota of a node in this version (nil: not in it).
func (c *qconfig) treeLimit(tree, node string) *limit {
	q := c.trees[tree][node]
	if q == nil {
		return nil
	}
	return &limit{max: q}
}

// treeLabels gives a pod its tree labels: for each tree, with the tree's
// probability, a leaf picked by weight.
func (w *workload) treeLabels(labels map[string]string) {
	for _, t := range soakTrees {
		if w.intn(100) >= t.labelled {
			continue
		}
		total := 0
		for _, n := range t.nodes {
			total += n.weight
		}
		x := w.intn(total)
		for _, n := range t.nodes {
			if x < n.weight {
				labels[podmeta.TreeLabel(t.name)] = n.name
				break
			}
			x -= n.weight
		}
	}
}

// treesOf reads a pod's tree labels: tree -> leaf, for the soak's trees
// only (a label of another tree is not read, as the scheduler does not).
func treesOf(labels map[string]string) map[string]string {
	var out map[string]string
	for k, v := range labels {
		name, ok := strings.CutPrefix(k, podmeta.LabelTreePrefix)
		if !ok || shapeOf(name) == nil {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = v
	}
	return out
}

// treeCharge adds (sign 1) or takes back (sign -1) a pod's request on its
// nodes and their ancestors.
func (m *usageModel) treeCharge(c podCharge, sign int64) {
	for tree, leaf := range c.trees {
		for _, n := range treePath(tree, leaf) {
			if m.trees[tree] == nil {
				m.trees[tree] = map[string]vec{}
			}
			u := m.trees[tree][n]
			if u == nil {
				u = vec{}
				m.trees[tree][n] = u
			}
			u.add(c.res, sign)
			if len(u) == 0 {
				delete(m.trees[tree], n)
			}
		}
		if len(m.trees[tree]) == 0 {
			delete(m.trees, tree)
		}
	}
}

// treeUsage is the usage of a node's subtree (all resources; nil: none).
func (m *usageModel) treeUsage(tree, node string) vec { return m.trees[tree][node] }

// Snap keys of the trees: "tree T" (the tree in force with usage: its
// label and resources) and "tree T N" (node N's usage in the tree's
// resources). As for queues, nothing is shown without usage.
func treeKey(tree string) string           { return "tree " + tree }
func treeNodeKey(tree, node string) string { return "tree " + tree + " " + node }
func isTreeKey(k string) bool              { return strings.HasPrefix(k, "tree ") }
func treeLine(label string, res []string) string {
	return "label=" + label + " resources=" + strings.Join(res, ",")
}

// treeSnap adds the model's tree lines to s.
func (m *usageModel) treeSnap(s snap) {
	for _, t := range soakTrees {
		for node, u := range m.trees[t.name] {
			if r := t.restrict(u); len(r) > 0 {
				k := treeNodeKey(t.name, node)
				s.lines[k] = r.String()
				s.pods[k] = r[resPods]
				s.lines[treeKey(t.name)] = treeLine(podmeta.TreeLabel(t.name), t.resources)
			}
		}
	}
}

// restTreeNode is a node of GET /ws/v1/partition/{p}/trees, read into the
// harness's own types.
type restTreeNode struct {
	Node     string           `json:"node"`
	Soft     bool             `json:"soft"`
	Quota    map[string]int64 `json:"quota"`
	Usage    map[string]int64 `json:"usage"`
	Children []*restTreeNode  `json:"children"`
}

type restForest struct {
	Trees []struct {
		Name          string        `json:"name"`
		Label         string        `json:"label"`
		ResourceNames []string      `json:"resourceNames"`
		Root          *restTreeNode `json:"root"`
	} `json:"trees"`
}

// addRESTTrees adds the lines of the scheduler's /trees answer to s.
func addRESTTrees(s snap, body []byte) error {
	var f restForest
	if err := json.Unmarshal(body, &f); err != nil {
		return err
	}
	for _, t := range f.Trees {
		var walk func(n *restTreeNode)
		walk = func(n *restTreeNode) {
			if n == nil {
				return
			}
			res := vec{}
			for k, x := range n.Usage {
				if x != 0 {
					res[k] = x
				}
			}
			if len(res) > 0 {
				k := treeNodeKey(t.Name, n.Node)
				s.lines[k] = res.String()
				s.pods[k] = res[resPods]
				s.lines[treeKey(t.Name)] = treeLine(t.Label, t.ResourceNames)
			}
			for _, c := range n.Children {
				walk(c)
			}
		}
		walk(t.Root)
	}
	return nil
}

// treeRefusal parses a refusal message naming a tree's node ("quota tree
// T node N would exceed ..." or "... node N (above L) would ..."), after
// hold.MessagePrefix.
func treeRefusal(msg string) (tree, node string, ok bool) {
	rest, ok := strings.CutPrefix(msg, "quota tree ")
	if !ok {
		return "", "", false
	}
	tree, rest, ok = strings.Cut(rest, " node ")
	if !ok {
		return "", "", false
	}
	node, _, _ = strings.Cut(rest, " ")
	return tree, node, node != ""
}

// treeCounts reports whether a pod with charge c counts on node of tree:
// its label names that node or one below it.
func treeCounts(c podCharge, tree, node string) bool {
	leaf, ok := c.trees[tree]
	return ok && slices.Contains(treePath(tree, leaf), node)
}

// podsOnTree lists the charged pods on a tree's node, for a report.
func (h *history) podsOnTree(tree, node string) string {
	var lines []string
	for _, p := range h.pods {
		if p.charged && treeCounts(p.charge, tree, node) {
			lines = append(lines, fmt.Sprintf("    %s/%s %s leaf %s bound %s", p.ns, p.name, p.charge.res, p.charge.trees[tree], p.boundAt.Format("15:04:05.000")))
		}
	}
	sort.Strings(lines)
	if len(lines) > 40 {
		lines = append(lines[:40], fmt.Sprintf("    ... and %d more", len(lines)-40))
	}
	return strings.Join(lines, "\n")
}

// treeNodesOf lists (tree, node) of a pod's nodes and their ancestors,
// trees by name.
func treeNodesOf(c podCharge) [][2]string {
	trees := make([]string, 0, len(c.trees))
	for t := range c.trees {
		trees = append(trees, t)
	}
	sort.Strings(trees)
	var out [][2]string
	for _, t := range trees {
		for _, n := range treePath(t, c.trees[t]) {
			out = append(out, [2]string{t, n})
		}
	}
	return out
}

// explainTrees lists, for each tree node a diff's lines disagree on, the
// pods the history has charged there.
func (h *history) explainTrees(lines []string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, l := range lines {
		key, _, _ := strings.Cut(l, "\n")
		f := strings.Fields(key)
		if len(f) != 3 || f[0] != "tree" {
			continue
		}
		fmt.Fprintf(&b, "  pods charged on quota tree %s node %s (etcd history):\n%s\n", f[1], f[2], h.podsOnTree(f[1], f[2]))
	}
	return b.String()
}
