package ugm

import (
	"fmt"
	"sort"
	"strings"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
)

// Quota trees (seed 002's forest; docs/forests.md): besides its queue, a
// request is charged on the node each tree of the config in force names
// in its labels (queueconfig.Tree.Label), and on every ancestor of that
// node. It fits only if it fits every node on each of those paths, in the
// same check, under the same lock, as its user, group and queue limits:
// the seed's conjoint allocation over all trees, its try/undo being our
// check then commit. A tree's quota bounds only the resources the tree
// names (a node's Quota is a resources.Limit of them); usage is kept in
// full vectors, so a release gives back exactly what was charged whatever
// the tree says by then.
//
// What each pod is charged on is kept by node name (forest.charged),
// across configs: a node or tree that leaves the config keeps its charges
// until they are released, unlimited, and counts again if it comes back.
// The usage of each node of a tree in force (its subtree's) is rebuilt
// from those charges when a config is put in force. A commit records every
// tree label the pod carries, also of trees not in force, so that a tree
// added later counts the pods already running in it, as a scheduler that
// starts then would (pods found running are charged the same way).

// WhoTree: a refusal by a quota tree's node; Name is the tree, Node the
// node whose quota is exceeded, Leaf the node the pod names.
const WhoTree = "tree"

// TreePart is a request's part in the quota trees. Immutable once made:
// ugm makes a new one where it records nodes, so copies of a request
// share it safely.
type TreePart struct {
	// Labels are the pod's labels (read only): each tree in force charges
	// the request on the node its label names (queueconfig.Tree.Label),
	// and a commit records every label under podmeta.LabelTreePrefix.
	Labels map[string]string
	// Nodes are the nodes the request is charged on after a commit
	// (Commit, ForceCommit), or would hold room on (Decide, Admit), by
	// tree name, with their paths in the trees in force then.
	Nodes []TreeNode
}

// nodes is p's nodes (none for a nil p).
func (p *TreePart) nodes() []TreeNode {
	if p == nil {
		return nil
	}
	return p.Nodes
}

// labels is p's labels (none for a nil p).
func (p *TreePart) labels() map[string]string {
	if p == nil {
		return nil
	}
	return p.Labels
}

// TreeNode is a node of a quota tree a request is charged on (or holds
// room on).
type TreeNode struct {
	// Node is the leaf the pod names (the seed's gNode).
	Tree, Node string
	// ANode is where the request is allocated (the seed's aNode): Node,
	// or, when Node is soft and full, the ancestor reached through soft
	// nodes at which it fits (placeTree). The request counts on ANode and
	// its ancestors, not on the nodes below ANode. A commit records it and
	// the release takes the charge back there; "" for a tree not in force
	// when the request was decided (counted at Node if it comes).
	ANode string
	// Path is the node and its ancestors, the node first, in the tree of
	// the config in force when ugm last looked (shared, never changed);
	// nil when the tree or the node is not in force.
	Path []string
}

// Counted is the part of Path the request counts on: ANode and its
// ancestors (all of Path when ANode is not on it).
func (n TreeNode) Counted() []string {
	for i, p := range n.Path {
		if p == n.ANode {
			return n.Path[i:]
		}
	}
	return n.Path
}

// Borrowed reports whether the request is allocated above its node: it
// took room at an ancestor (docs/forests.md, "Soft nodes").
func (n TreeNode) Borrowed() bool { return n.ANode != "" && n.ANode != n.Node }

// TreeNodeError refuses a request whose tree label names no node pods may
// join: no node of that name, a node that is not a leaf (the seed's
// consumers belong to leaf nodes), or an empty value.
type TreeNodeError struct {
	Tree, Label, Node string
	// Reason completes "label L=N: ...".
	Reason string
}

func (e *TreeNodeError) Error() string {
	return fmt.Sprintf("label %s=%s: %s", e.Label, e.Node, e.Reason)
}

// forest is the Manager's quota trees. The Manager locks.
type forest struct {
	// trees are the trees in force, sorted by name (none: nil).
	trees []*treeState
	// charged is what is charged, by tree then by node and aNode name.
	charged map[string]map[chargeKey]*treeCharge
}

// chargeKey is where pods are charged in one tree: the node they name
// and the node they are allocated at (the same when not borrowing).
type chargeKey struct{ node, anode string }

// treeState is one tree in force with its nodes' usage.
type treeState struct {
	cfg   *queueconfig.Tree
	nodes map[string]*treeNodeState
}

