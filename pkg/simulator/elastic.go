package simulator

import (
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
)

// Elastic quotas (docs/simulator.md): the capacity and shares ops, and the
// share recompute before every decision.

// recompute computes the shares (computeShares) and puts them in force, as
// the scheduler's recompute does before the pods it decides. Shares are
// enforced only on elastic queues, so a config without quota.sharing
// decides as before.
//
// A decision (asking set) under a config without elastic queues skips it:
// no share binds there, and the recompute walks every held pod, which
// made a let-in pass over a backlog quadratic (the flood of
// testdata/traces/fair-flood-*: 1,000 held pods).
func (s *sim) recompute(asking *pendingPod) {
	m := s.ledger.Manager()
	if asking != nil && !m.InForce().Elastic {
		return
	}
	m.SetShares(s.computeShares(asking))
}

// computeShares computes the shares from ugm's usage, the held pods that
// count as demand, asking (the pod being decided, nil for none: it counts
// whatever its last refusal was) and the capacity.
func (s *sim) computeShares(asking *pendingPod) *shares.Table {
	pending := map[string]resources.Vector{}
	add := func(p *pendingPod) {
		if p.queue == "" {
			return
		}
		v := pending[p.queue]
		v.AddUnchecked(p.req.Resources)
		pending[p.queue] = v
	}
	// Sums of non-negative amounts: the map's order does not matter.
	for _, p := range s.pendingByName {
		if p.demand || p == asking {
			add(p)
		}
	}
	if asking != nil && s.pendingByName[asking.name] != asking {
		add(asking)
	}
	return s.ledger.Manager().ComputeShares(pending, s.capacity)
}

// capacitySet is the capacity op: the cluster's capacity from now on,
// replacing the last one. It is not a pod: no pods: 1 is added, so pods
// stay unbounded unless the line names them. {} makes every resource
// unbounded again.
func (s *sim) capacitySet(n int, l *traceLine) any {
	if l.Resources == nil {
		return lineError{Line: n, Error: `capacity: missing "resources" (Kubernetes quantities, e.g. {"cpu":"64","memory":"256Gi"})`}
	}
	c, err := resources.ParseLimit(l.Resources)
	if err != nil {
		return lineError{Line: n, Error: "capacity: resources: " + err.Error()}
	}
	s.capacity = c
	return capacityLine{Capacity: "applied"}
}

// sharesShow is the shares op: the shares recomputed now (with the pods
// pending that count as demand), every queue sorted by path.
func (s *sim) sharesShow() any {
	s.recompute(nil)
	all := s.ledger.Manager().Shares().All()
	out := sharesLine{Shares: make([]shareEntry, 0, len(all))}
	for _, sh := range all {
		out.Shares = append(out.Shares, shareEntry{
			Queue:      sh.Path,
			Guaranteed: finite(sh.Guaranteed),
			Max:        bounded(sh.Max),
			Demand:     sh.Demand,
			Runtime:    bounded(sh.Runtime),
		})
	}
	return out
}

// finite returns v without its unbounded entries (root's guaranteed is the
// capacity, unbounded for the resources the capacity does not name).
func finite(v resources.Vector) resources.Vector {
	out := v.Clone()
	for i, x := range out {
		if x == shares.Unlimited {
			out[i] = 0
		}
	}
	return out
}

// bounded returns the bounded resources of l by name, zeros included.
func bounded(l resources.Limit) map[string]int64 {
	m := make(map[string]int64, len(l))
	for _, b := range l {
		if b.Max != shares.Unlimited {
			m[b.ID.Name()] = b.Max
		}
	}
	return m
}
