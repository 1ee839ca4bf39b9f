package userquota

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/metrics"
)

// auditEvery is how often the ledger is compared with the pod informer's
// store (less often when an audit is slow, auditSpacing); a difference is
// repaired when two audits in a row see it. A handler event lost on its
// way (a client-go or API server bug; the scheduler's own cache has been
// bitten by such) would otherwise leave a charge for a pod that is gone,
// or none for one that runs, until the next restart. Each repair is
// logged and counted (userquota_decreases_total / increases_total with
// source "audit"), so a non-zero count is a bug report.
const auditEvery = 10 * time.Second

// auditSpacing bounds what audits cost: after one that took d, the next
// starts no sooner than auditSpacing*d later, so that they take at most
// 0.2 % of one core however many pods there are. An audit walks every pod
// (33-40 ms at 50,000 pods, BenchmarkAudit; more beside a busy scheduling
// goroutine), so from about 20,000 pods audits come further apart than
// auditEvery.
const auditSpacing = 500

// auditWait is the wait before the next audit after one that took took.
func auditWait(took time.Duration) time.Duration {
	return max(auditEvery, auditSpacing*took)
}

// accounts is the pod accounting the audit compares and repairs through:
// the plugin's informer side (pods.go).
type accounts interface {
	// charged lists the UIDs of the pods holding a charge; isCharged
	// looks one up.
	charged() []string
	isCharged(uid types.UID) bool
	// ours tells this scheduler's pods; finished those whose charge must
	// be gone.
	ours(*v1.Pod) bool
	finished(*v1.Pod) bool
	// releaseCharge and chargeRunning are the handler's own repairs,
	// counted under source.
	releaseCharge(logger klog.Logger, uid types.UID, source string) (ledger.Charge, bool)
	chargeRunning(logger klog.Logger, pod *v1.Pod, source string) bool
	// admitted lists the pods holding room (admissions); forgetPod drops
	// what is held for a pod that is gone or bound.
	admitted() []string
	forgetPod(logger klog.Logger, uid types.UID)
	// dropRunning drops the room still held for a pod that runs.
	dropRunning(uid types.UID) bool
}

// auditor compares the ledger with the pod informer's store and repairs
// what a lost handler event would leave. Its lock makes audits run one at
// a time and guards the suspects; it is taken before any other lock.
type auditor struct {
	accounts accounts
	pods     corelisters.PodLister
	synced   func() bool
	clock    clock.WithTicker

	mu sync.Mutex
	// suspects are the differences the last audit saw; byUID is the last
	// audit's map of pods, kept for the next one to fill again.
	suspects map[string]bool
	byUID    map[types.UID]*v1.Pod
}

// run audits at once and then after each audit's auditWait, until ctx
// ends, once the pods are synced.
func (a *auditor) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName(Name)
	for {
		next := auditEvery
		if a.synced() {
			start := a.clock.Now()
			a.audit(logger)
			next = auditWait(a.clock.Since(start))
		}
		t := a.clock.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// audit releases the charges of pods the informer's store no longer has
// (by UID) or has finished, and charges the bound pods it has without one.
// The store runs ahead of the handlers (it is updated before they are
// told), so a difference may be an event on its way: only one seen by two
// audits in a row is repaired (suspects holds the previous audit's). It
// reads the ledger before the store: a charge taken after that (a Reserve)
// is not judged on an older list. Releasing and charging are idempotent
// with the handler's own events, and a pod charged here is looked up again
// afterwards and released if it went meanwhile.
func (a *auditor) audit(logger klog.Logger) (released, charged int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := a.suspects
	suspects := map[string]bool{}
	defer func() { a.suspects = suspects }()
	charges := a.accounts.charged()
	pods, err := a.pods.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Audit: listing pods from the informer")
		return 0, 0
	}
	byUID := a.byUID
	if byUID == nil {
		byUID = make(map[types.UID]*v1.Pod, len(pods))
		a.byUID = byUID
	}
	// Filled again each time, emptied after: it holds no pod between
	// audits.
	defer clear(byUID)
	for _, p := range pods {
		if a.accounts.ours(p) {
			byUID[p.UID] = p
		}
	}
	for _, uid := range charges {
		if p, ok := byUID[types.UID(uid)]; ok && !a.accounts.finished(p) {
			continue
		}
		if !seen["gone/"+uid] {
			suspects["gone/"+uid] = true
			continue
		}
		c, ok := a.accounts.releaseCharge(logger, types.UID(uid), metrics.SourceAudit)
		if !ok {
			continue // released meanwhile by its own event
		}
		released++
		logger.Error(nil, "Audit: released the charge of a pod the scheduler's informer no longer has: its release event was lost",
			"podUID", uid, "user", c.Request.User, "queue", c.Request.Queue, "application", c.Request.App.String())
	}
	for uid, p := range byUID {
		if p.Spec.NodeName == "" || a.accounts.finished(p) || a.accounts.isCharged(uid) {
			continue
		}
		if !seen["uncharged/"+string(uid)] {
			suspects["uncharged/"+string(uid)] = true
			continue
		}
		if !a.accounts.chargeRunning(logger, p, metrics.SourceAudit) {
			continue // charged meanwhile by its own event, or not chargeable (logged)
		}
		charged++
		logger.Error(nil, "Audit: charged a bound pod no informer event had charged", "pod", klog.KObj(p))
		// Gone meanwhile? Its delete event may have come before the charge.
		if now, err := a.pods.Pods(p.Namespace).Get(p.Name); err != nil || now.UID != uid || a.accounts.finished(now) {
			a.accounts.releaseCharge(logger, p.UID, metrics.SourceRelease)
		}
	}
	// Room held for a pod that is gone, bound or finished: its event was
	// lost, or its delete was handled just before it was let in.
	for _, uid := range a.accounts.admitted() {
		if p, ok := byUID[types.UID(uid)]; ok && p.Spec.NodeName == "" && !a.accounts.finished(p) {
			continue
		}
		if !seen["admitted/"+uid] {
			suspects["admitted/"+uid] = true
			continue
		}
		if p, ok := byUID[types.UID(uid)]; ok && p.Spec.NodeName != "" {
			// Bound: its charge takes its room over, unless the room was
			// admitted after the charge (a decision on a stale copy that
			// dropIfRunning missed).
			if a.accounts.isCharged(p.UID) && a.accounts.dropRunning(p.UID) {
				logger.Error(nil, "Audit: dropped the room still held for a pod that runs", "pod", klog.KObj(p))
			}
			continue
		}
		a.accounts.forgetPod(logger, types.UID(uid))
		logger.Error(nil, "Audit: dropped the room held for a pod the scheduler's informer no longer has", "podUID", uid)
	}
	return released, charged
}
