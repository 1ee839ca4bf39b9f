package queueconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/resources"
)

// Quota trees (docs/forests.md): besides the queue config, the ConfigMap
// may hold quota trees in MCAD's QuotaTree JSON form (seed 002), one per
// key ending in TreeKeySuffix. A pod names its node in a tree with the
// label podmeta.TreeLabel(tree name); it is admitted only when its
// request fits its node and every ancestor of it, in every tree it names,
// together with its user, group and queue limits.

// TreeKeySuffix ends the ConfigMap keys that hold a quota tree
// ("gpu-model.tree.json").
const TreeKeySuffix = ".tree.json"

// MaxConfigMapBytes bounds a ConfigMap's data, keys and values together:
// the API server's own bound (1 MiB), kept by LoadConfigMap also where no
// API server stands in front (the simulator, the CLI).
const MaxConfigMapBytes = 1 << 20

// MaxTreeDepth bounds the levels of a quota tree, root included: a check
// walks from a pod's node to the root, and each node keeps its path.
const MaxTreeDepth = 32

// maxJSONNesting bounds the nesting of a tree's JSON (a QuotaTree nests
// five deep).
const maxJSONNesting = 16

// Tree is one quota tree: MCAD's QuotaTree. Immutable once loaded.
type Tree struct {
	// Name is metadata.name, unique in the config; Source is where it was
	// read from (the ConfigMap key, or a file).
	Name, Source string
	// Label is the pod label that names the pod's node in this tree
	// (podmeta.TreeLabel(Name)).
	Label string
	// ResourceNames are spec.resourceNames in Kubernetes spelling (vcore
	// is cpu), in the order given. Only these are limited on this tree.
	ResourceNames []string
	// Root is the node whose parent is "nil".
	Root  *TreeNode
	nodes map[string]*TreeNode
}

// TreeNode is one node of a quota tree.
type TreeNode struct {
	Name   string
	Parent *TreeNode // nil for the root
	// Children sorted by name.
	Children []*TreeNode
	// Soft is the node's "hard": "false": a consumer that does not fit
	// there takes room at its parent (the seed's aNode; ugm.placeTree and
	// docs/forests.md, "Soft nodes"). The root is never soft.
	Soft bool
	// Quota bounds the usage of the node's subtree, one amount per
	// resource name of the tree, in base units.
	Quota resources.Limit
	// Path is the node and its ancestors, the node first, root last.
	Path []string
}

// Node returns the node of the tree named name, or nil.
func (t *Tree) Node(name string) *TreeNode { return t.nodes[name] }

// Len is the number of nodes.
func (t *Tree) Len() int { return len(t.nodes) }

// Walk calls fn for every node, parents before children, children by name.
func (t *Tree) Walk(fn func(*TreeNode)) {
	var walk func(*TreeNode)
	walk = func(n *TreeNode) {
		fn(n)
		for _, c := range n.Children {
			walk(c)
		}
	}
	if t.Root != nil {
		walk(t.Root)
	}
}

// Leaf reports whether pods may name the node: the seed's consumers
// belong to leaf nodes (gNodes).
func (n *TreeNode) Leaf() bool { return len(n.Children) == 0 }

