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
	queueSeconds = newFamily("queue_resource_seconds_total", "Resource-seconds used in a queue's subtree (cpu: core-seconds, memory: byte-seconds), by the part of the queue's share: guaranteed (within its guaranteed share), borrowed (above it), unshared (no share in force).", "queue", "resource", "unit", "share")
	queueIdle    = newFamily("queue_idle_guaranteed_resource_seconds_total", "Resource-seconds of an elastic queue's guaranteed share its subtree did not use (guaranteed minus usage, when positive).", "queue", "resource", "unit")
	groupSeconds = newFamily("group_resource_seconds_total", "Resource-seconds a group's pods used in a leaf queue (the pod's user's first group), by the part of the queue's share, split pro rata to the queue's split.", "group", "queue", "resource", "unit", "share")
	userSeconds  = newFamily("user_resource_seconds_total", "Resource-seconds a user's pods used in a leaf queue, by the part of the queue's share, split pro rata to the queue's split (only with perUserAccounting).", "user", "queue", "resource", "unit", "share")
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
	for _, f := range []*family{queueSeconds, queueIdle, groupSeconds, userSeconds} {
		ch <- f.desc
	}
}

// CollectWithStability shows each account's cumulative values: a part
// that is 0 only when it is one the account books now (guaranteed and
// borrowed under a share, else unshared; idle for a resource its queue
// guarantees), so that a series starts at 0. The series go out sorted
// (batch.send).
func (c *accountingCollector) CollectWithStability(ch chan<- metrics.Metric) {
	p := currentBooks.Load()
	if p == nil {
		return
	}
	counters := (*p).Counters()
	out := make(batch, 0, len(counters))
	for _, ct := range counters {
		per, unit := resources.MetricUnit(ct.Resource)
		resource := ct.Resource.Name()
		f, who, n := queueSeconds, [2]string{ct.Key.Queue}, 1
		switch ct.Key.Kind {
		case accounting.Group:
			f, who, n = groupSeconds, [2]string{ct.Key.Name, ct.Key.Queue}, 2
		case accounting.User:
			f, who, n = userSeconds, [2]string{ct.Key.Name, ct.Key.Queue}, 2
		}
		for _, part := range accounting.Parts {
			v := ct.Values[part]
			current := ct.Shared == (part != accounting.Unshared)
			if v == 0 && !current {
				continue
			}
			s := series{f: f, v: v / per}
			copy(s.labels[:], who[:n])
			s.labels[n], s.labels[n+1], s.labels[n+2] = resource, unit, part.String()
			out = append(out, s)
		}
		if ct.Key.Kind == accounting.Queue && (ct.Guaranteed || ct.Values[accounting.Idle] != 0) {
			out = append(out, series{f: queueIdle, labels: [maxLabels]string{ct.Key.Queue, resource, unit}, v: ct.Values[accounting.Idle] / per})
		}
	}
	out.send(ch)
}
