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
}

// node is a tracker's usage on one queue, including everything below it.
type node struct {
	q      *queue
	parent *node
	usage  resources.Vector
	apps   int
	// limit is the limit in force for this tracker on q; refreshed on every
	// config change so the check path reads it directly.
	limit *limitEntry
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

// path returns the node of leaf, creating it and missing ancestors.
func (t *tracker) path(leaf *queue) *node {
	if n, ok := t.nodes[leaf]; ok {
		return n
	}
	n := &node{q: leaf, limit: t.limitFor(leaf)}
	t.nodes[leaf] = n
	if leaf.parent != nil {
		n.parent = t.path(leaf.parent)
	}
	return n
}

// refreshLimits re-reads every node's limit after a config change.
func (t *tracker) refreshLimits() {
	for q, n := range t.nodes {
		n.limit = t.limitFor(q)
	}
}
