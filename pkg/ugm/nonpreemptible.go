package ugm

import (
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
)

// LimitGuaranteed: a non-preemptible pod would take the usage of the
// non-preemptible pods of a queue over the queue's guaranteed share.
const LimitGuaranteed = "guaranteed"

// checkNonPreemptible refuses a non-preemptible req whose pods would use
// more than guaranteed capacity: on every elastic queue from from to root
// whose guaranteed names a resource, the usage of its non-preemptible pods
// plus req must stay within its guaranteed share (after scaling down), for
// the resources the guaranteed names and req asks for; and the pod's own
// queue must have a guaranteed share (without one, a queue runs only on
// lent capacity). newLeaf is the share of a dynamic leaf
// that does not exist yet (checkCreate; nil otherwise), elastic when
// newLeafElastic. Queues outside elastic subtrees, and every queue before
// the first share table, are not checked. It allocates nothing.
func (m *Manager) checkNonPreemptible(req *Request, from *queue, newLeaf *shares.Share, newLeafElastic bool) *Refusal {
	x := m.shares.Load()
	if x == nil {
		return nil
	}
	// The first elastic queue met is the pod's own (elasticity is
	// inherited downwards): it must have a guaranteed share of its own. A
	// parent's guaranteed is its children's: using it would use a
	// sibling's.
	first := true
	check := func(s *shares.Share, path string, np resources.Vector) *Refusal {
		r, named := guaranteedFits(s, path, np, req.Resources)
		if r == nil && first && !named {
			r = &Refusal{Who: WhoQueue, Name: path, Queue: path, Limit: LimitGuaranteed}
		}
		first = false
		return r
	}
	if newLeafElastic {
		if r := check(newLeaf, req.Queue, nil); r != nil {
			return r
		}
	}
	for q := from; q != nil; q = q.parent {
		if q.limits == nil || q.limits.share == nil || !q.limits.share.elastic {
			continue
		}
		if r := check(x.get(q), q.path, q.npUsage); r != nil {
			return r
		}
	}
	return nil
}

// guaranteedFits checks one queue (share s, non-preemptible usage np); it
// reports whether s names a guaranteed share.
func guaranteedFits(s *shares.Share, path string, np, req resources.Vector) (*Refusal, bool) {
	if s == nil {
		return nil, false
	}
	named := false
	for i, c := range s.Configured {
		if c <= 0 {
			continue
		}
		named = true
		id := resources.ID(i)
		r := req.Get(id)
		if r <= 0 {
			continue
		}
		if g := s.Guaranteed.Get(id); r > g-np.Get(id) {
			return &Refusal{Who: WhoQueue, Name: path, Queue: path, Limit: LimitGuaranteed, Resource: id.Name(),
				Usage: np.Get(id), Request: r, Max: g, Guaranteed: g}, true
		}
	}
	return nil, named
}
