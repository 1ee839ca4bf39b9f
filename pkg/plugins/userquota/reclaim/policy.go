package reclaim

import (
	"time"

	"github.com/userquota/userquota/pkg/queueconfig"
)

// Policy is the preemption.* settings in force for a leaf queue.
type Policy struct {
	// DisabledBy is the queue whose preemption.policy: disabled applies
	// (the nearest policy set on the way to root), "" when pods may
	// preempt.
	DisabledBy string
	// Fence is the deepest queue on the path with preemption.policy:
	// fence ("" none).
	Fence string
	// Delay is the nearest preemption.delay on the way to root (0: none),
	// set on DelayFrom.
	Delay     time.Duration
	DelayFrom string
}

// settingsAt returns what the queue at path sets itself. A queue not in the
// config (dynamic) takes its child template's settings when it is the leaf
// the pod runs in: the nearest child template of its configured ancestors,
// as ugm does for its limits.
func settingsAt(cfg *queueconfig.Partition, path, leaf string) queueconfig.Preemption {
	if q := cfg.Queue(path); q != nil {
		return q.Preemption
	}
	if path != leaf {
		return queueconfig.Preemption{}
	}
	for p := queueconfig.ParentPath(path); p != ""; p = queueconfig.ParentPath(p) {
		if q := cfg.Queue(p); q != nil && q.ChildTemplate != nil {
			return q.ChildTemplate.Preemption
		}
	}
	return queueconfig.Preemption{}
}

// PolicyFor resolves the preemption settings of a leaf queue: the nearest
// preemption.policy and preemption.delay on the way to root win; every
// fence on the way is a boundary, the deepest one says which.
func PolicyFor(cfg *queueconfig.Partition, leaf string) Policy {
	var out Policy
	if cfg == nil {
		return out
	}
	policySeen, delaySeen := false, false
	for p := leaf; p != ""; p = queueconfig.ParentPath(p) {
		s := settingsAt(cfg, p, leaf)
		if !policySeen && s.Policy != "" {
			policySeen = true
			if s.Policy == queueconfig.PolicyDisabled {
				out.DisabledBy = p
			}
		}
		if out.Fence == "" && s.Policy == queueconfig.PolicyFence {
			out.Fence = p
		}
		if !delaySeen && s.DelaySet {
			delaySeen = true
			out.Delay, out.DelayFrom = s.Delay, p
		}
	}
	return out
}

// FenceFor returns the deepest fenced queue holding leaf ("" none).
func FenceFor(cfg *queueconfig.Partition, leaf string) string {
	if cfg == nil {
		return ""
	}
	for p := leaf; p != ""; p = queueconfig.ParentPath(p) {
		if settingsAt(cfg, p, leaf).Policy == queueconfig.PolicyFence {
			return p
		}
	}
	return ""
}
