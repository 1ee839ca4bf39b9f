package ugm

import (
	"strings"

	"github.com/userquota/userquota/pkg/resources"
)

// queue is one queue of the partition as ugm knows it: a configured queue,
// or a queue that left the config but still holds usage. It carries the
// queue's aggregate usage and running applications (over all users) beside
// the limits the current config puts on it. The Manager locks.
type queue struct {
	path     string
	parent   *queue
	children map[string]*queue
	// limits is nil for a queue that is not in the current config.
	limits *queueLimits
	usage  resources.Vector
	apps   int
}

// leaf reports whether pods may run in q: a configured queue that is not a
// parent. Without a config every queue is usable.
func (q *queue) leaf(open bool) bool {
	if q.limits == nil {
		return open
	}
	return !q.limits.isParent
}

// queueTree is the registry of queues by full path. Paths are split into
// their chain of queues once, when the queue is first registered.
type queueTree struct {
	root   *queue
	byPath map[string]*queue
}

func newQueueTree() queueTree {
	root := &queue{path: "root"}
	return queueTree{root: root, byPath: map[string]*queue{"root": root}}
}

// ensure returns the queue for path, creating it and any missing parents.
// path must start with "root".
func (t *queueTree) ensure(path string) *queue {
	if q, ok := t.byPath[path]; ok {
		return q
	}
	i := strings.LastIndexByte(path, '.')
	if i < 0 {
		// Not under root: callers validate paths first; keep it harmless.
		return nil
	}
	parent := t.ensure(path[:i])
	if parent == nil {
		return nil
	}
	q := &queue{path: path, parent: parent}
	if parent.children == nil {
		parent.children = map[string]*queue{}
	}
	parent.children[path] = q
	t.byPath[path] = q
	return q
}

// prune removes q and its ancestors while they are out of the config, hold
// nothing and have no children.
func (t *queueTree) prune(q *queue) {
	for q != nil && q != t.root && q.limits == nil && q.apps == 0 && q.usage.IsZero() && len(q.children) == 0 {
		delete(q.parent.children, q.path)
		delete(t.byPath, q.path)
		q = q.parent
	}
}