// treeNodeState is one node in force: the usage of its subtree.
type treeNodeState struct {
	cfg    *queueconfig.TreeNode
	parent *treeNodeState
	usage  resources.Vector
}

// treeCharge is what the pods charged on one node and aNode hold there;
// npUsage the part of it non-preemptible pods hold.
type treeCharge struct {
	usage, npUsage resources.Vector
	n              int
}

// treeKey is a node of a tree, as a map key.
type treeKey struct{ tree, node string }

// apply puts trees in force, their usage rebuilt from the charges.
func (f *forest) apply(trees []*queueconfig.Tree) {
	f.trees = nil
	for _, t := range trees {
		ts := &treeState{cfg: t, nodes: make(map[string]*treeNodeState, t.Len())}
		t.Walk(func(n *queueconfig.TreeNode) {
			s := &treeNodeState{cfg: n}
			if n.Parent != nil {
				s.parent = ts.nodes[n.Parent.Name]
			}
			ts.nodes[n.Name] = s
		})
		for k, c := range f.charged[t.Name] {
			for s := ts.start(k); s != nil; s = s.parent {
				s.usage.AddUnchecked(c.usage)
			}
		}
		f.trees = append(f.trees, ts)
	}
}

// start is the node in force where charges of k count from: their aNode
// while it is the node or an ancestor of it in this tree, else the node
// (a config that moved the aNode out of the path counts them there, as a
// hard charge); nil when the node is not in force.
func (t *treeState) start(k chargeKey) *treeNodeState {
	n := t.nodes[k.node]
	if n == nil || k.anode == "" || k.anode == k.node {
		return n
	}
	if a := t.nodes[k.anode]; a != nil && onTreePath(n.cfg.Path, k.anode) {
		return a
	}
	return n
}

// tree returns the tree in force named name, or nil.
func (f *forest) tree(name string) *treeState {
	for _, t := range f.trees {
		if t.cfg.Name == name {
			return t
		}
	}
	return nil
}

// visit calls fn with each tree in force whose label req carries and the
// node it names, trees by name; a label naming no leaf of its tree is a
// *TreeNodeError and stops it. Without trees, or labels, it does nothing
// and allocates nothing.
func (f *forest) visit(req *Request, fn func(t *treeState, n *treeNodeState)) error {
	labels := req.Trees.labels()
	if len(f.trees) == 0 || len(labels) == 0 {
		return nil
	}
	for _, t := range f.trees {
		v, ok := labels[t.cfg.Label]
		if !ok {
			continue
		}
		n := t.nodes[v]
		if n == nil || !n.cfg.Leaf() {
			return t.nodeError(v, n)
		}
		fn(t, n)
	}
	return nil
}

// nodeError is why a label's value v (node n, nil when none) names no
// node a pod may join.
func (t *treeState) nodeError(v string, n *treeNodeState) *TreeNodeError {
	e := &TreeNodeError{Tree: t.cfg.Name, Label: t.cfg.Label, Node: v}
	var leaves []string
	t.cfg.Walk(func(x *queueconfig.TreeNode) {
		if x.Leaf() && (n == nil || onTreePath(x.Path, v)) {
			leaves = append(leaves, x.Name)
		}
	})
	if len(leaves) > 10 {
		leaves = append(leaves[:10], fmt.Sprintf("and %d more", len(leaves)-10))
	}
	switch {
	case v == "":
		e.Reason = fmt.Sprintf("the value is empty: name a leaf node of quota tree %s (%s), or remove the label", t.cfg.Name, strings.Join(leaves, ", "))
	case n == nil:
		e.Reason = fmt.Sprintf("quota tree %s has no node %q (its leaves: %s)", t.cfg.Name, v, strings.Join(leaves, ", "))
	default:
		e.Reason = fmt.Sprintf("node %s of quota tree %s is not a leaf: pods join a leaf node (under %s: %s)", v, t.cfg.Name, v, strings.Join(leaves, ", "))
	}
	return e
}

// onTreePath reports whether node is on path.
func onTreePath(path []string, node string) bool {
	for _, p := range path {
		if p == node {
			return true
		}
	}
	return false
}

// heldRefs is req's tree part with the nodes of the trees in force it
// names, with their paths: where an admission holds room. Nil for a
// request without one. Nodes a label names wrongly are left out (visit
// refuses the request).
func (m *Manager) heldRefs(req *Request, own *admission) *TreePart {
	if req.Trees == nil {
		return nil
	}
	out := &TreePart{Labels: req.Trees.Labels}
	_ = m.forest.visit(req, func(t *treeState, n *treeNodeState) {
		a, _ := m.placeTree(t, n, req.Resources, own, true, nil)
		out.Nodes = append(out.Nodes, TreeNode{Tree: t.cfg.Name, Node: n.cfg.Name, ANode: a.cfg.Name, Path: n.cfg.Path})
	})
	return out
}

