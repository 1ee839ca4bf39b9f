// Package metrics holds the UserQuota plugin's Prometheus metrics,
// registered with k8s.io/component-base's legacy registry, which
// kube-scheduler serves on its own /metrics. docs/metrics.md lists them.
//
// Events (refusals, increases, decreases, config reloads) are counters the
// plugin increments: one increment on the scheduling path, nothing more.
// Usage and limits are gauges computed at scrape time from ugm snapshots by
// a custom collector, so tracking costs nothing between scrapes.
package metrics

import (
	"errors"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/userquota/userquota/pkg/ugm"
)

// subsystem prefixes every metric: userquota_...
const subsystem = "userquota"

// Values of the source label of increases and decreases.
const (
	SourceReserve   = "reserve"   // Reserve committed a scheduled pod
	SourceRunning   = "running"   // a bound pod found running (restart, failover) was charged
	SourceRelease   = "release"   // a pod finished or was deleted
	SourceUnreserve = "unreserve" // a later scheduling step failed after Reserve
	SourceAudit     = "audit"     // the audit found a charge its informer event never made or undid
)

// Values of the result label of config reloads.
const (
	ResultApplied = "applied"
	ResultInvalid = "invalid"
)

// Labels of refusals that are not about a limit: the pod names a queue it
// cannot run in, its application is held by another user or queue, or its
// metadata cannot be read.
const (
	WhoPod    = "pod"
	LimitNone = "none"
)

var (
	refusals = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "refusals_total",
		Help:           "Scheduling attempts UserQuota refused (at PreFilter, or at Reserve when the room was taken meanwhile), by who would exceed a limit (user, group, queue; pod when no limit is involved) and which (resources, applications; none).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"who", "limit"})
	increases = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "increases_total",
		Help:           "Pod charges committed, by source: reserve (a scheduled pod), running (a bound pod found at start or failover) or audit (a bound pod whose charge no informer event made).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"source"})
	decreases = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "decreases_total",
		Help:           "Pod charges released, by source: release (the pod finished or was deleted), unreserve (a later scheduling step failed) or audit (the pod was gone and no informer event said so).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"source"})
	// increaseCounts and decreaseCounts count a charge and a release with
	// their children resolved once (counts.go).
	increaseCounts = newCounts(increases, SourceReserve, SourceRunning, SourceAudit)
	decreaseCounts = newCounts(decreases, SourceRelease, SourceUnreserve, SourceAudit)
	configReloads  = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "config_reloads_total",
		Help:           "Versions of the queue-config ConfigMap read, by result: applied, or invalid (the previous config stays in force).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
)

// Values of the reason label of preempted pods.
const (
	// ReasonReclaim: the victim's queue used more than its runtime share and
	// a pod of another queue needed the room (docs/reclaim.md).
	ReasonReclaim = "reclaim"
	// ReasonPriority: a pod of the victim's own queue with a higher
	// priority needed the room.
	ReasonPriority = "priority"
	// ReasonTree: the victim was allocated at a quota tree node above its
	// own (it borrowed through soft nodes) and a pod that fits below that
	// node, or one of higher priority, needed the room (docs/forests.md).
	ReasonTree = "tree"
)

var (
	preemptions = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "preemptions_total",
		Help:           "Preemptions made by UserQuota's PostFilter, by the queue of the pod that preempted: one per pod that was given a node by evicting others.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"queue"})
	preempted = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "preempted_pods_total",
		Help:           "Pods UserQuota's PostFilter preempted, by their queue and why: reclaim (their queue used more than its share) or priority (a higher-priority pod of the same queue).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"queue", "reason"})
)

// Values of the event label of gangs_total.
const (
	GangHeld     = "held"
	GangReserved = "reserved"
	GangTimedOut = "timed_out"
	GangFailed   = "failed"
	GangDeleted  = "deleted"
)

// Values of the result label of status writes.
const (
	ResultWritten = "written"
	ResultFailed  = "failed"
)

var (
	holds = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "holds_total",
		Help:           "Pods held out of the scheduling queue for quota, counted when a pod becomes held or what holds it changes, by kind of limit (User, Group, Queue, Applications, Share, Guaranteed, Placement, Application, Behind, Gang).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})
	letIns = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "let_in_total",
		Help:           "Held pods let into the scheduling queue after room freed.",
		StabilityLevel: metrics.ALPHA,
	})
	gangs = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "gangs_total",
		Help:           "Gangs by event: held (its minimum did not fit; once per wait), reserved (its whole minimum reserved), timed_out (a reservation not all used by its timeout, Soft), failed (the same, Hard), deleted (its last pod deleted while reserved).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"event"})
	statusWrites = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "status_writes_total",
		Help:           "Status patches of held pods (PodScheduled=False/QuotaHeld and userquota.io/QuotaAdmitted), by result: written or failed (retried).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
)

