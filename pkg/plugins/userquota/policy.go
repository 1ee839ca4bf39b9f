package userquota

import (
	"time"

	"github.com/userquota/userquota/pkg/queueconfig"
)

// queuePolicy is the preemption.* settings in force for a leaf queue.
type queuePolicy struct {
	// disabledBy is the queue whose preemption.policy: disabled applies
	// (the nearest policy set on the way to root), "" when pods may
	// preempt.
	disabledBy string
	// fence is the deepest queue on the path with preemption.policy:
	// fence ("" none).
	fence string
	// delay is the nearest preemption.delay on the way to root (0: none),
	// set on delayFrom.
	delay     time.Duration
	delayFrom string
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

// policyFor resolves the preemption settings of a leaf queue: the nearest
// preemption.policy and preemption.delay on the way to root win; every
// fence on the way is a boundary, the deepest one says which.
func policyFor(cfg *queueconfig.Partition, leaf string) queuePolicy {
	var out queuePolicy
	if cfg == nil {
		return out
	}
	policySeen, delaySeen := false, false
	for p := leaf; p != ""; p = queueconfig.ParentPath(p) {
		s := settingsAt(cfg, p, leaf)
		if !policySeen && s.Policy != "" {
			policySeen = true
			if s.Policy == queueconfig.PolicyDisabled {
				out.disabledBy = p
			}
		}
		if out.fence == "" && s.Policy == queueconfig.PolicyFence {
			out.fence = p
		}
		if !delaySeen && s.DelaySet {
			delaySeen = true
			out.delay, out.delayFrom = s.Delay, p
		}
	}
	return out
}

// fenceFor returns the deepest fenced queue holding leaf ("" none).
func fenceFor(cfg *queueconfig.Partition, leaf string) string {
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
