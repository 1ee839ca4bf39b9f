package ugm

import (
	"strings"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
)

// shareSpec is one queue's input to the share computation, compiled once
// per config load.
type shareSpec struct {
	// elastic: the runtime share is enforced on this queue.
	elastic    bool
	guaranteed shares.Amounts
	max        shares.Amounts
	weight     map[resources.ID]int64
	noLend     bool
}

func compileShare(g resources.Vector, m resources.Limit, s queueconfig.Sharing) *shareSpec {
	sp := &shareSpec{elastic: s.Elastic, weight: s.Weight, noLend: s.NoLend}
	for i, x := range g {
		if x != 0 {
			if sp.guaranteed == nil {
				sp.guaranteed = shares.Amounts{}
			}
			sp.guaranteed[resources.ID(i)] = shares.Amount{Value: x}
		}
	}
	for id, p := range s.GuaranteedPct {
		if sp.guaranteed == nil {
			sp.guaranteed = shares.Amounts{}
		}
		sp.guaranteed[id] = shares.Amount{Percent: p}
	}
	for _, b := range m {
		if sp.max == nil {
			sp.max = shares.Amounts{}
		}
		sp.max[b.ID] = shares.Amount{Value: b.Max}
	}
	for id, p := range s.MaxPct {
		if sp.max == nil {
			sp.max = shares.Amounts{}
		}
		sp.max[id] = shares.Amount{Percent: p}
	}
	return sp
}

// shareIndex is a share table in force with each queue's share looked up
// once, so that the check path finds it by pointer rather than by hashing
// the queue's path at every level.
type shareIndex struct {
	table   *shares.Table
	byQueue map[*queue]*shares.Share
}

// get returns q's share; a queue created after the table was put in force
// is looked up by path.
func (x *shareIndex) get(q *queue) *shares.Share {
	if s, ok := x.byQueue[q]; ok {
		return s
	}
	return x.table.Get(q.path)
}

// Shares returns the share table in force (nil: none yet).
func (m *Manager) Shares() *shares.Table {
	if x := m.shares.Load(); x != nil {
		return x.table
	}
	return nil
}

// SetShares puts a computed share table in force (nil: none): later checks
// of elastic queues read it. It takes the read lock to index the table by
// queue and swaps it in atomically: the check path never waits for a
// recompute.
func (m *Manager) SetShares(t *shares.Table) {
	if t == nil {
		m.shares.Store(nil)
		return
	}
	x := &shareIndex{table: t}
	m.mu.RLock()
	x.byQueue = make(map[*queue]*shares.Share, len(m.queues.byPath))
	for path, q := range m.queues.byPath {
		if s := t.Get(path); s != nil {
			x.byQueue[q] = s
		}
	}
	m.mu.RUnlock()
	m.shares.Store(x)
}

// ComputeShares computes the runtime shares of the whole queue tree from
// the usage ugm tracks plus pending, the requests of pods waiting for each
// leaf queue (keyed by full path; a queue that does not exist yet counts as
// a dynamic queue under its deepest existing ancestor), and the cluster's
// capacity (a resource it does not name is unbounded). It does not put the
// table in force; see SetShares. It holds the read lock while it copies
// the tree, not while it computes.
func (m *Manager) ComputeShares(pending map[string]resources.Vector, capacity resources.Limit) *shares.Table {
	return shares.Compute(m.shareTree(pending), capacity)
}

// shareTree copies the queue tree into the computation's input.
func (m *Manager) shareTree(pending map[string]resources.Vector) *shares.Queue {
	m.mu.RLock()
	defer m.mu.RUnlock()
	nodes := make(map[string]*shares.Queue, len(m.queues.byPath))
	var build func(q *queue) *shares.Queue
	build = func(q *queue) *shares.Queue {
		n := &shares.Queue{Path: q.path}
		fillSpec(n, q.limits)
		nodes[q.path] = n
		if len(q.children) == 0 {
			n.Demand = q.usage.Clone()
		}
		for _, c := range q.children {
			n.Children = append(n.Children, build(c))
		}
		return n
	}
	root := build(m.queues.root)
	for path, v := range pending {
		n := nodes[path]
		if n == nil {
			n = m.pendingQueue(nodes, path)
			if n == nil {
				continue
			}
		}
		if len(n.Children) > 0 {
			// A parent: pods cannot run in it; the check refuses them.
			continue
		}
		n.Demand.AddUnchecked(v)
	}
	return root
}

// pendingQueue adds the input nodes for a queue that does not exist yet
// and that pods are waiting for: a dynamic leaf with the child template in
// force for it and the dynamic parents between. nil when no queue can be
// created there.
func (m *Manager) pendingQueue(nodes map[string]*shares.Queue, path string) *shares.Queue {
	if path != "root" && !strings.HasPrefix(path, "root.") {
		return nil
	}
	anc := m.queues.deepest(path)
	if anc.childLimits == nil {
		return nil
	}
	parent := nodes[anc.path]
	for p := parent.Path; ; {
		next := path
		if i := strings.IndexByte(path[len(p)+1:], '.'); i >= 0 {
			next = path[:len(p)+1+i]
		}
		n := nodes[next]
		if n == nil {
			n = &shares.Queue{Path: next}
			if next == path {
				fillSpec(n, anc.childLimits)
			}
			nodes[next] = n
			parent.Children = append(parent.Children, n)
		}
		if next == path {
			return n
		}
		parent, p = n, next
	}
}

func fillSpec(n *shares.Queue, ql *queueLimits) {
	if ql == nil || ql.share == nil {
		return
	}
	n.Guaranteed, n.Max = ql.share.guaranteed, ql.share.max
	n.Weight, n.NoLend = ql.share.weight, ql.share.noLend
}

// checkShare refuses req when it would take the queue at path (share s,
// holding usage) over its runtime share. Admissions do not count: a
// runtime share moves with demand, and room admitted under a larger share
// would keep older pods out.
func checkShare(s *shares.Share, path string, usage, req resources.Vector) *Refusal {
	if s == nil {
		return nil
	}
	e, over := s.Runtime.Exceeds(usage, req)
	if !over {
		return nil
	}
	return &Refusal{Who: WhoQueue, Name: path, Queue: path, Limit: LimitShare, Resource: e.ID.Name(),
		Usage: e.Usage, Request: e.Request, Max: e.Max, Guaranteed: s.Guaranteed.Get(e.ID)}
}

// sharesFor returns the share index the check of req uses: nil when none
// is in force or when req keeps its leaf queue (share leaf, holding usage)
// within its guaranteed share.
func (m *Manager) sharesFor(leaf func(*shareIndex) *shares.Share, usage, req resources.Vector) *shareIndex {
	x := m.shares.Load()
	if x != nil && leaf(x).WithinGuaranteed(usage, req) {
		return nil
	}
	return x
}
