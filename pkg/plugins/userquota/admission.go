package userquota

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/ugm"
)

// stateKey is where PreFilter leaves the pod's request for Reserve.
const stateKey fwk.StateKey = "PreFilter" + Name

// reservedKey marks, per cycle, that Reserve committed the pod.
const reservedKey fwk.StateKey = "Reserve" + Name

// preFilterState is the pod's request as PreFilter computed it. Immutable.
type preFilterState struct {
	req ugm.Request
	// needs is set when PreFilter refused the pod only for room others
	// borrowed, which the PostFilter may take back (nil otherwise: one
	// pointer, so that a pod that fits pays for nothing more). Reserve
	// never runs in such a cycle.
	*needs
}

// needs is what a pod refused for room lent out needs given back.
type needs struct {
	// blocked: queues above its own are at their runtime share (deepest
	// first): queues in them use more than their share (reclaim.go).
	blocked []string
	// treeNeeds: quota tree nodes are full with pods allocated there from
	// below them (borrowers of soft nodes) that may give the room back
	// (docs/forests.md, "Soft nodes").
	treeNeeds []ugm.TreeNeed
}

// blockedQueues is needs' blocked (none without needs).
func (s *preFilterState) blockedQueues() []string {
	if s.needs == nil {
		return nil
	}
	return s.blocked
}

// treeNeedsOf is needs' treeNeeds (none without needs).
func (s *preFilterState) treeNeedsOf() []ugm.TreeNeed {
	if s.needs == nil {
		return nil
	}
	return s.treeNeeds
}

// Clone returns the state itself: it is never modified.
func (s *preFilterState) Clone() fwk.StateData { return s }

type reservedState struct{}

func (s *reservedState) Clone() fwk.StateData { return s }

// PreFilter computes the pod's request and checks it against every limit,
// committing nothing: when no node fits the framework never calls
// Unreserve, so a charge taken here could leak.
func (pl *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	logger := klog.FromContext(ctx)
	if !pl.podsSynced() {
		// No decision on partial state: wait for the running pods to be
		// accounted (only at start-up).
		if !pl.waitPodsSynced(ctx) {
			return nil, fwk.AsStatus(errors.New("pod informer of UserQuota has not synced"))
		}
	}
	pl.elastic.ensure(ctx, logger)
	frees := pl.held.freed()
	if pl.enforcesGang(pod) && !pl.ugm.Admitted(string(pod.UID)) {
		// A gang's pod without room (a config change dropped it): it
		// passes only on its gang's reservation, never alone.
		if req, err := pl.admitPod(pod, nil); err != nil {
			return nil, pl.refuse(fwk.UnschedulableAndUnresolvable, logger, pod, req, err, frees)
		}
	}
	// Placement and check against one config, even during a reload; the
	// placement PreEnqueue made when it still holds (placed.go).
	place := pl.placedFor(pod)
	d := pl.ugm.Decide(string(pod.UID), place, true)
	if d.Err != nil && d.Placed && pl.held.freed() != frees {
		// Room was freed while deciding: decide again, once, rather than
		// refuse and wait for the let-in.
		frees = pl.held.freed()
		d = pl.ugm.Decide(string(pod.UID), place, true)
	}
	if d.Err != nil && !d.Placed {
		return nil, pl.refuse(fwk.UnschedulableAndUnresolvable, logger, pod, nil, d.Err, frees)
	}
	req, err := d.Request, d.Err
	if err != nil {
		logger.V(5).Info("Pod refused by quota", "pod", klog.KObj(pod), "reason", err.Error())
		if len(d.Blocked) > 0 || len(d.TreeNeeds) > 0 {
			// Unschedulable, not Unresolvable: the PostFilter may make room
			// by taking back what other queues, or borrowers at quota tree
			// nodes, borrowed. Not held.
			state.Write(stateKey, &preFilterState{req: req, needs: &needs{blocked: d.Blocked, treeNeeds: d.TreeNeeds}})
			metrics.RecordRefusal(err)
			pl.elastic.decided(pod.UID, false)
			pl.reclaim.addBlocked(pod, frees)
			if now := pl.held.freed(); now != frees {
				// Room freed while deciding: its activation may have
				// run before the pod was recorded.
				pl.reclaim.activateBlocked(logger, now)
			}
			return nil, fwk.NewStatus(fwk.Unschedulable, err.Error())
		}
		return nil, pl.refuse(fwk.UnschedulableAndUnresolvable, logger, pod, &req, err, frees)
	}
	pl.elastic.decided(pod.UID, false)
	state.Write(stateKey, &preFilterState{req: req})
	return nil, nil
}

