package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

var shareMetrics = []string{"userquota_queue_guaranteed_share", "userquota_queue_runtime_share", "userquota_queue_borrowed"}

const shareHelp = `
# HELP userquota_queue_guaranteed_share [ALPHA] An elastic queue's guaranteed share in force (resolved, scaled down when the children's guarantees do not fit), by resource its guaranteed names; set when shares are recomputed.
# TYPE userquota_queue_guaranteed_share gauge
# HELP userquota_queue_runtime_share [ALPHA] An elastic queue's runtime share (what it may use now), by resource the share bounds; set when shares are recomputed.
# TYPE userquota_queue_runtime_share gauge
# HELP userquota_queue_borrowed [ALPHA] What an elastic queue's subtree uses above its guaranteed share (capacity lent by other queues; 0 when within it), by resource it guarantees or its share bounds; set when shares are recomputed.
# TYPE userquota_queue_borrowed gauge
`

// elasticQueue is an elastic queue's entry of ugm.ElasticQueues: its
// configured and (scaled) guaranteed, its runtime share and its usage, in
// base units by resource name.
func elasticQueue(configured, guaranteed, runtime, usage map[string]int64) ugm.ElasticQueue {
	return ugm.ElasticQueue{Usage: resources.FromMap(usage), Share: &shares.Share{
		Configured: resources.FromMap(configured), Guaranteed: resources.FromMap(guaranteed), Runtime: resources.NewLimit(runtime)}}
}

// TestShareGauges: each Set replaces the share gauges whole, from the
// elastic queues in force: the guaranteed share of each resource the
// queue's guaranteed names, the runtime share of each resource it bounds,
// and what the queue uses above its guaranteed for either; a queue gone
// since the last Set is gone from the gauges, and shares off show none.
func TestShareGauges(t *testing.T) {
	Register()
	const gi = 1 << 30
	b := elasticQueue(map[string]int64{"cpu": 2000}, map[string]int64{"cpu": 2000},
		map[string]int64{"cpu": 3000, "memory": 8 * gi}, map[string]int64{"cpu": 3000, "memory": gi, "pods": 3})
	for _, tc := range []struct {
		name string
		sets []map[string]ugm.ElasticQueue
		want string // the series, under shareHelp
	}{
		{name: "never set"},
		{name: "shares off", sets: []map[string]ugm.ElasticQueue{nil}},
		{
			name: "a queue within its guaranteed borrows nothing of what it guarantees",
			sets: []map[string]ugm.ElasticQueue{{"root.a": elasticQueue(map[string]int64{"cpu": 2000}, map[string]int64{"cpu": 2000},
				map[string]int64{"cpu": 4000}, map[string]int64{"cpu": 1500, "pods": 1})}},
			want: `
userquota_queue_guaranteed_share{queue="root.a",resource="cpu",unit="core"} 2
userquota_queue_runtime_share{queue="root.a",resource="cpu",unit="core"} 4
userquota_queue_borrowed{queue="root.a",resource="cpu",unit="core"} 0
`,
		},
		{
			name: "a queue over its guaranteed borrows; a resource it does not guarantee is all borrowed",
			sets: []map[string]ugm.ElasticQueue{{"root.b": b}},
			want: `
userquota_queue_guaranteed_share{queue="root.b",resource="cpu",unit="core"} 2
userquota_queue_runtime_share{queue="root.b",resource="cpu",unit="core"} 3
userquota_queue_runtime_share{queue="root.b",resource="memory",unit="byte"} 8.589934592e+09
userquota_queue_borrowed{queue="root.b",resource="cpu",unit="core"} 1
userquota_queue_borrowed{queue="root.b",resource="memory",unit="byte"} 1.073741824e+09
`,
		},
		{
			name: "guaranteed scaled down: the share in force, borrowing above it",
			sets: []map[string]ugm.ElasticQueue{{"root.c": elasticQueue(map[string]int64{"cpu": 4000}, map[string]int64{"cpu": 3000},
				map[string]int64{"cpu": 3000}, map[string]int64{"cpu": 3500})}},
			want: `
userquota_queue_guaranteed_share{queue="root.c",resource="cpu",unit="core"} 3
userquota_queue_runtime_share{queue="root.c",resource="cpu",unit="core"} 3
userquota_queue_borrowed{queue="root.c",resource="cpu",unit="core"} 0.5
`,
		},
		{
			name: "unbounded resources and a queue without a share are not shown",
			sets: []map[string]ugm.ElasticQueue{{
				"root":   elasticQueue(nil, nil, map[string]int64{"cpu": shares.Unlimited}, map[string]int64{"cpu": 1000}),
				"root.x": {Usage: resources.FromMap(map[string]int64{"cpu": 1000})},
			}},
		},
		{
			name: "a queue gone from the config is gone from the gauges",
			sets: []map[string]ugm.ElasticQueue{
				{"root.b": b, "root.gone": elasticQueue(map[string]int64{"cpu": 1000}, map[string]int64{"cpu": 1000}, map[string]int64{"cpu": 1000}, nil)},
				{"root.b": b},
			},
			want: `
userquota_queue_guaranteed_share{queue="root.b",resource="cpu",unit="core"} 2
userquota_queue_runtime_share{queue="root.b",resource="cpu",unit="core"} 3
userquota_queue_runtime_share{queue="root.b",resource="memory",unit="byte"} 8.589934592e+09
userquota_queue_borrowed{queue="root.b",resource="cpu",unit="core"} 1
userquota_queue_borrowed{queue="root.b",resource="memory",unit="byte"} 1.073741824e+09
`,
		},
		{
			name: "shares turned off",
			sets: []map[string]ugm.ElasticQueue{{"root.b": b}, nil},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &ShareGauges{}
			unset := SetSource(&Source{Usage: manager(t), Shares: g})
			defer unset()
			for _, s := range tc.sets {
				g.Set(s)
			}
			want := ""
			if tc.want != "" {
				want = shareHelp + tc.want
			}
			if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want), shareMetrics...); err != nil {
				t.Error(err)
			}
		})
	}
	// A source without share gauges shows none, and a nil ShareGauges
	// takes a Set.
	var none *ShareGauges
	none.Set(map[string]ugm.ElasticQueue{"root.b": b})
	unset := SetSource(&Source{Usage: manager(t), Shares: none})
	defer unset()
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(""), shareMetrics...); err != nil {
		t.Error(err)
	}
}

