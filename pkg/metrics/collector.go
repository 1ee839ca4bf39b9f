package metrics

import (
	"sync/atomic"
	"time"

	"k8s.io/component-base/metrics"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// Usage is what the collector reads at scrape time: *ugm.Manager.
type Usage interface {
	Users() []ugm.UserUsage
	Groups() []ugm.GroupUsage
	Counts() (users, groups int)
	Queues() *ugm.QueueUsage
}

// Source is what the gauges show: one plugin's usage.
type Source struct {
	Usage Usage
	// Leader reports whether this replica leads (nil: always).
	Leader func() bool
	// PerUser adds per-user and per-group series: one per user (or group),
	// queue and resource, so off by default (cardinality).
	PerUser bool
	// Held counts the pods held for quota by kind of limit (nil: none).
	Held func() map[string]int
	// Admitted counts the pods let in and not charged yet (nil: none).
	Admitted func() int
	// OldestHeld is, by kind, how long the pod held longest has been held
	// since its first hold (nil: none).
	OldestHeld func() map[string]time.Duration
	// Shares are the share gauges of elastic queues (nil: none).
	Shares *ShareGauges
	// Forest returns the quota trees in force with each node's quota and
	// usage ((*ugm.Manager).Forest; nil: none; forest.go).
	Forest func() []ugm.ForestTree
}

var current atomic.Pointer[Source]

// SetSource makes s what the gauges show, and returns a function that
// stops showing it (if it is still the one shown). A scheduler runs one
// UserQuota profile; with several, the last built is shown.
func SetSource(s *Source) (unset func()) {
	current.Store(s)
	return func() { current.CompareAndSwap(s, nil) }
}

func desc(name, help string, labels ...string) *metrics.Desc {
	return metrics.NewDesc(subsystem+"_"+name, help, labels, nil, metrics.ALPHA, "")
}

// Resource gauges are in Prometheus base units: cpu in cores, memory and
// storage in bytes, counts as numbers; the unit label says which.
var (
	leaderDesc       = desc("leader", "1 when this scheduler replica leads and its usage is the live one, else 0.")
	trackedUsersDesc = desc("tracked_users", "Users with running pods (usage tracked).")
	trackedGroupDesc = desc("tracked_groups", "Groups with running applications (usage tracked).")
	queueUsageDesc   = desc("queue_usage", "Usage of a queue's subtree by all users, by resource.", "queue", "resource", "unit")
	queueLimitDesc   = desc("queue_limit", "A queue's own maximum (resources.max), by resource; absent when unlimited.", "queue", "resource", "unit")
	queueAppsDesc    = desc("queue_running_applications", "Running applications in a queue's subtree.", "queue")
	queueMaxAppsDesc = desc("queue_max_applications", "A queue's maxapplications; absent when unlimited.", "queue")
	userUsageDesc    = desc("user_usage", "A user's usage in a queue's subtree, by resource (only with the perUserMetrics arg).", "user", "queue", "resource", "unit")
	userLimitDesc    = desc("user_limit", "The user limit in force in a queue, by resource (only with perUserMetrics).", "user", "queue", "resource", "unit")
	userAppsDesc     = desc("user_running_applications", "A user's running applications in a queue's subtree (only with perUserMetrics).", "user", "queue")
	groupUsageDesc   = desc("group_usage", "A group's usage in a queue's subtree, by resource (only with perUserMetrics).", "group", "queue", "resource", "unit")
	groupLimitDesc   = desc("group_limit", "The group limit in force in a queue, by resource (only with perUserMetrics).", "group", "queue", "resource", "unit")
	groupAppsDesc    = desc("group_running_applications", "A group's running applications in a queue's subtree (only with perUserMetrics).", "group", "queue")
	heldDesc         = desc("held_pods", "Pods held out of the scheduling queue for quota now, by kind of limit (see holds_total).", "kind")
	admittedDesc     = desc("admitted_pods", "Pods let into the scheduling queue with room held for them, not charged yet.")
	heldOldestDesc   = desc("held_oldest_wait_seconds", "How long the pod held longest has been held since its first hold, by the kind of limit that holds it now; absent for kinds that hold no pod.", "kind")
)

type collector struct {
	metrics.BaseStableCollector
}

var usageCollector = &collector{}

var _ metrics.StableCollector = usageCollector

func (c *collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{
		leaderDesc, trackedUsersDesc, trackedGroupDesc,
		queueUsageDesc, queueLimitDesc, queueAppsDesc, queueMaxAppsDesc,
		userUsageDesc, userLimitDesc, userAppsDesc, groupUsageDesc, groupLimitDesc, groupAppsDesc,
		heldDesc, admittedDesc, heldOldestDesc,
		guaranteedShareDesc, runtimeShareDesc, borrowedDesc,
		treeUsageDesc, treeQuotaDesc, treeLentDesc,
	} {
		ch <- d
	}
}

// CollectWithStability takes the snapshots (each a copy under ugm's read
// lock) and turns them into gauges.
func (c *collector) CollectWithStability(ch chan<- metrics.Metric) {
	s := current.Load()
	if s == nil || s.Usage == nil {
		return
	}
	gauge := func(d *metrics.Desc, v float64, labels ...string) {
		ch <- metrics.NewLazyConstMetric(d, metrics.GaugeValue, v, labels...)
	}
	leading := 1.0
	if s.Leader != nil && !s.Leader() {
		leading = 0
	}
	gauge(leaderDesc, leading)

	if s.Held != nil {
		for kind, n := range s.Held() {
			gauge(heldDesc, float64(n), kind)
		}
	}
	if s.Admitted != nil {
		gauge(admittedDesc, float64(s.Admitted()))
	}
	if s.OldestHeld != nil {
		for kind, age := range s.OldestHeld() {
			gauge(heldOldestDesc, age.Seconds(), kind)
		}
	}
	s.Shares.collect(ch)
	collectForest(s.Forest, gauge)

	nUsers, nGroups := s.Usage.Counts()
	gauge(trackedUsersDesc, float64(nUsers))
	gauge(trackedGroupDesc, float64(nGroups))

	walk(s.Usage.Queues(), func(q *ugm.QueueUsage) {
		gauge(queueAppsDesc, float64(len(q.RunningApplications)), q.QueuePath)
		if q.MaxApplications > 0 {
			gauge(queueMaxAppsDesc, float64(q.MaxApplications), q.QueuePath)
		}
		resourceGauges(gauge, queueUsageDesc, queueLimitDesc, q, q.QueuePath)
	})
	if !s.PerUser {
		return
	}
	users, groups := s.Usage.Users(), s.Usage.Groups()
	for _, u := range users {
		walk(u.Queues, func(q *ugm.QueueUsage) {
			gauge(userAppsDesc, float64(len(q.RunningApplications)), u.UserName, q.QueuePath)
			resourceGauges(gauge, userUsageDesc, userLimitDesc, q, u.UserName, q.QueuePath)
		})
	}
	for _, g := range groups {
		walk(g.Queues, func(q *ugm.QueueUsage) {
			gauge(groupAppsDesc, float64(len(q.RunningApplications)), g.GroupName, q.QueuePath)
			resourceGauges(gauge, groupUsageDesc, groupLimitDesc, q, g.GroupName, q.QueuePath)
		})
	}
}

// resourceGauges emits q's usage of every resource it uses and its limit of
// every resource it limits, with the given leading labels.
func resourceGauges(gauge func(*metrics.Desc, float64, ...string), usage, limit *metrics.Desc, q *ugm.QueueUsage, labels ...string) {
	for i, x := range q.ResourceUsage {
		if x == 0 {
			continue
		}
		id := resources.ID(i)
		v, unit := value(id, x)
		gauge(usage, v, withLabels(labels, id.Name(), unit)...)
	}
	for _, b := range q.MaxResources {
		v, unit := value(b.ID, b.Max)
		gauge(limit, v, withLabels(labels, b.ID.Name(), unit)...)
	}
}

// withLabels returns a new slice: labels followed by more.
func withLabels(labels []string, more ...string) []string {
	return append(append(make([]string, 0, len(labels)+len(more)), labels...), more...)
}

// value converts a base-unit amount to the metric's unit.
func value(id resources.ID, x int64) (float64, string) {
	per, unit := resources.MetricUnit(id)
	return float64(x) / per, unit
}

func walk(q *ugm.QueueUsage, fn func(*ugm.QueueUsage)) {
	if q == nil {
		return
	}
	fn(q)
	for _, c := range q.Children {
		walk(c, fn)
	}
}
