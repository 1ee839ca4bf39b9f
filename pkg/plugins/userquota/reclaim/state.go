// Package reclaim is the victim model and choice of UserQuota's reclaim
// (docs/reclaim.md): which pods a preemptor may take, in which order, how
// much each elastic queue may lose, and, on one node, which of them go
// after the most important are given back. It knows queues, shares and
// pods, not the scheduler: the plugin runs it inside kube-scheduler's
// preemption machinery (preemption.Evaluator) through a small Node
// interface, and tests run it alone. Nothing here locks; a State is
// immutable once built and is shared by the nodes dry-run in parallel.
package reclaim

import (
	"fmt"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// queueUse is one elastic queue as reclaim sees it.
type queueUse struct {
	// usage is the queue's usage minus what pods already preempted or
	// terminating still hold (they are on their way out).
	usage resources.Vector
	share *shares.Share
	// over is, per resource, how much usage is above the runtime share
	// (positive entries only): how much the queue may lose of that
	// resource. All zero: the queue is within its share.
	over resources.Vector
}

// overBy returns the usage above the runtime share by resource, positive
// entries only (a resource the share does not bound is never over).
func overBy(usage resources.Vector, s *shares.Share) resources.Vector {
	var over resources.Vector
	for _, b := range s.Runtime {
		if d := usage.Get(b.ID) - b.Max; d > 0 {
			over.Set(b.ID, d)
		}
	}
	return over
}

// State is what one preemptor may take, computed once per PostFilter.
type State struct {
	// queue is the preemptor's leaf queue; priority its priority.
	queue    string
	priority int32
	// fence is the deepest fenced queue holding queue ("" none).
	fence string
	// reclaim: the preemptor may take pods of other queues that use more
	// than their share (its queue is elastic and a share table is in
	// force).
	reclaim bool
	// queues holds every elastic queue with a share, by path.
	queues map[string]*queueUse
	// fenceOf returns the deepest fenced queue holding a leaf queue.
	fenceOf func(queue string) string
	// need is, for each queue above the preemptor's own that is at its
	// share (PreFilter refused the pod for it), how much the victims must
	// give back there; within is the deepest of them: pods of other queues
	// are taken only inside it (elsewhere they would not help). nil: the
	// pod fits every share.
	need   map[string]resources.Vector
	within string
	// treeNeeds are the quota tree nodes the pod needs room at that pods
	// allocated there from below (borrowers of soft nodes) hold, less what
	// pods already leaving give back there (docs/forests.md, "Soft
	// nodes"): the victims must give back enough at each.
	treeNeeds []ugm.TreeNeed
}

// Queue is the preemptor's leaf queue.
func (s *State) Queue() string { return s.queue }

// Reclaims reports whether the preemptor may take pods of other queues
// (not only lower-priority pods of its own).
func (s *State) Reclaims() bool { return s.reclaim }

// Preemptor is the pod that preempts, as the quota check saw it.
type Preemptor struct {
	Queue     string
	Priority  int32
	Resources resources.Vector
	// Blocked are the queues above Queue whose runtime share the pod does
	// not fit, deepest first (ugm.Decision.Blocked).
	Blocked []string
	// TreeNeeds are the quota tree nodes borrowers must give room back at
	// (ugm.Decision.TreeNeeds).
	TreeNeeds []ugm.TreeNeed
}

// Cluster is the state reclaim decides against.
type Cluster struct {
	// Config is the partition in force (fences).
	Config *queueconfig.Partition
	// Elastic is every elastic queue with its usage and share
	// (ugm.ElasticQueues); nil when shares are off.
	Elastic map[string]ugm.ElasticQueue
	// Leaving are the charges of pods preempted or terminating: their
	// usage is on its way out.
	Leaving []ugm.Request
	// Nominated sums the requests of the other pods of a queue nominated
	// to a node and not charged yet (computed only when needed).
	Nominated func(queue string) resources.Vector
}

// NewState computes what p may take in c. The reason is not "" when it
// may not preempt at all.
func NewState(p Preemptor, c Cluster) (*State, string) {
	s := &State{
		queue:    p.Queue,
		priority: p.Priority,
		fence:    FenceFor(c.Config, p.Queue),
		fenceOf:  func(q string) string { return FenceFor(c.Config, q) },
	}
	s.treeNeeds = treeNeedsLeft(p.TreeNeeds, c.Leaving)
	if c.Elastic == nil {
		return s, ""
	}
	s.queues = make(map[string]*queueUse, len(c.Elastic))
	for path, e := range c.Elastic {
		// A copy: leaving pods are counted out of it.
		s.queues[path] = &queueUse{usage: e.Usage.Clone(), share: e.Share}
	}
	for _, l := range c.Leaving {
		for q := l.Queue; q != ""; q = queueconfig.ParentPath(q) {
			if u := s.queues[q]; u != nil {
				u.usage.SubClamped(l.Resources)
			}
		}
	}
	for _, u := range s.queues {
		u.over = overBy(u.usage, u.share)
	}
	for q := p.Queue; q != ""; q = queueconfig.ParentPath(q) {
		if s.queues[q] != nil {
			s.reclaim = true
			break
		}
	}
	if !s.reclaim {
		if len(p.Blocked) > 0 {
			return nil, "queues above its own are at their share"
		}
		return s, ""
	}
	// Pods of the same queue already nominated (they preempted and wait
	// for their room) count as its usage: without them, a burst of pods
	// would each take back room that only one of them can use.
	var nominated resources.Vector
	if c.Nominated != nil {
		nominated = c.Nominated(p.Queue)
	}
	want := p.Resources.Clone()
	if want.CanAdd(nominated) {
		want.AddUnchecked(nominated)
	}
	if !nominated.IsZero() {
		if why := s.overShare(p.Queue, want); why != "" {
			return nil, why
		}
	}
	// Queues above the pod's own that are at their share (PreFilter
	// refused it for them): the victims must give back enough in them,
	// and come from inside the deepest one.
	for _, q := range p.Blocked {
		u := s.queues[q]
		if u == nil {
			continue
		}
		var need resources.Vector
		for _, b := range u.share.Runtime {
			if p.Resources.Get(b.ID) > 0 {
				if d := u.usage.Get(b.ID) + want.Get(b.ID) - b.Max; d > 0 {
					need.Set(b.ID, d)
				}
			}
		}
		if !need.IsZero() {
			if s.need == nil {
				s.need = map[string]resources.Vector{}
				s.within = q
			}
			s.need[q] = need
		}
	}
	return s, ""
}

// overShare says why need (this pod and its queue's nominated pods) does
// not fit its own queue's share, or "" when it does: within the queue's
// guaranteed share, or within its runtime share. (The queues above it are
// the need's business.)
func (s *State) overShare(leaf string, need resources.Vector) string {
	u := s.queues[leaf]
	if u == nil || u.share.WithinGuaranteed(u.usage, need) {
		return ""
	}
	if e, over := u.share.Runtime.Exceeds(u.usage, need); over {
		return fmt.Sprintf("pods of queue %s already nominated for a node take its share: with this one %s %s+%s > %s",
			leaf, e.ID.Name(), resources.FormatValue(e.ID, e.Usage), resources.FormatValue(e.ID, e.Request), resources.FormatValue(e.ID, e.Max))
	}
	return ""
}

// CommonAncestor returns the deepest queue holding both a and b.
func CommonAncestor(a, b string) string {
	for {
		if a == b || len(b) > len(a) && b[:len(a)] == a && b[len(a)] == '.' {
			return a
		}
		if a = queueconfig.ParentPath(a); a == "" {
			return ""
		}
	}
}

// treeNeedsLeft is needs less what the leaving charges give back at each
// node (they count there until released), without the needs met so.
func treeNeedsLeft(needs []ugm.TreeNeed, leaving []ugm.Request) []ugm.TreeNeed {
	var out []ugm.TreeNeed
	for _, n := range needs {
		left := n.Need.Clone()
		for _, l := range leaving {
			if countsAt(l.Trees, n.Tree, n.Node) {
				left.SubClamped(l.Resources)
			}
		}
		if !left.IsZero() {
			n.Need = left
			out = append(out, n)
		}
	}
	return out
}

// countsAt reports whether a charge with tree part p counts at node of
// tree: its aNode is node or below it.
func countsAt(p *ugm.TreePart, tree, node string) bool {
	if p == nil {
		return false
	}
	for _, n := range p.Nodes {
		if n.Tree != tree {
			continue
		}
		for _, x := range n.Counted() {
			if x == node {
				return true
			}
		}
	}
	return false
}
