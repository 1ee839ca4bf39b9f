// Package userquota is the UserQuota scheduler plugin: it charges every pod
// of this scheduler to its user, group and queues in a User Group Manager
// and refuses a pod that would take any of them over a limit of the
// YuniKorn queue config held in a ConfigMap.
//
// Flow: PreFilter checks (no commit) and stores the pod's request in the
// cycle state; Reserve commits through the pod ledger; Unreserve rolls back
// what Reserve committed. The plugin's own pod informer handler accounts
// bound pods it did not reserve (restart, failover), releases pods that
// finish or go away and then activates the refused pods a release can admit.
//
// Lock order: Plugin.mu (refused pods) is never held while calling the
// ledger; the ledger's lock is taken before ugm's.
package userquota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// Name is the plugin's name in the scheduler configuration.
const Name = "UserQuota"

// stateKey is where PreFilter leaves the pod's request for Reserve.
const stateKey fwk.StateKey = "PreFilter" + Name

// reservedKey marks, per cycle, that Reserve committed the pod.
const reservedKey fwk.StateKey = "Reserve" + Name

// syncTimeout bounds how long start-up waits for the config ConfigMap.
const syncTimeout = 2 * time.Minute

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
)

// Plugin is the UserQuota plugin.
type Plugin struct {
	handle fwk.Handle
	args   Args
	// profile is this scheduler profile's name: only pods naming it are ours.
	profile string
	ledger  *ledger.Ledger
	ugm     *ugm.Manager

	podsSynced func() bool

	mu      sync.Mutex
	refused map[string]*refusedPod // by pod UID

	// frees counts releases and config changes. PreFilter reads it before
	// deciding: if it moved by the time a refusal is recorded, the
	// activation that followed the free may have run before the pod was
	// recorded, so PreFilter activates the pod itself.
	frees atomic.Uint64

	// Elastic quotas (shares.go): pending and capacity feed the recompute,
	// which sharesKick wakes and sharesMu serializes; scaled is what the
	// last recompute reported as scaled down (under sharesMu).
	pending    *pendingPods
	capacity   *capacity
	sharesKick chan struct{}
	sharesMu   sync.Mutex
	scaled     map[string]bool
	// capacitySynced reports whether the capacity handlers saw every node
	// and pod; sharesSynced that a table was computed after that.
	capacitySynced func() bool
	sharesSynced   atomic.Bool

	// Reclaim (reclaim.go): the PostFilter's preemption machinery and
	// bookkeeping.
	evaluator *preemption.Evaluator
	reclaim   *reclaimBook

	// auditSuspects are the differences the last audit saw (audit.go),
	// under auditMu.
	auditMu       sync.Mutex
	auditSuspects map[string]bool
}

// preFilterState is the pod's request as PreFilter computed it. Immutable.
type preFilterState struct {
	req ugm.Request
	// blocked is set when PreFilter refused the pod only because queues
	// above its own are at their runtime share (deepest first): queues in
	// them use more than their share, and the PostFilter may take the room
	// back (reclaim.go). Reserve never runs in such a cycle.
	blocked []string
}

// Clone returns the state itself: it is never modified.
func (s *preFilterState) Clone() fwk.StateData { return s }

type reservedState struct{}

func (s *reservedState) Clone() fwk.StateData { return s }

// New is the plugin factory registered with the scheduler.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := decodeArgs(obj)
	if err != nil {
		return nil, err
	}
	m := ugm.New()
	pl := &Plugin{
		handle:  h,
		args:    args,
		profile: h.ProfileName(),
		ledger:  ledger.New(m),
		ugm:     m,
		refused: map[string]*refusedPod{},

		pending:    newPendingPods(),
		capacity:   newCapacity(),
		sharesKick: make(chan struct{}, 1),
		reclaim:    newReclaimBook(),
	}
	pl.evaluator = pl.newEvaluator()
	// The config must be in force before running pods are accounted: the
	// group of an application is resolved from it at its first pod.
	if err := pl.startConfigInformer(ctx); err != nil {
		return nil, err
	}
	if err := pl.startPodHandler(); err != nil {
		return nil, err
	}
	if err := pl.startCapacity(); err != nil {
		return nil, err
	}
	go pl.runShares(ctx)
	go pl.runAudit(ctx)
	if err := pl.startObservability(ctx); err != nil {
		return nil, err
	}
	return pl, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// Ledger returns the plugin's pod ledger (for the REST API and tests).
