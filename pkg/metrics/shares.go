package metrics

import (
	"sync/atomic"

	"k8s.io/component-base/metrics"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// The share gauges of elastic queues (docs/elastic.md), one series per
// elastic queue and resource: bounded by the queue config (and the dynamic
// queues it allows), never by users.
var (
	guaranteedShareDesc = desc("queue_guaranteed_share", "An elastic queue's guaranteed share in force (resolved, scaled down when the children's guarantees do not fit), by resource its guaranteed names; set when shares are recomputed.", "queue", "resource", "unit")
	runtimeShareDesc    = desc("queue_runtime_share", "An elastic queue's runtime share (what it may use now), by resource the share bounds; set when shares are recomputed.", "queue", "resource", "unit")
	borrowedDesc        = desc("queue_borrowed", "What an elastic queue's subtree uses above its guaranteed share (capacity lent by other queues; 0 when within it), by resource it guarantees or its share bounds; set when shares are recomputed.", "queue", "resource", "unit")
)

// ShareGauges holds what the share gauges show: the shares of the elastic
// queues in force and what each borrows, as the last recompute left them.
// The plugin sets them whole at each recompute (a queue gone from the
// config is gone from the gauges); the collector reads them at scrape
// time. It is safe for concurrent use; the zero value shows nothing.
type ShareGauges struct {
	samples atomic.Pointer[[]shareSample]
}

// shareSample is one series of a share gauge.
type shareSample struct {
	desc                  *metrics.Desc
	value                 float64
	queue, resource, unit string
}

// Set replaces the gauges with the shares of queues: the elastic queues of
// the share table in force with a copy of their usage
// (ugm.Manager.ElasticQueues). nil or empty (shares off) shows none. A nil
// ShareGauges ignores it.
func (g *ShareGauges) Set(queues map[string]ugm.ElasticQueue) {
	if g == nil {
		return
	}
	var out []shareSample
	add := func(d *metrics.Desc, queue string, id resources.ID, x int64) {
		v, unit := value(id, x)
		out = append(out, shareSample{desc: d, value: v, queue: queue, resource: id.Name(), unit: unit})
	}
	for path, q := range queues {
		s := q.Share
		if s == nil {
			continue
		}
		// Borrowed is shown for every resource the queue guarantees or its
		// share bounds: usage above the guaranteed (0 for a resource the
		// guaranteed does not name), as the pod explanation counts it.
		var lent []resources.ID
		s.EachGuaranteed(func(id resources.ID, guaranteed int64) bool {
			add(guaranteedShareDesc, path, id, guaranteed)
			lent = append(lent, id)
			return true
		})
		for _, b := range s.Runtime {
			if b.Max == shares.Unlimited {
				continue
			}
			add(runtimeShareDesc, path, b.ID, b.Max)
			if s.Configured.Get(b.ID) <= 0 {
				lent = append(lent, b.ID)
			}
		}
		for _, id := range lent {
			add(borrowedDesc, path, id, max(0, q.Usage.Get(id)-s.Guaranteed.Get(id)))
		}
	}
	g.samples.Store(&out)
}

// collect sends the gauges' series.
func (g *ShareGauges) collect(ch chan<- metrics.Metric) {
	if g == nil {
		return
	}
	p := g.samples.Load()
	if p == nil {
		return
	}
	for _, s := range *p {
		ch <- metrics.NewLazyConstMetric(s.desc, metrics.GaugeValue, s.value, s.queue, s.resource, s.unit)
	}
}