// chargeRefs is req's tree part with the nodes a commit charges: every
// tree label the request carries, of a tree in force or not (charge sets
// the paths of those in force), each with the aNode it is allocated at
// now (placeTree; counting held room unless forced: a pod found running
// takes the lowest node it fits on usage alone, its node when none).
func (m *Manager) chargeRefs(req *Request, forced bool) *TreePart {
	var out []TreeNode
	for k, v := range req.Trees.labels() {
		if !strings.HasPrefix(k, podmeta.LabelTreePrefix) {
			continue
		}
		ref := TreeNode{Tree: k[len(podmeta.LabelTreePrefix):], Node: v, ANode: v}
		if t := m.forest.tree(ref.Tree); t != nil {
			if n := t.nodes[v]; n != nil {
				if a, r := m.placeTree(t, n, req.Resources, nil, !forced, nil); r == nil {
					ref.ANode = a.cfg.Name
				}
			}
		}
		out = append(out, ref)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tree < out[j].Tree })
	return &TreePart{Labels: req.Trees.labels(), Nodes: out}
}

// charge adds (sign 1) or takes back (sign -1) res on the nodes of refs,
// each from its aNode up (np: the request is non-preemptible), and
// returns the tree part of a request with labels and those nodes, each
// with its path in the trees in force now. It reports whether a usage
// went below zero (clamped). refs is not changed.
func (f *forest) charge(part *TreePart, res resources.Vector, np bool, sign int) (_ *TreePart, clamped bool) {
	refs := append([]TreeNode(nil), part.Nodes...)
	for i := range refs {
		ref := &refs[i]
		if ref.ANode == "" {
			ref.ANode = ref.Node
		}
		k := chargeKey{ref.Node, ref.ANode}
		byNode := f.charged[ref.Tree]
		if byNode == nil {
			if sign < 0 {
				clamped = true
				continue
			}
			if f.charged == nil {
				f.charged = map[string]map[chargeKey]*treeCharge{}
			}
			byNode = map[chargeKey]*treeCharge{}
			f.charged[ref.Tree] = byNode
		}
		c := byNode[k]
		if c == nil {
			if sign < 0 {
				clamped = true
				continue
			}
			c = &treeCharge{}
			byNode[k] = c
		}
		ref.Path = nil
		var n *treeNodeState
		if t := f.tree(ref.Tree); t != nil {
			if g := t.nodes[ref.Node]; g != nil {
				ref.Path = g.cfg.Path
			}
			n = t.start(k)
		}
		if sign > 0 {
			c.usage.AddUnchecked(res)
			if np {
				c.npUsage.AddUnchecked(res)
			}
			c.n++
			for ; n != nil; n = n.parent {
				n.usage.AddUnchecked(res)
			}
			continue
		}
		clamped = c.usage.SubClamped(res) || clamped
		if np {
			c.npUsage.SubClamped(res)
		}
		if c.n--; c.n <= 0 {
			delete(byNode, k)
			if len(byNode) == 0 {
				delete(f.charged, ref.Tree)
			}
		}
		for ; n != nil; n = n.parent {
			clamped = n.usage.SubClamped(res) || clamped
		}
	}
	return &TreePart{Labels: part.Labels, Nodes: refs}, clamped
}

// resize changes the charge of refs from old to new resources (forced).
func (f *forest) resize(refs []TreeNode, old, new resources.Vector, np bool) {
	apply := func(v *resources.Vector) {
		v.SubClamped(old)
		v.AddUnchecked(new)
	}
	for _, ref := range refs {
		k := chargeKey{ref.Node, ref.ANode}
		if k.anode == "" {
			k.anode = k.node
		}
		if c := f.charged[ref.Tree][k]; c != nil {
			apply(&c.usage)
			if np {
				apply(&c.npUsage)
			}
		}
		if t := f.tree(ref.Tree); t != nil {
			for n := t.start(k); n != nil; n = n.parent {
				apply(&n.usage)
			}
		}
	}
}