// Tree returns the quota tree named name, or nil.
func (c *Config) Tree(name string) *Tree {
	for _, t := range c.Trees {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// IsTreeKey reports whether a ConfigMap key holds a quota tree.
func IsTreeKey(key string) bool {
	return strings.HasSuffix(key, TreeKeySuffix) && len(key) > len(TreeKeySuffix)
}

// LoadConfigMap is the whole validation of a queue-config ConfigMap's
// data for a scheduler that enforces partition: the queue config under key
// (Load), and the quota trees under every key ending in TreeKeySuffix,
// all of it or nothing. Other keys are not read. The data, keys and
// values, must fit MaxConfigMapBytes. The scheduler and the config webhook
// both load a ConfigMap with it.
func LoadConfigMap(data map[string]string, key, partition string) (*Config, error) {
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	if size > MaxConfigMapBytes {
		return nil, &Errors{List: []Error{{Msg: fmt.Sprintf("the ConfigMap's data is %d bytes, more than a ConfigMap may hold (%d, 1 MiB)", size, MaxConfigMapBytes)}}}
	}
	queues, ok := data[key]
	if !ok {
		return nil, &Errors{List: []Error{{Path: key, Msg: "missing: the key holds the queue config"}}}
	}
	trees := map[string]string{}
	for k, v := range data {
		if IsTreeKey(k) {
			trees[k] = v
		}
	}
	return LoadWithTrees([]byte(queues), trees, partition)
}

// LoadWithTrees is Load plus quota trees: trees maps where each tree was
// read from (a ConfigMap key, a file) to its JSON. Every problem of the
// queue config and of every tree is reported, the queue config's first,
// then the trees' by source; nothing is loaded unless all is valid. Without
// trees it is Load. An empty partition asks for none (Parse: the
// simulator picks its partition itself).
func LoadWithTrees(queues []byte, trees map[string]string, partition string) (*Config, error) {
	var cfg *Config
	var err error
	if partition == "" {
		cfg, err = Parse(queues)
	} else {
		cfg, err = Load(queues, partition)
	}
	if len(trees) == 0 {
		return cfg, err
	}
	var list []Error
	if err != nil {
		var errs *Errors
		if !errors.As(err, &errs) {
			return nil, err
		}
		list = append(list, errs.List...)
	}
	sources := make([]string, 0, len(trees))
	for s := range trees {
		sources = append(sources, s)
	}
	sort.Strings(sources)
	var parsed []*Tree
	var notices []string
	first := map[string]string{}
	for _, s := range sources {
		t, ns, terrs := ParseTree(s, []byte(trees[s]))
		if terrs != nil {
			list = append(list, terrs.List...)
			continue
		}
		if prev, dup := first[t.Name]; dup {
			list = append(list, Error{Path: treeWhere(s, t.Name), Msg: fmt.Sprintf("a second tree named %q: %s has one already (tree names are unique: each is the pod label %s)", t.Name, prev, t.Label)})
			continue
		}
		first[t.Name] = s
		parsed = append(parsed, t)
		notices = append(notices, ns...)
	}
	if len(list) > 0 {
		if len(list) > maxReported {
			more := len(list) - maxReported
			list = append(list[:maxReported:maxReported], Error{Msg: fmt.Sprintf("... and %d more problems", more)})
		}
		return nil, &Errors{List: list}
	}
	sort.Slice(parsed, func(i, j int) bool { return parsed[i].Name < parsed[j].Name })
	// The checksum says whether anything changed: the queue config and
	// every tree, with where each was read from.
	h := sha256.New()
	h.Write(queues)
	for _, s := range sources {
		fmt.Fprintf(h, "\x00%s\x00%s", s, trees[s])
	}
	out := *cfg
	out.Checksum = hex.EncodeToString(h.Sum(nil))
	out.Trees = parsed
	out.Notices = append(append([]string(nil), cfg.Notices...), notices...)
	return &out, nil
}

// treeWhere names a tree in messages: its source and, once known, its name.
func treeWhere(source, name string) string {
	if name == "" {
		return source
	}
	return fmt.Sprintf("%s (tree %q)", source, name)
}

// treeProblem is one problem of a tree before its name is known.
type treeProblem struct {
	line int
	node string // "" when not about one node
	msg  string
}

// treeParse collects a tree's problems.
type treeParse struct {
	problems []treeProblem
}

func (p *treeParse) add(line int, node, format string, args ...any) {
	if len(p.problems) < maxKept {
		p.problems = append(p.problems, treeProblem{line: line, node: node, msg: fmt.Sprintf(format, args...)})
	}
}

// ParseTree parses and validates one quota tree read from source: strict
// JSON in the seed's QuotaTree form (unknown keys, a key given twice,
// trailing commas and values of the wrong kind are errors; "hard" is a
// boolean or the string "true" or "false"; the root's parent is "nil";
// quotas are Kubernetes quantities, strings or numbers). It returns the
// tree and its notices, or every problem, each naming the source, the
// tree and the node.
func ParseTree(source string, data []byte) (*Tree, []string, *Errors) {
	p := &treeParse{}
	name, t := "", (*Tree)(nil)
	func() {
		defer func() {
			if r := recover(); r != nil {
				p.add(0, "", "internal error while parsing the tree: %v", r)
				t = nil
			}
		}()
		v, err := parseJSON(data, maxJSONNesting)
		if err != nil {
			p.add(err.line, "", "%s", err.msg)
			return
		}
		name, t = p.tree(v)
	}()
	if len(p.problems) > 0 || t == nil {
		where := treeWhere(source, name)
		errs := &Errors{}
		for _, x := range p.problems {
			msg := x.msg
			if x.node != "" {
				msg = fmt.Sprintf("node %q: %s", shorten(x.node), msg)
			}
			errs.List = append(errs.List, Error{Line: x.line, Path: where, Msg: msg})
		}
		if len(errs.List) == 0 {
			errs.List = append(errs.List, Error{Path: where, Msg: "not a valid quota tree"})
		}
		return nil, nil, errs
	}
	t.Source = source
	var notices []string
	for _, r := range t.ResourceNames {
		if !PodResource(r) {
			notices = append(notices, fmt.Sprintf("%s: resource %s is not one a pod requests (not cpu, memory, ephemeral-storage, pods, hugepages-* or a domain-qualified extended resource): the scheduler charges nothing of it; simulator traces may request it", treeWhere(source, t.Name), r))
		}
	}
	return t, notices, nil
}

// PodResource reports whether a resource name is one the scheduler
// charges a pod for: cpu, memory, ephemeral-storage, pods, hugepages-*, or
// an extended resource (domain-qualified, as nvidia.com/gpu).
func PodResource(name string) bool {
	switch resources.CanonicalName(name) {
	case resources.CPU, resources.Memory, resources.Pods, "ephemeral-storage":
		return true
	}
	return strings.HasPrefix(name, "hugepages-") || strings.Contains(name, "/")
}

// rawNode is a node as read, before the tree is built.
type rawNode struct {
	name, parent string
	soft         bool
	quota        qtys
	line         int
	ok           bool
}

// tree reads and validates the QuotaTree document v; it returns the
// tree's name (as soon as it is known) and the tree, nil on a problem.
func (p *treeParse) tree(v *jsonValue) (string, *Tree) {
	top, ok := p.object(v, "", "the document", "a QuotaTree object")
	if !ok {
		return "", nil
	}
	var name string
	var resNames []string
	var resLine int
	var nodes []*rawNode
	var nodesLine int
	fields := map[string]bool{}
	for _, m := range top {
		fields[m.key] = true
		switch m.key {
		case "kind":
			if s, ok := p.str(m.val, "", "kind"); ok && s != "QuotaTree" {
				p.add(m.val.line, "", "kind is %q: expected \"QuotaTree\"", shorten(s))
			}
		case "metadata":
			md, ok := p.object(m.val, "", "metadata", "an object with the tree's name")
			if !ok {
				continue
			}
			for _, x := range md {
				if x.key != "name" {
					p.add(x.line, "", "metadata: unknown key %q (a tree's metadata has only name)", shorten(x.key))
					continue
				}
				s, ok := p.str(x.val, "", "metadata.name")
				if !ok {
					continue
				}
				switch errs := validation.IsQualifiedName(podmeta.TreeLabel(s)); {
				case s == "":
					p.add(x.val.line, "", "metadata.name is empty")
				case strings.Contains(s, "/") || len(errs) > 0:
					p.add(x.val.line, "", "metadata.name %q is not a valid tree name: pods name their node with the label %s<name>, so it must be a label name (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)", shorten(s), podmeta.LabelTreePrefix)
				default:
					name = s
				}
			}
		case "spec":
			spec, ok := p.object(m.val, "", "spec", "an object with resourceNames and nodes")
			if !ok {
				continue
			}
			for _, x := range spec {
				switch x.key {
				case "resourceNames":
					resNames, resLine = p.resourceNames(x.val), x.line
				case "nodes":
					nodes, nodesLine = p.nodes(x.val), x.line
				default:
					p.add(x.line, "", "spec: unknown key %q (a tree's spec has resourceNames and nodes)", shorten(x.key))
				}
			}
			if !fieldIn(spec, "resourceNames") {
				p.add(m.line, "", "spec.resourceNames is missing: the resources the tree limits")
			}
			if !fieldIn(spec, "nodes") {
				p.add(m.line, "", "spec.nodes is missing")
			}
		default:
			p.add(m.line, "", "unknown key %q (a QuotaTree has kind, metadata and spec)", shorten(m.key))
		}
	}
	for _, k := range []string{"kind", "metadata", "spec"} {
		if !fields[k] {
			p.add(v.line, "", "%s is missing", k)
		}
	}
	if fields["metadata"] && name == "" && len(p.problems) == 0 {
		p.add(v.line, "", "metadata.name is missing")
	}
	if len(p.problems) > 0 || resNames == nil || nodes == nil {
		return name, nil
	}
	_ = resLine
	_ = nodesLine
	return name, p.build(name, resNames, nodes)
}

func fieldIn(obj []jsonMember, key string) bool {
	for _, m := range obj {
		if m.key == key {
			return true
		}
	}
	return false
}

// resourceNames reads spec.resourceNames: a non-empty list of distinct
// resource names.
func (p *treeParse) resourceNames(v *jsonValue) []string {
	if v.kind != jsonArray {
		p.add(v.line, "", "spec.resourceNames: expected a list of resource names, got %s", v.describe())
		return nil
	}
	if len(v.arr) == 0 {
		p.add(v.line, "", "spec.resourceNames is empty: a tree limits at least one resource")
		return nil
	}
	out := []string{}
	ok := true
	for i, x := range v.arr {
		s, good := p.str(x, "", fmt.Sprintf("spec.resourceNames[%d]", i))
		if !good {
			ok = false
			continue
		}
		if s == "" || len(validation.IsQualifiedName(s)) > 0 {
			p.add(x.line, "", "spec.resourceNames[%d]: %q is not a valid resource name", i, shorten(s))
			ok = false
			continue
		}
		c := resources.CanonicalName(s)
		for _, y := range out {
			if y == c {
				p.add(x.line, "", "spec.resourceNames[%d]: %s is given twice (vcore is another name for cpu)", i, c)
				ok = false
			}
		}
		out = append(out, c)
	}
	if !ok {
		return nil
	}
	return out
}

// nodes reads spec.nodes: an object of node name to node.
func (p *treeParse) nodes(v *jsonValue) []*rawNode {
	obj, ok := p.object(v, "", "spec.nodes", "an object of node names to nodes")
	if !ok {
		return nil
	}
	if len(obj) == 0 {
		p.add(v.line, "", "spec.nodes is empty: a tree has at least its root")
		return nil
	}
	out := []*rawNode{}
	for _, m := range obj {
		n := &rawNode{name: m.key, line: m.line, ok: true}
		switch {
		case m.key == "":
			p.add(m.line, "", "spec.nodes: a node with an empty name")
			n.ok = false
		case m.key == "nil":
			p.add(m.line, m.key, "\"nil\" is not a node name: it marks the root's parent")
			n.ok = false
		case len(validation.IsValidLabelValue(m.key)) > 0:
			p.add(m.line, m.key, "not a valid node name: pods name their node as a label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)")
			n.ok = false
		}
		fields, good := p.object(m.val, m.key, "the node", "an object with parent, hard and quota")
		if !good {
			continue
		}
		seen := map[string]bool{}
		for _, f := range fields {
			seen[f.key] = true
			switch f.key {
			case "parent":
				s, good := p.str(f.val, m.key, "parent")
				switch {
				case !good:
					n.ok = false
				case s == "":
					p.add(f.val.line, m.key, "parent is empty: name the parent node, or \"nil\" for the root")
					n.ok = false
				default:
					n.parent = s
				}
			case "hard":
				switch {
				case f.val.kind == jsonBool:
					n.soft = !f.val.b
				case f.val.kind == jsonString && (f.val.s == "true" || f.val.s == "false"):
					n.soft = f.val.s == "false"
				default:
					p.add(f.val.line, m.key, "hard: expected true or false (a boolean or the string \"true\" or \"false\"), got %s", f.val.describe())
					n.ok = false
				}
			case "quota":
				q, good := p.quota(f.val, m.key)
				n.quota = q
				n.ok = n.ok && good
			default:
				p.add(f.line, m.key, "unknown key %q (a node has parent, hard and quota)", shorten(f.key))
				n.ok = false
			}
		}
		if !seen["parent"] {
			p.add(m.line, m.key, "parent is missing: name the parent node, or \"nil\" for the root")
			n.ok = false
		}
		if !seen["hard"] {
			p.add(m.line, m.key, "hard is missing: \"true\" (consumers take room only here) or \"false\" (they may borrow from an ancestor)")
			n.ok = false
		}
		if !seen["quota"] {
			p.add(m.line, m.key, "quota is missing")
			n.ok = false
		}
		out = append(out, n)
	}
	return out
}

// quota reads a node's quota: resource names to quantities.
func (p *treeParse) quota(v *jsonValue, node string) (qtys, bool) {
	obj, ok := p.object(v, node, "quota", "an object of resource names to quantities")
	if !ok {
		return nil, false
	}
	var out qtys
	for _, m := range obj {
		var s string
		switch m.val.kind {
		case jsonString, jsonNumber:
			s = m.val.s
		default:
			p.add(m.val.line, node, "quota.%s: expected a quantity (a string such as \"10\" or \"64Gi\", or a number), got %s", shorten(m.key), m.val.describe())
			ok = false
			continue
		}
		name := resources.CanonicalName(m.key)
		if _, dup := out.get(name); dup {
			p.add(m.line, node, "quota.%s: %s is given twice (vcore is another name for cpu)", shorten(m.key), name)
			ok = false
			continue
		}
		x, err := resources.ParseQuantity(name, s)
		switch {
		case err == nil:
			out = append(out, qty{name: name, v: x, raw: s})
		case errors.Is(err, resources.ErrNegative):
			p.add(m.val.line, node, "quota.%s: negative quantity %q", shorten(m.key), shorten(s))
			ok = false
		case errors.Is(err, resources.ErrOverflow):
			p.add(m.val.line, node, "quota.%s: quantity %q is too large (out of range in base units)", shorten(m.key), shorten(s))
			ok = false
		default:
			p.add(m.val.line, node, "quota.%s: invalid quantity %q", shorten(m.key), shorten(s))
			ok = false
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, ok
}

// build checks the nodes as a tree (one root, parents that exist, no
// cycle, a bounded depth, quotas in the tree's resources and within the
// parent's) and builds it.
func (p *treeParse) build(name string, resNames []string, raw []*rawNode) *Tree {
	declared := map[string]bool{}
	for _, r := range resNames {
		declared[r] = true
	}
	byName := map[string]*rawNode{}
	var roots []*rawNode
	for _, n := range raw {
		byName[n.name] = n
		for _, q := range n.quota {
			if !declared[q.name] {
				p.add(n.line, n.name, "quota names %s, a resource the tree does not declare (spec.resourceNames: %s)", q.name, strings.Join(resNames, ", "))
				n.ok = false
			}
		}
		for _, r := range resNames {
			if _, ok := n.quota.get(r); !ok {
				p.add(n.line, n.name, "quota has no %s: every node gives a quota for each of spec.resourceNames (%s)", r, strings.Join(resNames, ", "))
				n.ok = false
			}
		}
		if n.parent == "nil" {
			roots = append(roots, n)
		}
	}
	switch {
	case len(roots) == 0:
		p.add(0, "", "no root: exactly one node has parent \"nil\"")
	case len(roots) > 1:
		names := make([]string, len(roots))
		for i, r := range roots {
			names[i] = fmt.Sprintf("%q", r.name)
		}
		p.add(roots[1].line, roots[1].name, "a second root: parent \"nil\" (nodes %s all have it; a tree has one root)", strings.Join(names, ", "))
	}
	for _, n := range raw {
		if n.parent == "" || n.parent == "nil" {
			continue
		}
		if n.parent == n.name {
			p.add(n.line, n.name, "its parent is itself")
			continue
		}
		if byName[n.parent] == nil {
			p.add(n.line, n.name, "parent %q is not a node of the tree", shorten(n.parent))
		}
	}
	if len(p.problems) > 0 {
		return nil
	}
	// Every node reaches the root within MaxTreeDepth levels, or it is on
	// (or under) a cycle or too deep.
	for _, n := range raw {
		depth, seen := 1, map[string]bool{n.name: true}
		for x := n; x.parent != "nil"; x = byName[x.parent] {
			if seen[x.parent] {
				p.add(n.line, n.name, "its parents loop back to %q: a tree has no cycles", x.parent)
				break
			}
			seen[x.parent] = true
			if depth++; depth > MaxTreeDepth {
				p.add(n.line, n.name, "more than %d levels from the root", MaxTreeDepth)
				break
			}
		}
	}
	if len(p.problems) > 0 {
		return nil
	}
	for _, n := range raw {
		if n.parent == "nil" {
			continue
		}
		par := byName[n.parent]
		if mine, theirs, over := n.quota.above(par.quota); over {
			p.add(n.line, n.name, "quota %s=%s is above its parent %q's %s: a node's quota bounds its whole subtree, so a child may not have more than its parent",
				mine.name, mine.raw, par.name, theirs.raw)
		}
	}
	if len(p.problems) > 0 {
		return nil
	}
	t := &Tree{Name: name, Label: podmeta.TreeLabel(name), ResourceNames: resNames, nodes: make(map[string]*TreeNode, len(raw))}
	for _, n := range raw {
		t.nodes[n.name] = &TreeNode{Name: n.name, Soft: n.soft && n.parent != "nil", Quota: n.quota.limit()}
	}
	for _, n := range raw {
		tn := t.nodes[n.name]
		if n.parent == "nil" {
			t.Root = tn
			continue
		}
		tn.Parent = t.nodes[n.parent]
		tn.Parent.Children = append(tn.Parent.Children, tn)
	}
	t.Walk(func(n *TreeNode) {
		sort.Slice(n.Children, func(i, j int) bool { return n.Children[i].Name < n.Children[j].Name })
		n.Path = append([]string{n.Name}, parentPath(n)...)
	})
	return t
}

func parentPath(n *TreeNode) []string {
	if n.Parent == nil {
		return nil
	}
	return n.Parent.Path
}

// object expects v to be a JSON object.
func (p *treeParse) object(v *jsonValue, node, what, want string) ([]jsonMember, bool) {
	if v.kind != jsonObject {
		p.add(v.line, node, "%s: expected %s, got %s", what, want, v.describe())
		return nil, false
	}
	return v.obj, true
}

// str expects v to be a JSON string.
func (p *treeParse) str(v *jsonValue, node, what string) (string, bool) {
	if v.kind != jsonString {
		p.add(v.line, node, "%s: expected a string, got %s", what, v.describe())
		return "", false
	}
	return v.s, true
}
