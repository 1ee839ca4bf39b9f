package ugm

import "github.com/userquota/userquota/pkg/resources"

// kind says whether a tracker tracks a user or a group.
type kind uint8

const (
	userKind kind = iota
	groupKind
)

func (k kind) String() string {
	if k == groupKind {
		return "group"
	}
	return "user"
}

// tracker holds the usage of one user or one group: a sparse tree of nodes
// mirroring the queues it uses, root first. It has no lock: the Manager
// locks. A tracker exists while it has running applications.
type tracker struct {
	kind  kind
	name  string
	nodes map[*queue]*node
	// last is the leaf node of the most recent new application: most
	// users run in one queue, so the check path usually finds its leaf
	// without a map lookup. Written only under the Manager's write lock.
	last *node
}

// node is a tracker's usage on one queue, including everything below it.
type node struct {
	q      *queue
	parent *node
	// limit is the limit in force for this tracker on q; refreshed on every
	// config change so the check path reads it directly.
	limit *limitEntry
	usage resources.Vector
	apps  int
	// ends counts the applications that ended with this node as their
	// user leaf (Handle.valid).
	ends uint64
	// inline backs usage for the common resources (cpu, memory, pods,
	// ephemeral-storage) so a node is one allocation and one cache region.
	inline [4]int64
}

func newTracker(k kind, name string) *tracker {
	return &tracker{kind: k, name: name, nodes: map[*queue]*node{}}
}

// limitFor resolves the limit of this tracker on q from the config.
func (t *tracker) limitFor(q *queue) *limitEntry {
	if t.kind == userKind {
		return q.limits.userLimit(t.name)
	}
	return q.limits.groupLimit(t.name)
}

// leafNode returns the node of leaf, or nil, preferring the last-used one.
func (t *tracker) leafNode(leaf *queue) *node {
	if t.last != nil && t.last.q == leaf {
		return t.last
	}
	return t.nodes[leaf]
}

// path returns the node of leaf, creating it and missing ancestors. The
// missing nodes are allocated together, so a new path is one allocation
// and its nodes sit next to each other in memory.
func (t *tracker) path(leaf *queue) *node {
	if n := t.leafNode(leaf); n != nil {
		return n
	}
	missing := 0
	var found *node
	for q := leaf; q != nil; q = q.parent {
		if found = t.nodes[q]; found != nil {
			break
		}
		missing++
	}
	block := make([]node, missing)
	q := leaf
	for i := range block {
		n := &block[i]
		n.q, n.limit = q, t.limitFor(q)
		n.usage = n.inline[:0]
		t.nodes[q] = n
		if i+1 < len(block) {
			n.parent = &block[i+1]
		} else {
			n.parent = found
		}
		q = q.parent
	}
	return &block[0]
}

// refreshLimits re-reads every node's limit after a config change.
func (t *tracker) refreshLimits() {
	for q, n := range t.nodes {
		n.limit = t.limitFor(q)
	}
}
