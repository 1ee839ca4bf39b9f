package simulator

import (
	"slices"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// Elastic quotas (docs/simulator.md): the capacity and shares ops, the
// share recompute before every decision, and the pending pods of
// Options.Requeue.

// pendingPod is a pod an allocate line asked for that is not admitted:
// while it is decided, and with Options.Requeue while it waits.
type pendingPod struct {
	name string
	// line is the allocate line, placed again on every attempt (a config
	// line may move the pod); req is its request without the queue.
	line *traceLine
	req  ugm.Request
	// queue is where the last placement put the pod; "" when placement
	// failed (a pod without a queue is no queue's demand).
	queue string
	// demand: the pod's charge counts in its queue's demand. False after
	// a user or group refusal (the pod cannot use a share) until a later
	// attempt is refused for another reason.
	demand bool
}

// addPending keeps a refused pod waiting, after the others (trace order).
func (s *sim) addPending(p *pendingPod) {
	if s.pendingByName == nil {
		s.pendingByName = map[string]*pendingPod{}
	}
	s.pending = append(s.pending, p)
	s.pendingByName[p.name] = p
}

// dropPending stops p waiting.
func (s *sim) dropPending(p *pendingPod) {
	delete(s.pendingByName, p.name)
	if i := slices.Index(s.pending, p); i >= 0 {
		s.pending = slices.Delete(s.pending, i, i+1)
	}
}

// recompute computes the shares from ugm's usage, the pending pods that
// count as demand, asking (the pod being decided, nil for none: it counts
// whatever its last refusal was) and the capacity, and puts them in force,
// as the scheduler's recompute does before the pods it decides. Shares are
// enforced only on elastic queues, so a config without quota.sharing
// decides as before.
func (s *sim) recompute(asking *pendingPod) {
	pending := map[string]resources.Vector{}
	add := func(p *pendingPod) {
		if p.queue == "" {
			return
		}
		v := pending[p.queue]
		v.AddUnchecked(p.req.Resources)
		pending[p.queue] = v
	}
	for _, p := range s.pending {
		if p.demand || p == asking {
			add(p)
		}
	}
	if asking != nil && s.pendingByName[asking.name] != asking {
		add(asking)
	}
	m := s.ledger.Manager()
	m.SetShares(m.ComputeShares(pending, s.capacity))
}

// retry gives the pending pods another chance after a release, config or
// capacity line: passes over them in trace order, shares recomputed before
// each attempt, until a pass admits none. Each admission prints its allow
// line; a pod refused again prints nothing and keeps its place.
func (s *sim) retry() error {
	for {
		admitted := false
		for i := 0; i < len(s.pending); {
			p := s.pending[i]
			out, res := s.try(p)
			if res != refusedPod {
				// Admitted (or, which cannot happen, live already).
				s.dropPending(p)
				if err := s.enc.Encode(out); err != nil {
					return err
				}
				admitted = true
				continue
			}
			i++
		}
		if !admitted {
			return nil
		}
	}
}

// refreshPending places every pending pod again after a config line, so
// that their demand counts where the new config puts them from the first
// recompute on.
func (s *sim) refreshPending() {
	for _, p := range s.pending {
		req := p.req
		placed, err := s.place(&req, p.line)
		p.queue = ""
		if err == nil {
			p.queue = placed.Queue
		}
	}
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

// pendingNames lists the pods waiting, in trace order, for the snapshot.
func (s *sim) pendingNames() *[]string {
	if !s.opts.Requeue {
		return nil
	}
	names := make([]string, 0, len(s.pending))
	for _, p := range s.pending {
		names = append(names, p.name)
	}
	return &names
}
