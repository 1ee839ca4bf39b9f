package userquota

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/metrics"
)

// auditEvery is how often the ledger is compared with the pod informer's
// store; a difference is repaired when two audits in a row see it. A
// handler event lost on its way (a client-go or API server bug; the
// scheduler's own cache has been bitten by such) would otherwise leave a
// charge for a pod that is gone, or none for one that runs, until the next
// restart. Each repair is logged and counted (userquota_decreases_total /
// increases_total with source "audit"), so a non-zero count is a bug report.
const auditEvery = 10 * time.Second

// runAudit audits every auditEvery until ctx ends.
func (pl *Plugin) runAudit(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName(Name)
	wait.UntilWithContext(ctx, func(context.Context) {
		if pl.podsSynced() {
			pl.audit(logger)
		}
	}, auditEvery)
}

// audit releases the charges of pods the informer's store no longer has
// (by UID) or has finished, and charges the bound pods it has without one.
// The store runs ahead of the handlers (it is updated before they are
// told), so a difference may be an event on its way: only one seen by two
// audits in a row is repaired (suspects holds the previous audit's). It
// reads the ledger before the store: a charge taken after that (a Reserve)
// is not judged on an older list. Releasing and charging are idempotent
// with the handler's own events, and a pod charged here is looked up again
// afterwards and released if it went meanwhile. Audits run one at a time
// (auditMu, taken before any other lock).
func (pl *Plugin) audit(logger klog.Logger) (released, charged int) {
	pl.auditMu.Lock()
	defer pl.auditMu.Unlock()
	seen := pl.auditSuspects
	suspects := map[string]bool{}
	defer func() { pl.auditSuspects = suspects }()
	charges := pl.ledger.Pods()
	lister := pl.handle.SharedInformerFactory().Core().V1().Pods().Lister()
	pods, err := lister.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Audit: listing pods from the informer")
		return 0, 0
	}
	byUID := make(map[types.UID]*v1.Pod, len(pods))
	for _, p := range pods {
		if pl.ours(p) {
			byUID[p.UID] = p
		}
	}
	for _, uid := range charges {
		if p, ok := byUID[types.UID(uid)]; ok && !pl.finished(p) {
			continue
		}
		if !seen["gone/"+uid] {
			suspects["gone/"+uid] = true
			continue
		}
		c, ok := pl.releaseCharge(logger, types.UID(uid), metrics.SourceAudit)
		if !ok {
			continue // released meanwhile by its own event
		}
		released++
		logger.Error(nil, "Audit: released the charge of a pod the scheduler's informer no longer has: its release event was lost",
			"podUID", uid, "user", c.Request.User, "queue", c.Request.Queue, "application", c.Request.App.String())
	}
	for uid, p := range byUID {
		if p.Spec.NodeName == "" || pl.finished(p) {
			continue
		}
		if _, live := pl.ledger.Get(string(uid)); live {
			continue
		}
		if !seen["uncharged/"+string(uid)] {
			suspects["uncharged/"+string(uid)] = true
			continue
		}
		if !pl.chargeRunning(logger, p, metrics.SourceAudit) {
			continue // charged meanwhile by its own event, or not chargeable (logged)
		}
		charged++
		logger.Error(nil, "Audit: charged a bound pod no informer event had charged", "pod", klog.KObj(p))
		// Gone meanwhile? Its delete event may have come before the charge.
		if now, err := lister.Pods(p.Namespace).Get(p.Name); err != nil || now.UID != uid || pl.finished(now) {
			pl.release(logger, p)
		}
	}
	return released, charged
}

// finished reports whether a bound pod's charge must be gone: it ended,
// or it is terminating and releaseOnTerminating is set (onPod's rule).
func (pl *Plugin) finished(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed ||
		p.DeletionTimestamp != nil && pl.args.ReleaseOnTerminating
}
