package ugm

import (
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
)

// ElasticQueue is an elastic queue's usage beside its share, as reclaim
// (the scheduler's preemption) sees it.
type ElasticQueue struct {
	// Usage is a copy of the queue's usage (its subtree's).
	Usage resources.Vector
	// Share is the queue's entry in the table in force.
	Share *shares.Share
}

// ElasticQueues returns every elastic queue that has a share in the table
// in force, by path, with a copy of its usage: nil when no table is in
// force. It copies under the read lock.
func (m *Manager) ElasticQueues() map[string]ElasticQueue {
	x := m.shares.Load()
	if x == nil {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]ElasticQueue, len(m.queues.byPath))
	for path, q := range m.queues.byPath {
		if q.limits == nil || q.limits.share == nil || !q.limits.share.elastic {
			continue
		}
		if s := x.get(q); s != nil {
			out[path] = ElasticQueue{Usage: q.usage.Clone(), Share: s}
		}
	}
	return out
}

// shareNeeds collects, for CheckReclaim, the queues above the pod's own
// whose runtime share it does not fit.
type shareNeeds struct {
	// leaf is the pod's own queue (nil: one to create): a refusal by its
	// own share stays a refusal.
	leaf    *queue
	blocked []string
	// trees: a tree's node that borrowers could give room back at does
	// not refuse either (Decide); treeNeeds records them.
	trees     bool
	treeNeeds []TreeNeed
}

// treeNeedsOf is where checkTrees records the tree needs of soft, nil
// when it refuses instead.
func treeNeedsOf(soft *shareNeeds) *[]TreeNeed {
	if soft == nil || !soft.trees {
		return nil
	}
	return &soft.treeNeeds
}

// CheckReclaim is Check for a pod that may preempt to take back lent
// capacity (docs/reclaim.md): it decides req as Check does, except that
// the runtime share of a queue above the pod's own does not refuse it. It
// returns those queues, deepest first: the pod fits everything else, and
// fits them once queues in them that use more than their share give room
// back. A nil error with no queues means Check would admit req.
func (m *Manager) CheckReclaim(req *Request) ([]string, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	soft := &shareNeeds{}
	if _, _, _, err := m.check(req, soft); err != nil {
		return nil, err
	}
	return soft.blocked, nil
}
