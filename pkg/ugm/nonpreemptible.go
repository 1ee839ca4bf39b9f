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

// guaranteedFits checks one queue (share s, non-preemptible usage np) in
// the resources req asks for; it reports whether s names a guaranteed
// share.
func guaranteedFits(s *shares.Share, path string, np, req resources.Vector) (*Refusal, bool) {
	var r *Refusal
	named, _ := s.EachGuaranteed(func(id resources.ID, g int64) bool {
		if x := req.Get(id); x > 0 && x > g-np.Get(id) {
			r = &Refusal{Who: WhoQueue, Name: path, Queue: path, Limit: LimitGuaranteed, Resource: id.Name(),
				Usage: np.Get(id), Request: x, Max: g, Guaranteed: g}
			return false
		}
		return true
	})
	return r, named
}
