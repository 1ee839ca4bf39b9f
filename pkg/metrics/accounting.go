package metrics

import (
	"sync/atomic"

	"k8s.io/component-base/metrics"

	"github.com/userquota/userquota/pkg/accounting"
	"github.com/userquota/userquota/pkg/resources"
)

// The counters of resource-seconds (docs/accounting.md): cumulative
// usage, split by the part of the queue's share it falls in (label
// share: guaranteed, borrowed, unshared), per queue, per group and leaf
// queue, and per user and leaf queue (only with perUserAccounting); and
// each queue's idle guaranteed capacity. Values are read from the books at
// scrape time, booked up to that moment.
var (
	queueSecondsDesc = desc("queue_resource_seconds_total", "Resource-seconds used in a queue's subtree (cpu: core-seconds, memory: byte-seconds), by the part of the queue's share: guaranteed (within its guaranteed share), borrowed (above it), unshared (no share in force).", "queue", "resource", "unit", "share")
	queueIdleDesc    = desc("queue_idle_guaranteed_resource_seconds_total", "Resource-seconds of an elastic queue's guaranteed share its subtree did not use (guaranteed minus usage, when positive).", "queue", "resource", "unit")
	groupSecondsDesc = desc("group_resource_seconds_total", "Resource-seconds a group's pods used in a leaf queue (the pod's user's first group), by the part of the queue's share, split pro rata to the queue's split.", "group", "queue", "resource", "unit", "share")
	userSecondsDesc  = desc("user_resource_seconds_total", "Resource-seconds a user's pods used in a leaf queue, by the part of the queue's share, split pro rata to the queue's split (only with perUserAccounting).", "user", "queue", "resource", "unit", "share")
)

// Accounting is what the counters read: *accounting.Books.
type Accounting interface {
	Counters() []accounting.Counter
}

var currentBooks atomic.Pointer[Accounting]

// SetAccounting makes a what the resource-seconds counters show, and
// returns a function that stops showing it (if it is still the one
// shown).
func SetAccounting(a Accounting) (unset func()) {
	p := &a
	currentBooks.Store(p)
	return func() { currentBooks.CompareAndSwap(p, nil) }
}

type accountingCollector struct {
	metrics.BaseStableCollector
}

var booksCollector = &accountingCollector{}

var _ metrics.StableCollector = booksCollector

func (c *accountingCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{queueSecondsDesc, queueIdleDesc, groupSecondsDesc, userSecondsDesc} {
		ch <- d
	}
}

// CollectWithStability shows each account's cumulative values: a part
// that is 0 only when it is one the account books now (guaranteed and
// borrowed under a share, else unshared; idle for a resource its queue
// guarantees), so that a series starts at 0.
func (c *accountingCollector) CollectWithStability(ch chan<- metrics.Metric) {
	p := currentBooks.Load()
	if p == nil {
		return
	}
	for _, ct := range (*p).Counters() {
		per, unit := resources.MetricUnit(ct.Resource)
		resource := ct.Resource.Name()
		d, labels := queueSecondsDesc, []string{ct.Key.Queue}
		switch ct.Key.Kind {
		case accounting.Group:
			d, labels = groupSecondsDesc, []string{ct.Key.Name, ct.Key.Queue}
		case accounting.User:
			d, labels = userSecondsDesc, []string{ct.Key.Name, ct.Key.Queue}
		}
		for _, part := range accounting.Parts {
			v := ct.Values[part]
			current := ct.Shared == (part != accounting.Unshared)
			if v == 0 && !current {
				continue
			}
			ch <- metrics.NewLazyConstMetric(d, metrics.CounterValue, v/per, withLabels(labels, resource, unit, part.String())...)
		}
		if ct.Key.Kind == accounting.Queue && (ct.Guaranteed || ct.Values[accounting.Idle] != 0) {
			ch <- metrics.NewLazyConstMetric(queueIdleDesc, metrics.CounterValue, ct.Values[accounting.Idle]/per, ct.Key.Queue, resource, unit)
		}
	}
}