// TestHeldWait: each let-in is one observation of its wait, under the
// kind that held the pod last.
func TestHeldWait(t *testing.T) {
	Register()
	type want struct {
		count uint64
		sum   float64
		// le: cumulative counts at some bucket bounds.
		le map[float64]uint64
	}
	for _, tc := range []struct {
		name  string
		waits map[string][]time.Duration
		want  map[string]want
	}{
		{name: "no let-in, no series"},
		{
			name:  "one kind",
			waits: map[string][]time.Duration{"User": {200 * time.Millisecond, 90 * time.Second, 45 * time.Minute}},
			want:  map[string]want{"User": {count: 3, sum: 0.2 + 90 + 2700, le: map[float64]uint64{0.1: 0, 0.5: 1, 60: 1, 120: 2, 1800: 2, 3600: 3}}},
		},
		{
			name:  "by kind",
			waits: map[string][]time.Duration{"Queue": {10 * time.Second}, "Share": {3 * time.Hour, 9 * time.Hour}},
			want: map[string]want{
				"Queue": {count: 1, sum: 10, le: map[float64]uint64{5: 0, 10: 1}},
				"Share": {count: 2, sum: 12 * 3600, le: map[float64]uint64{14400: 1, 28800: 1}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			heldWait.Reset()
			for kind, waits := range tc.waits {
				for _, w := range waits {
					ObserveHeldWait(kind, w)
				}
			}
			for kind, w := range tc.want {
				vec, err := testutil.GetHistogramVecFromGatherer(legacyregistry.DefaultGatherer, "userquota_held_wait_seconds", map[string]string{"kind": kind})
				if err != nil || len(vec) != 1 {
					t.Fatalf("%s: %d histograms, %v", kind, len(vec), err)
				}
				h := vec[0]
				if h.GetSampleCount() != w.count || h.GetSampleSum() != w.sum {
					t.Errorf("%s: count %d, sum %g; want %d, %g", kind, h.GetSampleCount(), h.GetSampleSum(), w.count, w.sum)
				}
				got := map[float64]uint64{}
				for _, b := range h.GetBucket() {
					if _, ok := w.le[b.GetUpperBound()]; ok {
						got[b.GetUpperBound()] = b.GetCumulativeCount()
					}
				}
				if diff := cmp.Diff(w.le, got); diff != "" {
					t.Errorf("%s: buckets (-want,+got):\n%s", kind, diff)
				}
			}
			if len(tc.want) == 0 {
				if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(""), "userquota_held_wait_seconds"); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestHeldOldest: the age of the oldest held pod of each kind, from the
// source, in seconds.
func TestHeldOldest(t *testing.T) {
	Register()
	for _, tc := range []struct {
		name   string
		oldest map[string]time.Duration
		want   string
	}{
		{name: "nothing held", oldest: map[string]time.Duration{}},
		{
			name:   "by kind",
			oldest: map[string]time.Duration{"User": 90 * time.Second, "Share": 1500 * time.Millisecond},
			want: `
# HELP userquota_held_oldest_wait_seconds [ALPHA] How long the pod held longest has been held since its first hold, by the kind of limit that holds it now; absent for kinds that hold no pod.
# TYPE userquota_held_oldest_wait_seconds gauge
userquota_held_oldest_wait_seconds{kind="Share"} 1.5
userquota_held_oldest_wait_seconds{kind="User"} 90
`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unset := SetSource(&Source{Usage: manager(t), OldestHeld: func() map[string]time.Duration { return tc.oldest }})
			defer unset()
			if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(tc.want), "userquota_held_oldest_wait_seconds"); err != nil {
				t.Error(err)
			}
		})
	}
}
