package ugm

import (
	"fmt"

	"github.com/userquota/userquota/pkg/errs"
	"github.com/userquota/userquota/pkg/queueconfig"
)

// InForce is the config a Manager enforces, put in force whole: no reader
// ever sees the limits of one config beside the placement rules or the
// elastic flag of another. Immutable.
type InForce struct {
	// Config is the whole parsed config; nil when the partition was set
	// alone (SetConfig) or no config is in force.
	Config *queueconfig.Config
	// Partition is the partition enforced (nil: none; nothing is limited).
	Partition *queueconfig.Partition
	// Elastic: some queue or child template of Partition shares (elastic
	// quotas are on: shares are computed and checked).
	Elastic bool
}

// noConfig is what is in force before any config.
var noConfig = &InForce{}

// InForce returns the config in force. It does not lock.
func (m *Manager) InForce() *InForce {
	if c := m.inForce.Load(); c != nil {
		return c
	}
	return noConfig
}

// Enforce puts the partition named partition of cfg in force with cfg (see
// SetConfig). A config without that partition is an error and changes
// nothing.
func (m *Manager) Enforce(cfg *queueconfig.Config, partition string) error {
	p := cfg.Partition(partition)
	if p == nil {
		return fmt.Errorf("the queue config has no partition %q", partition)
	}
	m.apply(&InForce{Config: cfg, Partition: p, Elastic: elasticPartition(p)})
	return nil
}

// SetConfig puts the partition's limits in force in one step. Usage already
// tracked is kept, also on queues the new config no longer has (they stay
// until empty, unlimited, and refuse new pods); new limits apply to new
// increases. Groups resolved for running applications do not change.
// A nil partition removes every limit.
func (m *Manager) SetConfig(p *queueconfig.Partition) {
	m.apply(&InForce{Partition: p, Elastic: elasticPartition(p)})
}

func (m *Manager) apply(in *InForce) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := in.Partition
	m.partition = p
	m.inForce.Store(in)
	var trees []*queueconfig.Tree
	if in.Config != nil {
		trees = in.Config.Trees
	}
	m.forest.apply(trees)
	for _, q := range m.queues.byPath {
		if !q.dynamic || p == nil {
			q.limits, q.dynamic = nil, false
		}
		q.childLimits = nil
	}
	if p != nil {
		// Parents before children, so a child template is inherited.
		p.Walk(func(cq *queueconfig.Queue) {
			q := m.queues.ensure(cq.Path)
			q.limits, q.dynamic = compileQueue(cq), false
			switch {
			case !cq.IsParent:
			case cq.ChildTemplate != nil:
				q.childLimits = compileTemplate(cq.ChildTemplate)
			case q.parent != nil && q.parent.childLimits != nil:
				q.childLimits = q.parent.childLimits
			default:
				q.childLimits = openTemplate
			}
		})
		m.queues.refreshDynamic(m.queues.root)
	}
	for _, q := range m.queues.byPath {
		if len(q.children) == 0 {
			m.queues.prune(q)
		}
	}
	for _, t := range m.users {
		t.refreshLimits()
	}
	for _, t := range m.groups {
		t.refreshLimits()
	}
}

// elasticPartition reports whether any queue or child template of p has
// shares on.
func elasticPartition(p *queueconfig.Partition) bool {
	found := false
	if p != nil {
		p.Walk(func(q *queueconfig.Queue) {
			if q.Sharing.Elastic || q.ChildTemplate != nil && q.ChildTemplate.Sharing.Elastic {
				found = true
			}
		})
	}
	return found
}

// Queues answers placement's one question about the queues ugm holds
// outside the config (placement.Queues).
type Queues interface {
	DynamicQueue(path string) (exists, leaf, draining bool)
}

// Placer turns a pod into a Request against the config in force (its
// partition's placement rules and ACLs). It runs under the Manager's read
// lock: it must not call the Manager; queues answers for it instead.
type Placer func(in *InForce, queues Queues) (Request, error)

// Decision is one admission decision, made against one config.
type Decision struct {
	// Request is what the Placer made of the pod (zero when Placed is
	// false).
	Request Request
	// Placed: the Placer made a Request; Err, if any, is the check's.
	Placed bool
	// Err is why the pod may not be admitted now: the Placer's error, or
	// the check's *Refusal, *QueueError or *AppConflict. nil: it fits.
	Err error
	// Blocked is set, with reclaim asked for, when Err is the runtime
	// share of queues above the pod's own and nothing else stands in its
	// way: those queues, deepest first (CheckReclaim).
	Blocked []string
	// TreeNeeds is set, with reclaim asked for, when Err is a quota
	// tree's node that pods allocated there from below (borrowers of soft
	// nodes) hold, and preempting some of them would let the pod in:
	// what each such node needs given back (docs/forests.md, "Soft
	// nodes"). Blocked may be set with it.
	TreeNeeds []TreeNeed
	// Elastic is the config's flag (InForce.Elastic).
	Elastic bool
	// Group is the group the request's application is tracked against
	// when it fits ("" for none, or when it does not): the one group
	// limit it takes from (Refusal.CountsFor).
	Group string
}

// Decide places the pod key and checks its request in one read-locked
// step, so placement and limits come from the same config even while a new
// one is put in force. Room held by admissions counts, the pod's own
// aside. With reclaim, a share refusal above the pod's own queue is looked
// into as CheckReclaim does. Nothing is changed.
func (m *Manager) Decide(key string, place Placer, reclaim bool) Decision {
	m.mu.RLock()
	defer m.mu.RUnlock()
	in := m.InForce()
	d := Decision{Elastic: in.Elastic}
	req, err := place(in, unlockedQueues{m})
	if err != nil {
		d.Err = err
		return d
	}
	if len(m.forest.trees) > 0 && req.Trees != nil {
		req.Trees = m.heldRefs(&req, m.adm.byKey[key])
	}
	d.Request, d.Placed = req, true
	if d.Err = validate(&req); d.Err != nil {
		return d
	}
	own := m.adm.byKey[key]
	// The handle the admission resolved; a copy, as this runs under the
	// read lock beside other deciders.
	var h *Handle
	if own != nil {
		hc := own.h
		h = &hc
	}
	_, _, d.Group, d.Err = m.checkFor(&req, own, nil, h)
	if !reclaim || d.Err == nil {
		return d
	}
	r, ok := errs.As[*Refusal](d.Err)
	if !ok {
		return d
	}
	share := in.Elastic && r.Limit == LimitShare && r.Queue != req.Queue
	if !share && r.Who != WhoTree {
		return d
	}
	soft := &shareNeeds{trees: r.Who == WhoTree}
	if _, _, _, err := m.checkFor(&req, own, soft, h); err == nil {
		d.Blocked, d.TreeNeeds = soft.blocked, soft.treeNeeds
	}
	return d
}

// unlockedQueues is the Manager as placement.Queues for a caller that
// holds its lock.
type unlockedQueues struct{ m *Manager }

func (u unlockedQueues) DynamicQueue(path string) (exists, leaf, draining bool) {
	return u.m.dynamicQueue(path)
}
