package ugm

import (
	"strings"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
)

// queue is one queue of the partition as ugm knows it: a configured queue,
// a dynamic queue a placement rule created, or a queue that left the config
// but still holds usage. It carries the queue's aggregate usage and running
// applications (over all users) beside the limits the current config puts
// on it. The Manager locks.
type queue struct {
	path     string
	parent   *queue
	children map[string]*queue
	// limits is nil for a queue that is not in the current config and is
	// not dynamic: it drains (takes no new pods) and goes when empty.
	limits *queueLimits
	// dynamic marks a queue created by a placement rule. A dynamic leaf's
	// limits are the child template in force for it (childLimits of its
	// parent); a dynamic parent's are dynamicParent. It goes when empty.
	dynamic bool
	// childLimits are the limits of a dynamic leaf created below this
	// queue: the nearest child template on the way to root (openTemplate
	// when there is none). nil when no queue may be created below it: a
	// leaf, or a queue out of the config.
	childLimits *queueLimits
	usage       resources.Vector
	// npUsage is the part of usage held by non-preemptible pods.
	npUsage resources.Vector
	apps    int
}

// Shared, immutable limits of queues without limits of their own.
var (
	// openTemplate is the child template of a parent with none on its
	// path: a dynamic leaf limited only by its ancestors.
	openTemplate = &queueLimits{}
	// dynamicParent is a dynamic queue created as a parent of a dynamic
	// leaf (root.a.b created for root.a.b.c).
	dynamicParent = &queueLimits{isParent: true}
)

// compileTemplate turns a child template into the limits of the dynamic
// leaves it applies to: its max and maxapplications, and its share
// settings (guaranteed, max, quota.* properties).
func compileTemplate(t *queueconfig.ChildTemplate) *queueLimits {
	return &queueLimits{max: t.Max, maxApps: t.MaxApplications, share: compileShare(t.Guaranteed, t.Max, t.Sharing)}
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

// deepest returns the deepest queue that exists on the way from path up
// to root, path itself excluded. path must start with "root.".
func (t *queueTree) deepest(path string) *queue {
	for {
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			return t.root
		}
		path = path[:i]
		if q, ok := t.byPath[path]; ok {
			return q
		}
	}
}

// createDynamic returns the queue for path, creating it as a dynamic leaf,
// and its missing parents as dynamic parents, below the deepest existing
// queue, which must take dynamic children (childLimits set).
func (t *queueTree) createDynamic(path string) *queue {
	if q, ok := t.byPath[path]; ok {
		return q
	}
	parent := t.deepest(path)
	for {
		next := path
		if i := strings.IndexByte(path[len(parent.path)+1:], '.'); i >= 0 {
			next = path[:len(parent.path)+1+i]
		}
		q := &queue{path: next, parent: parent, dynamic: true, childLimits: parent.childLimits}
		if next == path {
			q.limits = parent.childLimits
			q.childLimits = nil
		} else {
			q.limits = dynamicParent
		}
		if parent.children == nil {
			parent.children = map[string]*queue{}
		}
		parent.children[next] = q
		t.byPath[next] = q
		if next == path {
			return q
		}
		parent = q
	}
}

// prune removes q and its ancestors while they are dynamic or out of the
// config, hold nothing and have no children.
func (t *queueTree) prune(q *queue) {
	for q != nil && q != t.root && (q.limits == nil || q.dynamic) && q.apps == 0 && q.usage.IsZero() && len(q.children) == 0 {
		delete(q.parent.children, q.path)
		delete(t.byPath, q.path)
		q = q.parent
	}
}

// refreshDynamic re-derives the limits of the dynamic queues below q, top
// down, after a config change: a dynamic leaf takes the child template now
// in force for it; one whose parent no longer takes dynamic children (it
// became a leaf or left the config) drains like a queue that left the
// config.
func (t *queueTree) refreshDynamic(q *queue) {
	for _, c := range q.children {
		if c.dynamic {
			switch {
			case q.childLimits == nil:
				c.dynamic, c.limits, c.childLimits = false, nil, nil
			case c.limits.isParent:
				c.limits, c.childLimits = dynamicParent, q.childLimits
			default:
				c.limits = q.childLimits
			}
		}
		t.refreshDynamic(c)
	}
}