// refuse holds a pod refused in its scheduling cycle (its room, if it
// held any, goes) and returns the status with code. The queue puts it
// among the unschedulable pods (or, when events came during the cycle,
// through PreEnqueue, which holds it); either way only a let-in moves it
// (its hints say QueueSkip). frees is the free counter read before the
// decision: when room was freed since, it is let in again at once.
func (pl *Plugin) refuse(code fwk.Code, logger klog.Logger, pod *v1.Pod, req *ugm.Request, err error, frees uint64) *fwk.Status {
	metrics.RecordRefusal(err)
	// A pod over a user or group limit cannot use a share: it is not
	// demand until a later decision says otherwise.
	var r *ugm.Refusal
	pl.elastic.decided(pod.UID, errors.As(err, &r) && (r.Who == ugm.WhoUser || r.Who == ugm.WhoGroup))
	pl.holdPod(logger, pod, req, err, true)
	pl.dropRoom(logger, pod.UID)
	if pl.held.freed() != frees {
		if p := pl.held.get(pod.UID); p != nil {
			pl.letIn(logger, []*hold.Pod{p}, false)
		}
	}
	return fwk.NewStatus(code, err.Error())
}

// PreFilterExtensions returns nil: quota does not depend on which pods run
// on a node, so preemption's what-if pod removals do not change the answer.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func getPreFilterState(state fwk.CycleState) (*preFilterState, error) {
	c, err := state.Read(stateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycle state: %w", stateKey, err)
	}
	s, ok := c.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v cannot be converted to *preFilterState", c)
	}
	return s, nil
}

// Reserve commits the pod's charge. It is refused only if something changed
// since PreFilter (another pod took the room).
func (pl *Plugin) Reserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	err = pl.ledger.Allocate(string(pod.UID), s.req)
	switch {
	case err == nil:
		state.Write(reservedKey, &reservedState{})
		metrics.RecordIncrease(metrics.SourceReserve)
	case errors.Is(err, ledger.ErrAlreadyAllocated):
		// Already charged (an informer event saw it bound first): the
		// charge is not this cycle's, so Unreserve must not release it.
	default:
		return pl.refuse(fwk.Unschedulable, klog.FromContext(ctx), pod, &s.req, err, pl.held.freed())
	}
	pl.held.forget(pod.UID)
	pl.status.binding()
	klog.FromContext(ctx).V(5).Info("Pod charged", "pod", klog.KObj(pod), "node", nodeName, "user", s.req.User, "queue", s.req.Queue)
	return nil
}

// Unreserve rolls back exactly what Reserve committed in this cycle. The
// framework calls it for every Reserve plugin when a later step fails, also
// when this plugin's Reserve never ran or refused.
func (pl *Plugin) Unreserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) {
	if _, err := state.Read(reservedKey); err != nil {
		return
	}
	state.Delete(reservedKey)
	c, released, err := pl.ledger.Release(string(pod.UID))
	if err != nil {
		klog.FromContext(ctx).Error(err, "Releasing an unreserved pod found an inconsistency", "pod", klog.KObj(pod))
	}
	if released {
		metrics.RecordDecrease(metrics.SourceUnreserve)
		pl.onRelease(klog.FromContext(ctx), c.Request)
	}
}