// checkTrees refuses req on the first node, over the trees it names (by
// name) and from its node up to the root, where it would go over the
// node's quota, counting the room admissions hold there (own's aside),
// past the soft nodes it may borrow above (placeTree). With needs (only
// Decide for reclaim), a node whose quota borrowers allocated at it could
// give back does not refuse: it is recorded there.
// Callers hold m.mu and have resolved req (visit found no error).
func (m *Manager) checkTrees(req *Request, own *admission, needs *[]TreeNeed) *Refusal {
	var r *Refusal
	_ = m.forest.visit(req, func(t *treeState, leaf *treeNodeState) {
		if r != nil {
			return
		}
		_, r = m.placeTree(t, leaf, req.Resources, own, true, needs)
	})
	return r
}

// TreeNeed is room a pod needs at a node of a quota tree that pods
// allocated there from below (borrowers: docs/forests.md, "Soft nodes")
// hold, and may be preempted to give back (Decision.TreeNeeds).
type TreeNeed struct {
	Tree, Node string
	// Need is, per resource of the tree, how much must be given back.
	Need resources.Vector
	// Lower: the pod is allocated below Node (it fits at a lower node),
	// so any preemptible borrower at Node gives way to it; otherwise only
	// borrowers of lower priority do.
	Lower bool
}

// placeTree finds where res goes on the path of leaf in t: the seed's
// aNode, the lowest node from which res fits every node up to the root,
// such that every node below it on the path is soft (a consumer that
// does not fit at a soft node takes room at its parent; a hard node, and
// the root, end the way up). A refusal names the first node from leaf up
// that is full and hard or above a hard one; the node returned is then
// leaf. held: room admissions hold counts (own's aside). With needs, a
// full node where preemptible borrowers (pods allocated at it from
// below) hold at least the excess is recorded there and passed.
// Callers hold m.mu.
func (m *Manager) placeTree(t *treeState, leaf *treeNodeState, res resources.Vector, own *admission, held bool, needs *[]TreeNeed) (*treeNodeState, *Refusal) {
	var ownTree []string
	if own != nil {
		for _, x := range own.req.Trees.nodes() {
			if x.Tree == t.cfg.Name {
				ownTree = x.Counted()
			}
		}
	}
	anode := leaf
	hard := false
	for n := leaf; n != nil; n = n.parent {
		hardHere := !n.cfg.Soft || n.parent == nil
		var h, mine resources.Vector
		if held {
			if x := m.adm.trees[treeKey{t.cfg.Name, n.cfg.Name}]; x != nil {
				h = x.res
			}
			if ownTree != nil && onTreePath(ownTree, n.cfg.Name) {
				mine = own.req.Resources
			}
		}
		e, over := n.cfg.Quota.ExceedsWith(n.usage, h, mine, res)
		if !over {
			hard = hard || hardHere
			continue
		}
		if !hard && !hardHere {
			// Soft, and soft all the way from leaf: borrow above.
			anode = n.parent
			continue
		}
		if needs != nil {
			if need := m.forest.lendNeed(t, n, h, mine, res); need != nil {
				*needs = append(*needs, TreeNeed{Tree: t.cfg.Name, Node: n.cfg.Name, Need: need, Lower: anode != n})
				hard = hard || hardHere
				continue
			}
		}
		r := &Refusal{Who: WhoTree, Name: t.cfg.Name, Node: n.cfg.Name, Leaf: leaf.cfg.Name, Limit: LimitResources,
			Resource: e.ID.Name(), Usage: e.Usage, Request: e.Request, Max: e.Max}
		if x := h.Get(e.ID) - mine.Get(e.ID); x > 0 {
			r.Admitted = x
		}
		return leaf, r
	}
	return anode, nil
}

// lendNeed is what res needs given back at n (per resource of the tree
// over its quota with held room h, own's mine aside) when preemptible
// pods allocated at n from below hold at least that much; nil otherwise.
func (f *forest) lendNeed(t *treeState, n *treeNodeState, h, mine, res resources.Vector) resources.Vector {
	var need resources.Vector
	for _, b := range n.cfg.Quota {
		r := res.Get(b.ID)
		if r <= 0 {
			continue
		}
		u := n.usage.Get(b.ID) + max(0, h.Get(b.ID)-mine.Get(b.ID))
		if d := u + r - b.Max; d > 0 {
			need.Set(b.ID, d)
		}
	}
	lent := f.lentAt(t.cfg.Name, n.cfg.Name, true)
	for i, x := range need {
		if x > 0 && lent.Get(resources.ID(i)) < x {
			return nil
		}
	}
	return need
}

// lentAt sums the usage of pods of tree allocated at node from a node
// below it (borrowers); preemptible: only those that may be preempted.
func (f *forest) lentAt(tree, node string, preemptible bool) resources.Vector {
	var sum resources.Vector
	for k, c := range f.charged[tree] {
		if k.anode != node || k.node == node {
			continue
		}
		sum.AddUnchecked(c.usage)
		if preemptible {
			sum.SubClamped(c.npUsage)
		}
	}
	return sum
}