func (pl *Plugin) Ledger() *ledger.Ledger { return pl.ledger }

// Shares returns the share table in force (nil: shares are off).
func (pl *Plugin) Shares() *shares.Table { return pl.ugm.Shares() }

// Config returns the queue config in force, or nil.
func (pl *Plugin) Config() *queueconfig.Config { return pl.ugm.InForce().Config }

// partition returns the partition in force, or nil.
func (pl *Plugin) partition() *queueconfig.Partition { return pl.ugm.InForce().Partition }

// elastic reports whether the config in force has elastic queues.
func (pl *Plugin) elastic() bool { return pl.ugm.InForce().Elastic }

// PreFilter computes the pod's request and checks it against every limit,
// committing nothing: when no node fits the framework never calls
// Unreserve, so a charge taken here could leak.
func (pl *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	logger := klog.FromContext(ctx)
	if !pl.podsSynced() {
		// No decision on partial state: wait for the running pods to be
		// accounted (only at start-up).
		if !cache.WaitForCacheSync(ctx.Done(), pl.podsSynced) {
			return nil, fwk.AsStatus(errors.New("pod informer of UserQuota has not synced"))
		}
	}
	pl.ensureShares(ctx, logger)
	frees := pl.frees.Load()
	// Placement and check against one config, even during a reload.
	d := pl.ugm.Decide(pl.placer(pod), true)
	if d.Err != nil && d.Placed && pl.frees.Load() != frees {
		// Room was freed while deciding: decide again, once, rather than
		// refuse and wait for the activation.
		frees = pl.frees.Load()
		d = pl.ugm.Decide(pl.placer(pod), true)
	}
	if d.Err != nil && !d.Placed {
		return nil, pl.refuse(logger, pod, nil, d.Err, frees)
	}
	req, err := d.Request, d.Err
	if err != nil {
		logger.V(5).Info("Pod refused by quota", "pod", klog.KObj(pod), "reason", err.Error())
		if len(d.Blocked) > 0 {
			// Unschedulable, not Unresolvable: the PostFilter may make room
			// by taking back what other queues borrowed.
			state.Write(stateKey, &preFilterState{req: req, blocked: d.Blocked})
			return nil, pl.refuseWith(fwk.Unschedulable, logger, pod, &req, err, frees)
		}
		return nil, pl.refuse(logger, pod, &req, err, frees)
	}
	if d.Elastic && pl.pending.setUserBound(pod.UID, false) {
		pl.kickShares()
	}
	state.Write(stateKey, &preFilterState{req: req})
	return nil, nil
}

// refuse records a PreFilter refusal for requeueing and returns its status.
// frees is the free counter read before the decision.
func (pl *Plugin) refuse(logger klog.Logger, pod *v1.Pod, req *ugm.Request, err error, frees uint64) *fwk.Status {
	return pl.refuseWith(fwk.UnschedulableAndUnresolvable, logger, pod, req, err, frees)
}

// refuseWith is refuse with the status code to return.
func (pl *Plugin) refuseWith(code fwk.Code, logger klog.Logger, pod *v1.Pod, req *ugm.Request, err error, frees uint64) *fwk.Status {
	metrics.RecordRefusal(err)
	pl.remember(pod, req, err)
	// A pod over a user or group limit cannot use a share: it is not
	// demand until a later decision says otherwise.
	var r *ugm.Refusal
	userBound := errors.As(err, &r) && (r.Who == ugm.WhoUser || r.Who == ugm.WhoGroup)
	if pl.elastic() && pl.pending.setUserBound(pod.UID, userBound) {
		pl.kickShares()
	}
	if pl.frees.Load() != frees {
		// Room may have been freed after the decision: retry at once.
		pl.activate(logger, func(rp *refusedPod) bool { return rp.pod.UID == pod.UID })
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
		metrics.RecordRefusal(err)
		pl.remember(pod, &s.req, err)
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	pl.forget(string(pod.UID))
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
		pl.activateFor(klog.FromContext(ctx), c.Request)
	}
}
