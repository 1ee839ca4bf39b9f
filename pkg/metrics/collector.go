package metrics

import (
	"slices"
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
	// Held counts the pods heldGauge for quota by kind of limit (nil: none).
	Held func() map[string]int
	// Admitted counts the pods let in and not charged yet (nil: none).
	Admitted func() int
	// OldestHeld is, by kind, how long the pod heldGauge longest has been heldGauge
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
	leaderGauge        = newGauge("leader", "1 when this scheduler replica leads and its usage is the live one, else 0.")
	trackedUsersGauge  = newGauge("tracked_users", "Users with running pods (usage tracked).")
	trackedGroupsGauge = newGauge("tracked_groups", "Groups with running applications (usage tracked).")
	queueUsageGauge    = newGauge("queue_usage", "Usage of a queue's subtree by all users, by resource.", "queue", "resource", "unit")
	queueLimitGauge    = newGauge("queue_limit", "A queue's own maximum (resources.max), by resource; absent when unlimited.", "queue", "resource", "unit")
	queueAppsGauge     = newGauge("queue_running_applications", "Running applications in a queue's subtree.", "queue")
	queueMaxAppsGauge  = newGauge("queue_max_applications", "A queue's maxapplications; absent when unlimited.", "queue")
	userUsageGauge     = newGauge("user_usage", "A user's usage in a queue's subtree, by resource (only with the perUserMetrics arg).", "user", "queue", "resource", "unit")
	userLimitGauge     = newGauge("user_limit", "The user limit in force in a queue, by resource (only with perUserMetrics).", "user", "queue", "resource", "unit")
	userAppsGauge      = newGauge("user_running_applications", "A user's running applications in a queue's subtree (only with perUserMetrics).", "user", "queue")
	groupUsageGauge    = newGauge("group_usage", "A group's usage in a queue's subtree, by resource (only with perUserMetrics).", "group", "queue", "resource", "unit")
	groupLimitGauge    = newGauge("group_limit", "The group limit in force in a queue, by resource (only with perUserMetrics).", "group", "queue", "resource", "unit")
	groupAppsGauge     = newGauge("group_running_applications", "A group's running applications in a queue's subtree (only with perUserMetrics).", "group", "queue")
	heldGauge          = newGauge("held_pods", "Pods held out of the scheduling queue for quota now, by kind of limit (see holds_total).", "kind")
	admittedGauge      = newGauge("admitted_pods", "Pods let into the scheduling queue with room held for them, not charged yet.")
	heldOldestGauge    = newGauge("held_oldest_wait_seconds", "How long the pod held longest has been held since its first hold, by the kind of limit that holds it now; absent for kinds that hold no pod.", "kind")
)

type collector struct {
	metrics.BaseStableCollector
}

var usageCollector = &collector{}

var _ metrics.StableCollector = usageCollector

func (c *collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, f := range []*family{
		leaderGauge, trackedUsersGauge, trackedGroupsGauge,
		queueUsageGauge, queueLimitGauge, queueAppsGauge, queueMaxAppsGauge,
		userUsageGauge, userLimitGauge, userAppsGauge, groupUsageGauge, groupLimitGauge, groupAppsGauge,
		heldGauge, admittedGauge, heldOldestGauge,
	} {
		ch <- f.desc
	}
	for _, d := range []*metrics.Desc{
		guaranteedShareDesc, runtimeShareDesc, borrowedDesc,
		treeUsageDesc, treeQuotaDesc, treeLentDesc,
	} {
		ch <- d
	}
}

// CollectWithStability takes the snapshots (each a copy under ugm's read
// lock) and turns them into gauges, sent sorted (batch.send): with
// perUserMetrics at the scale shape they are hundreds of thousands of
// series (BenchmarkScrape).
func (c *collector) CollectWithStability(ch chan<- metrics.Metric) {
	s := current.Load()
	if s == nil || s.Usage == nil {
		return
	}
	var out batch
	leading := 1.0
	if s.Leader != nil && !s.Leader() {
		leading = 0
	}
	out.add(leaderGauge, leading)

	if s.Held != nil {
		for kind, n := range s.Held() {
			out.add(heldGauge, float64(n), kind)
		}
	}
	if s.Admitted != nil {
		out.add(admittedGauge, float64(s.Admitted()))
	}
	if s.OldestHeld != nil {
		for kind, age := range s.OldestHeld() {
			out.add(heldOldestGauge, age.Seconds(), kind)
		}
	}
	s.Shares.collect(ch)
	collectForest(s.Forest, func(d *metrics.Desc, v float64, labels ...string) {
		ch <- metrics.NewLazyConstMetric(d, metrics.GaugeValue, v, labels...)
	})

	nUsers, nGroups := s.Usage.Counts()
	out.add(trackedUsersGauge, float64(nUsers))
	out.add(trackedGroupsGauge, float64(nGroups))

	queues := s.Usage.Queues()
	var users []ugm.UserUsage
	var groups []ugm.GroupUsage
	if s.PerUser {
		users, groups = s.Usage.Users(), s.Usage.Groups()
	}
	// Sized once: a per-user scrape at scale is hundreds of thousands of
	// series, and growing the batch by appends cost more than the rest of
	// the collection.
	n := len(out) + seriesOf(queues)
	for _, u := range users {
		n += seriesOf(u.Queues)
	}
	for _, g := range groups {
		n += seriesOf(g.Queues)
	}
	out = slices.Grow(out, n)

	walk(queues, func(q *ugm.QueueUsage) {
		out.add(queueAppsGauge, float64(len(q.RunningApplications)), q.QueuePath)
		if q.MaxApplications > 0 {
			out.add(queueMaxAppsGauge, float64(q.MaxApplications), q.QueuePath)
		}
		out.resources(queueUsageGauge, queueLimitGauge, q, q.QueuePath)
	})
	for _, u := range users {
		walk(u.Queues, func(q *ugm.QueueUsage) {
			out.add(userAppsGauge, float64(len(q.RunningApplications)), u.UserName, q.QueuePath)
			out.resources(userUsageGauge, userLimitGauge, q, u.UserName, q.QueuePath)
		})
	}
	for _, g := range groups {
		walk(g.Queues, func(q *ugm.QueueUsage) {
			out.add(groupAppsGauge, float64(len(q.RunningApplications)), g.GroupName, q.QueuePath)
			out.resources(groupUsageGauge, groupLimitGauge, q, g.GroupName, q.QueuePath)
		})
	}
	out.send(ch)
}

// seriesOf is how many series the gauges of the tree q show at most.
func seriesOf(q *ugm.QueueUsage) int {
	n := 0
	walk(q, func(q *ugm.QueueUsage) { n += 2 + len(q.ResourceUsage) + len(q.MaxResources) })
	return n
}

// resources adds q's usage of every resource it uses and its limit of
// every resource it limits, with the given leading label values (one or
// two), then the resource and its unit.
func (b *batch) resources(usage, limit *family, q *ugm.QueueUsage, who ...string) {
	add := func(f *family, id resources.ID, x int64) {
		v, unit := value(id, x)
		s := series{f: f, v: v}
		n := copy(s.labels[:], who)
		s.labels[n], s.labels[n+1] = id.Name(), unit
		*b = append(*b, s)
	}
	for i, x := range q.ResourceUsage {
		if x != 0 {
			add(usage, resources.ID(i), x)
		}
	}
	for _, l := range q.MaxResources {
		add(limit, l.ID, l.Max)
	}
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