// overTrees is the first node of refs (committed nodes) whose quota a
// growth of res takes over, on usage alone, each from its aNode up; nil
// when none.
func (f *forest) overTrees(refs []TreeNode, res resources.Vector) *Refusal {
	for _, ref := range refs {
		t := f.tree(ref.Tree)
		if t == nil {
			continue
		}
		leaf := t.nodes[ref.Node]
		if leaf == nil {
			continue
		}
		for n := t.start(chargeKey{ref.Node, ref.ANode}); n != nil; n = n.parent {
			if e, over := n.cfg.Quota.Exceeds(n.usage, res); over {
				return &Refusal{Who: WhoTree, Name: t.cfg.Name, Node: n.cfg.Name, Leaf: leaf.cfg.Name, Limit: LimitResources,
					Resource: e.ID.Name(), Usage: e.Usage, Request: e.Request, Max: e.Max}
			}
		}
	}
	return nil
}

// addHeld adds (sign 1) or takes back (sign -1) res at every node of the
// paths of refs, in the admissions' book.
func (a *admissions) addHeld(refs []TreeNode, res resources.Vector, sign int) {
	for _, ref := range refs {
		for _, node := range ref.Counted() {
			k := treeKey{ref.Tree, node}
			if h := a.stepHeld(a.trees[k], res, sign, 0); h.empty() {
				delete(a.trees, k)
				a.free(h)
			} else {
				a.trees[k] = h
			}
		}
	}
}

// TreeUsage is one node of a quota tree in a snapshot: its quota and the
// usage of its subtree, in the tree's resources (base units), and its
// children by name.
type TreeUsage struct {
	Node  string          `json:"node"`
	Soft  bool            `json:"soft,omitempty"`
	Quota resources.Limit `json:"quota"`
	// Usage is what pods allocated in the subtree use of the tree's
	// resources (a pod allocated above its own node, at an ancestor,
	// counts there and not here).
	Usage resources.Vector `json:"usage"`
	// Lent is the part of Usage held by pods allocated at this node whose
	// own node is below it: room this node lends to soft nodes under it
	// (docs/forests.md, "Soft nodes"); empty when none.
	Lent     resources.Vector `json:"lent,omitempty"`
	Children []*TreeUsage     `json:"children,omitempty"`
}

// ForestTree is one quota tree in force with its nodes' usage.
type ForestTree struct {
	Name string `json:"name"`
	// Label is the pod label that names a node of the tree.
	Label         string     `json:"label"`
	ResourceNames []string   `json:"resourceNames"`
	Root          *TreeUsage `json:"root"`
}

// Forest returns every quota tree in force, by name, with each node's
// quota and usage; nil without trees. It copies under the read lock.
func (m *Manager) Forest() []ForestTree {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if len(m.forest.trees) == 0 {
		return nil
	}
	out := make([]ForestTree, 0, len(m.forest.trees))
	for _, t := range m.forest.trees {
		names := map[string]bool{}
		for _, r := range t.cfg.ResourceNames {
			names[r] = true
		}
		var lent map[*treeNodeState]resources.Vector
		for k, c := range m.forest.charged[t.cfg.Name] {
			if s := t.start(k); s != nil && s.cfg.Name != k.node {
				if lent == nil {
					lent = map[*treeNodeState]resources.Vector{}
				}
				v := lent[s]
				v.AddUnchecked(c.usage)
				lent[s] = v
			}
		}
		var node func(*queueconfig.TreeNode) *TreeUsage
		node = func(n *queueconfig.TreeNode) *TreeUsage {
			u := &TreeUsage{Node: n.Name, Soft: n.Soft, Quota: n.Quota}
			s := t.nodes[n.Name]
			for i, x := range s.usage {
				if id := resources.ID(i); x != 0 && names[id.Name()] {
					u.Usage.Set(id, x)
				}
			}
			for i, x := range lent[s] {
				if id := resources.ID(i); x != 0 && names[id.Name()] {
					u.Lent.Set(id, x)
				}
			}
			for _, c := range n.Children {
				u.Children = append(u.Children, node(c))
			}
			return u
		}
		out = append(out, ForestTree{Name: t.cfg.Name, Label: t.cfg.Label, ResourceNames: append([]string(nil), t.cfg.ResourceNames...), Root: node(t.cfg.Root)})
	}
	return out
}