// heldWaitBuckets are the bounds of held_wait_seconds: a hold lasts from
// a moment (a release right after) to hours (a queue full all day).
var heldWaitBuckets = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800}

// heldWait is how long held pods waited: from a pod's first hold to its
// let-in, by the kind of limit that held it last.
var heldWait = metrics.NewHistogramVec(&metrics.HistogramOpts{
	Subsystem:      subsystem,
	Name:           "held_wait_seconds",
	Help:           "Time from a pod's first hold for quota to its let-in into the scheduling queue, by the kind of limit that held it last (see holds_total); observed at the let-in.",
	Buckets:        heldWaitBuckets,
	StabilityLevel: metrics.ALPHA,
}, []string{"kind"})

// resizesOverLimit counts what admission could not stop: the admission
// webhook refuses a pods/resize that takes a limit over (docs/security.md,
// "No skipping the scheduler"), so a count here is a resize it did not see
// (no webhook, a pod from before it, a resize the check passed while usage
// grew meanwhile).
var resizesOverLimit = metrics.NewCounter(&metrics.CounterOpts{
	Subsystem:      subsystem,
	Name:           "resizes_over_limit_total",
	Help:           "In-place resizes of running pods charged although they took a user, group or queue over a limit (a running pod cannot be refused; the admission webhook refuses such resizes, so each is one it did not see).",
	StabilityLevel: metrics.ALPHA,
})

// chargedOverLimit counts the other "charged anyway": a bound pod the
// scheduler found running without having admitted it (a restart or
// failover, a pod bound by someone else, a charge the audit repaired)
// charged although it took its user, group or queue over a limit. The
// admission webhook refuses a pod naming a node from an untrusted
// requester (docs/security.md, "No skipping the scheduler"), so a count
// here is a pod admission did not see or a trusted requester's, or, after
// a restart, a pod admitted under a config whose limits were lowered since.
var chargedOverLimit = metrics.NewCounterVec(&metrics.CounterOpts{
	Subsystem:      subsystem,
	Name:           "charged_over_limit_total",
	Help:           "Bound pods the scheduler did not admit, found running and charged although they took a user, group or queue over a limit of the queue config, on usage (a running pod cannot be refused), by source: running (the pod handler, at start-up, failover or a pod bound by someone else) or audit.",
	StabilityLevel: metrics.ALPHA,
}, []string{"source"})

var registerOnce sync.Once

// Register registers every metric with the legacy registry, once per
// process (a scheduler may build the plugin more than once). Before it is
// called the Record functions do nothing.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(refusals, increases, decreases, configReloads, preemptions, preempted, holds, letIns, heldWait, gangs, statusWrites, resizesOverLimit, chargedOverLimit)
		legacyregistry.CustomMustRegister(usageCollector, booksCollector)
	})
}

// RecordRefusal counts a PreFilter refusal by its cause.
func RecordRefusal(err error) {
	who, limit := WhoPod, LimitNone
	var r *ugm.Refusal
	if errors.As(err, &r) {
		who, limit = r.Who, r.Limit
	}
	refusals.WithLabelValues(who, limit).Inc()
}

// RecordIncrease counts a committed charge.
func RecordIncrease(source string) { increaseCounts.inc(source) }

// RecordDecrease counts a released charge.
func RecordDecrease(source string) { decreaseCounts.inc(source) }

// RecordConfigReload counts a version of the queue config read.
func RecordConfigReload(result string) { configReloads.WithLabelValues(result).Inc() }

// RecordPreemption counts a preemption made for a pod of queue.
func RecordPreemption(queue string) { preemptions.WithLabelValues(queue).Inc() }

// RecordPreempted counts a victim of queue, preempted for reason
// (ReasonReclaim, ReasonPriority or ReasonTree).
func RecordPreempted(queue, reason string) { preempted.WithLabelValues(queue, reason).Inc() }

// RecordHold counts a pod becoming held, or held by another limit, by kind.
func RecordHold(kind string) { holds.WithLabelValues(kind).Inc() }

// ObserveHeldWait records the wait of a held pod let in: first held wait
// ago, held last by kind.
func ObserveHeldWait(kind string, wait time.Duration) {
	heldWait.WithLabelValues(kind).Observe(wait.Seconds())
}

// RecordGang counts a gang event (GangHeld, GangReserved, ...).
func RecordGang(event string) { gangs.WithLabelValues(event).Inc() }

// RecordLetIn counts a held pod let in.
func RecordLetIn() { letIns.Inc() }

// RecordStatusWrite counts a held pod's status write by result.
func RecordStatusWrite(result string) { statusWrites.WithLabelValues(result).Inc() }

// RecordResizeOverLimit counts a resize charged over a limit.
func RecordResizeOverLimit() { resizesOverLimit.Inc() }

// RecordChargedOverLimit counts a running pod charged over a limit, by
// source (SourceRunning, SourceAudit).
func RecordChargedOverLimit(source string) { chargedOverLimit.WithLabelValues(source).Inc() }
