package userquota

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// sharesDebounce is how long the recompute waits after the first change
// it is asked for, so that a burst of pod and node events costs one
// recompute.
const sharesDebounce = 100 * time.Millisecond

// ReasonSharesScaled is the event reason when the children's guaranteed
// shares of a queue do not fit in its share (capacity was lost).
const ReasonSharesScaled = "GuaranteedScaledDown"

// kickShares asks for a share recompute (a no-op without elastic queues).
func (pl *Plugin) kickShares() {
	if !pl.elastic() {
		return
	}
	select {
	case pl.sharesKick <- struct{}{}:
	default:
	}
}

// runShares recomputes the shares after changes, debounced, until ctx ends.
func (pl *Plugin) runShares(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName(Name)
	for {
		select {
		case <-ctx.Done():
			return
		case <-pl.sharesKick:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(sharesDebounce):
		}
		// Changes during the wait are in this recompute.
		select {
		case <-pl.sharesKick:
		default:
		}
		pl.recomputeShares(logger)
	}
}

// ensureShares computes a table synchronously, once every running pod,
// node and foreign pod has been seen, when shares are on and no such table
// is in force yet: no pod is decided on a table computed from partial
// state at start-up. PreFilter calls it after the pod handler synced.
func (pl *Plugin) ensureShares(ctx context.Context, logger klog.Logger) {
	if !pl.elastic() || pl.sharesSynced.Load() && pl.ugm.Shares() != nil {
		return
	}
	if pl.capacitySynced != nil && !pl.capacitySynced() {
		cache.WaitForCacheSync(ctx.Done(), pl.capacitySynced)
	}
	pl.recomputeShares(logger)
	pl.sharesSynced.Store(true)
}

// recomputeShares computes the shares from the usage, the pending pods and
// the capacity, puts them in force, and activates the pods refused by a
// share when any share changed. Lock order: sharesMu, then the pending
// pods' and the capacity's locks (released before ugm is read), then ugm.
func (pl *Plugin) recomputeShares(logger klog.Logger) {
	pl.sharesMu.Lock()
	defer pl.sharesMu.Unlock()
	if !pl.elastic() {
		pl.ugm.SetShares(nil)
		return
	}
	pending := pl.pendingByQueue()
	start := time.Now()
	t := pl.ugm.ComputeShares(pending, pl.capacity.total())
	old := pl.ugm.Shares()
	pl.ugm.SetShares(t)
	logger.V(5).Info("Shares recomputed", "queues", len(t.All()), "duration", time.Since(start))
	pl.reportScaling(logger, t)
	if runtimesChanged(old, t) {
		// A refusal racing this swap sees frees move and retries itself.
		pl.frees.Add(1)
		pl.activate(logger, func(rp *refusedPod) bool {
			var r *ugm.Refusal
			return errors.As(rp.reason, &r) && r.Limit == ugm.LimitShare
		})
		// A queue may now be over its share: pods that found nothing to
		// preempt try again.
		pl.activateWaiters(logger)
	}
}

// pendingByQueue is the demand of the pending pods by leaf queue path, as
// the share computation counts it (the REST queues endpoint shows it).
func (pl *Plugin) pendingByQueue() map[string]resources.Vector {
	cfg := pl.partition()
	return pl.pending.byQueue(func(pod *v1.Pod) (ugm.Request, error) { return pl.podRequest(pod, cfg, pl.queues()) },
		func(uid types.UID) bool { _, live := pl.ledger.Get(string(uid)); return live })
}

// runtimesChanged reports whether any queue's runtime share differs.
func runtimesChanged(old, t *shares.Table) bool {
	if old == nil || len(old.All()) != len(t.All()) {
		return true
	}
	for i, s := range t.All() {
		o := old.All()[i]
		if o.Path != s.Path || len(o.Runtime) != len(s.Runtime) {
			return true
		}
		for j, b := range s.Runtime {
			if o.Runtime[j] != b {
				return true
			}
		}
	}
	return false
}

// reportScaling logs and raises an event on the config ConfigMap once when
// a queue's children's guaranteed shares stop fitting in its share, and
// logs once when they fit again.
func (pl *Plugin) reportScaling(logger klog.Logger, t *shares.Table) {
	now := map[string]bool{}
	for _, s := range t.Scaled {
		key := s.Parent + " " + s.Resource.Name()
		now[key] = true
		if pl.scaled[key] {
			continue
		}
		msg := fmt.Sprintf("the guaranteed shares of the children of %s add up to %s %d, above its share %d: scaled down in proportion until capacity returns",
			s.Parent, s.Resource.Name(), s.Sum, s.Share)
		logger.Info("Guaranteed shares scaled down", "queue", s.Parent, "resource", s.Resource.Name(), "sum", s.Sum, "share", s.Share)
		ref := &v1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: pl.args.ConfigMapNamespace, Name: pl.args.ConfigMapName}
		pl.handle.EventRecorder().Eventf(ref, nil, v1.EventTypeWarning, ReasonSharesScaled, "ComputeShares", "%s", msg)
	}
	for key := range pl.scaled {
		if !now[key] {
			logger.Info("Guaranteed shares fit again", "queueAndResource", key)
		}
	}
	pl.scaled = now
}
