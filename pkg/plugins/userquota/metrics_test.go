package userquota

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// The share gauges as the plugin feeds them (docs/metrics.md).
var shareGauges = []string{"userquota_queue_guaranteed_share", "userquota_queue_runtime_share", "userquota_queue_borrowed"}

const shareGaugesHelp = `
# HELP userquota_queue_guaranteed_share [ALPHA] An elastic queue's guaranteed share in force (resolved, scaled down when the children's guarantees do not fit), by resource its guaranteed names; set when shares are recomputed.
# TYPE userquota_queue_guaranteed_share gauge
# HELP userquota_queue_runtime_share [ALPHA] An elastic queue's runtime share (what it may use now), by resource the share bounds; set when shares are recomputed.
# TYPE userquota_queue_runtime_share gauge
# HELP userquota_queue_borrowed [ALPHA] What an elastic queue's subtree uses above its guaranteed share (capacity lent by other queues; 0 when within it), by resource it guarantees or its share bounds; set when shares are recomputed.
# TYPE userquota_queue_borrowed gauge
`

// elasticWithC is elasticConfig with a third queue, root.c, guaranteed
// nothing.
var elasticWithC = queueconfigtest.Root(`
properties: {quota.sharing: elastic}
queues:
- name: a
  resources: {guaranteed: {vcore: 2}, max: {vcore: 10}}
  limits:
  - limit: sue
    users: [sue]
    maxresources: {vcore: 1}
- name: b
  resources: {guaranteed: {vcore: 2}, max: {vcore: 10}}
- name: c
  resources: {max: {vcore: 10}}
`)

// TestShareMetrics: the plugin shows the shares in force and what each
// elastic queue borrows on the share gauges, as each recompute leaves
// them (one 4-cpu node, 110 pods; root's guaranteed share is the
// capacity): b borrowing what idle a and c do not use (and all its pods:
// it guarantees none), then held to its guaranteed once a's pods arrive;
// a queue taken out of the config loses its series; shares turned off
// leave none.
func TestShareMetrics(t *testing.T) {
	e := newEnv(t, envOptions{config: elasticWithC, objects: []runtime.Object{readyNode(testNode, "4")}})
	for _, step := range []struct {
		name string
		do   func()
		want string // the series, under shareGaugesHelp ("": none)
	}{
		{
			name: "b runs 3 cpu, 1 above its guaranteed, a and c idle",
			do: func() {
				e.bind(userPod("b-run", "bob", "", "root.b", "2"))
				e.bind(userPod("b-more", "bob", "", "root.b", "1"))
			},
			want: `
userquota_queue_guaranteed_share{queue="root",resource="cpu",unit="core"} 4
userquota_queue_guaranteed_share{queue="root",resource="pods",unit="integer"} 110
userquota_queue_guaranteed_share{queue="root.a",resource="cpu",unit="core"} 2
userquota_queue_guaranteed_share{queue="root.b",resource="cpu",unit="core"} 2
userquota_queue_runtime_share{queue="root",resource="cpu",unit="core"} 4
userquota_queue_runtime_share{queue="root",resource="pods",unit="integer"} 110
userquota_queue_runtime_share{queue="root.a",resource="cpu",unit="core"} 0
userquota_queue_runtime_share{queue="root.a",resource="pods",unit="integer"} 0
userquota_queue_runtime_share{queue="root.b",resource="cpu",unit="core"} 3
userquota_queue_runtime_share{queue="root.b",resource="pods",unit="integer"} 2
userquota_queue_runtime_share{queue="root.c",resource="cpu",unit="core"} 0
userquota_queue_runtime_share{queue="root.c",resource="pods",unit="integer"} 0
userquota_queue_borrowed{queue="root",resource="cpu",unit="core"} 0
userquota_queue_borrowed{queue="root",resource="pods",unit="integer"} 0
userquota_queue_borrowed{queue="root.a",resource="cpu",unit="core"} 0
userquota_queue_borrowed{queue="root.a",resource="pods",unit="integer"} 0
userquota_queue_borrowed{queue="root.b",resource="cpu",unit="core"} 1
userquota_queue_borrowed{queue="root.b",resource="pods",unit="integer"} 2
userquota_queue_borrowed{queue="root.c",resource="cpu",unit="core"} 0
userquota_queue_borrowed{queue="root.c",resource="pods",unit="integer"} 0
`,
		},
		{
			name: "a's pod arrives: b's share shrinks to its guaranteed, its loan stays until reclaimed",
			do:   func() { e.create(userPod("a-1", "ann", "", "root.a", "2")) },
			want: `
userquota_queue_guaranteed_share{queue="root",resource="cpu",unit="core"} 4
userquota_queue_guaranteed_share{queue="root",resource="pods",unit="integer"} 110
userquota_queue_guaranteed_share{queue="root.a",resource="cpu",unit="core"} 2
userquota_queue_guaranteed_share{queue="root.b",resource="cpu",unit="core"} 2
userquota_queue_runtime_share{queue="root",resource="cpu",unit="core"} 4
userquota_queue_runtime_share{queue="root",resource="pods",unit="integer"} 110
userquota_queue_runtime_share{queue="root.a",resource="cpu",unit="core"} 2
userquota_queue_runtime_share{queue="root.a",resource="pods",unit="integer"} 1
userquota_queue_runtime_share{queue="root.b",resource="cpu",unit="core"} 2
userquota_queue_runtime_share{queue="root.b",resource="pods",unit="integer"} 2
userquota_queue_runtime_share{queue="root.c",resource="cpu",unit="core"} 0
userquota_queue_runtime_share{queue="root.c",resource="pods",unit="integer"} 0
userquota_queue_borrowed{queue="root",resource="cpu",unit="core"} 0
userquota_queue_borrowed{queue="root",resource="pods",unit="integer"} 0
userquota_queue_borrowed{queue="root.a",resource="cpu",unit="core"} 0
userquota_queue_borrowed{queue="root.a",resource="pods",unit="integer"} 0
userquota_queue_borrowed{queue="root.b",resource="cpu",unit="core"} 1
userquota_queue_borrowed{queue="root.b",resource="pods",unit="integer"} 2
userquota_queue_borrowed{queue="root.c",resource="cpu",unit="core"} 0
userquota_queue_borrowed{queue="root.c",resource="pods",unit="integer"} 0
`,
		},
		{
			name: "root.c taken out of the config: its series go",
			do:   func() { e.setConfig(elasticConfig) },
			want: `
userquota_queue_guaranteed_share{queue="root",resource="cpu",unit="core"} 4
userquota_queue_guaranteed_share{queue="root",resource="pods",unit="integer"} 110
userquota_queue_guaranteed_share{queue="root.a",resource="cpu",unit="core"} 2
userquota_queue_guaranteed_share{queue="root.b",resource="cpu",unit="core"} 2
userquota_queue_runtime_share{queue="root",resource="cpu",unit="core"} 4
userquota_queue_runtime_share{queue="root",resource="pods",unit="integer"} 110
userquota_queue_runtime_share{queue="root.a",resource="cpu",unit="core"} 2
userquota_queue_runtime_share{queue="root.a",resource="pods",unit="integer"} 1
userquota_queue_runtime_share{queue="root.b",resource="cpu",unit="core"} 2
userquota_queue_runtime_share{queue="root.b",resource="pods",unit="integer"} 2
userquota_queue_borrowed{queue="root",resource="cpu",unit="core"} 0
userquota_queue_borrowed{queue="root",resource="pods",unit="integer"} 0
userquota_queue_borrowed{queue="root.a",resource="cpu",unit="core"} 0
userquota_queue_borrowed{queue="root.a",resource="pods",unit="integer"} 0
userquota_queue_borrowed{queue="root.b",resource="cpu",unit="core"} 1
userquota_queue_borrowed{queue="root.b",resource="pods",unit="integer"} 2
`,
		},
		{
			name: "shares turned off: no series",
			do:   func() { e.setConfig(sandboxConfig) },
		},
	} {
		t.Run(step.name, func(t *testing.T) {
			step.do()
			want := ""
			if step.want != "" {
				want = shareGaugesHelp + step.want
			}
			waitGathered(t, want, shareGauges...)
		})
	}
}

// waitGathered waits (10 s at most) until the named metrics of the legacy
// registry are want (a recompute runs 100 ms after a change), and reports
// the last difference if they never are.
func waitGathered(t *testing.T, want string, names ...string) {
	t.Helper()
	var err error
	if wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		err = testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want), names...)
		return err == nil, nil
	}) != nil {
		t.Error(err)
	}
}

// heldWaits returns the count and sum of userquota_held_wait_seconds of
// kind (0 before any observation).
func heldWaits(t *testing.T, kind string) (uint64, float64) {
	t.Helper()
	vec, err := testutil.GetHistogramVecFromGatherer(legacyregistry.DefaultGatherer, "userquota_held_wait_seconds", map[string]string{"kind": kind})
	if err != nil {
		return 0, 0
	}
	return vec.GetAggregatedSampleCount(), vec.GetAggregatedSampleSum()
}

// TestHeldWaitMetrics: a held pod's wait, from its first hold to its
// let-in on the plugin's clock, is observed once at the let-in under the
// kind that held it last; a pod deleted while held is not; the oldest
// hold of each kind is shown while pods are held.
func TestHeldWaitMetrics(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		// run holds pods and lets them in, stepping clk.
		run  func(t *testing.T, e *env, clk *testingclock.FakeClock)
		want map[string]float64 // kind: the wait observed, in seconds (one each)
	}{
		{
			name: "held by sue's limit, let in by a release 90 s later",
			run: func(t *testing.T, e *env, clk *testingclock.FakeClock) {
				run := userPod("sue-run", "sue", "", "sandbox", "2")
				e.bind(run)
				e.waitFor("sue-run charged", func() bool { return e.pl.isCharged(run.UID) })
				if s := e.preEnqueue(userPod("sue-held", "sue", "", "sandbox", "1")); s.IsSuccess() {
					t.Fatal("sue-held passed PreEnqueue, want it held by her limit")
				}
				clk.Step(90 * time.Second)
				waitGathered(t, `
# HELP userquota_held_oldest_wait_seconds [ALPHA] How long the pod held longest has been held since its first hold, by the kind of limit that holds it now; absent for kinds that hold no pod.
# TYPE userquota_held_oldest_wait_seconds gauge
userquota_held_oldest_wait_seconds{kind="User"} 90
`, "userquota_held_oldest_wait_seconds")
				e.delete(run)
			},
			want: map[string]float64{"User": 90},
		},
		{
			name: "held by the queue's max, then by sue's limit: the whole wait, under User",
			run: func(t *testing.T, e *env, clk *testingclock.FakeClock) {
				// root.sandbox runs 4 cpu: bob 3, sue 1.
				bob, sue := userPod("bob-run", "bob", "", "sandbox", "3"), userPod("sue-run", "sue", "", "sandbox", "1")
				for _, p := range []*v1.Pod{bob, sue} {
					e.bind(p)
					e.waitFor(p.Name+" charged", func() bool { return e.pl.isCharged(p.UID) })
				}
				if s := e.preEnqueue(userPod("sue-held", "sue", "", "sandbox", "1")); s.IsSuccess() {
					t.Fatal("sue-held passed PreEnqueue, want it held by the queue's max")
				}
				clk.Step(time.Minute)
				// A pod of sue's bound by someone else: she is at her limit.
				extra := userPod("sue-extra", "sue", "", "sandbox", "1")
				e.bind(extra)
				e.waitFor("sue-extra charged", func() bool { return e.pl.isCharged(extra.UID) })
				// bob's pod ends: the queue has room, sue has none.
				e.delete(bob)
				e.waitFor("sue-held held by her limit", func() bool { return e.pl.held.kinds()["User"] == 1 })
				clk.Step(2 * time.Minute)
				e.delete(extra)
			},
			want: map[string]float64{"User": 180},
		},
		{
			name: "deleted while held: no wait observed",
			run: func(t *testing.T, e *env, clk *testingclock.FakeClock) {
				run := userPod("sue-run", "sue", "", "sandbox", "2")
				e.bind(run)
				e.waitFor("sue-run charged", func() bool { return e.pl.isCharged(run.UID) })
				held := userPod("sue-held", "sue", "", "sandbox", "1")
				if s := e.preEnqueue(held); s.IsSuccess() {
					t.Fatal("sue-held passed PreEnqueue, want it held by her limit")
				}
				clk.Step(time.Minute)
				e.delete(held)
				e.waitFor("sue-held forgotten", func() bool { return len(e.pl.held.kinds()) == 0 })
				waitGathered(t, "", "userquota_held_oldest_wait_seconds")
				e.delete(run)
				e.barrier()
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(t0)
			e := newEnv(t, envOptions{config: sandboxConfig, clock: clk})
			kinds := []string{"User", "Group", "Queue", "Applications"}
			type seen struct {
				count uint64
				sum   float64
			}
			before := map[string]seen{}
			for _, k := range kinds {
				n, s := heldWaits(t, k)
				before[k] = seen{n, s}
			}
			tc.run(t, e, clk)
			for kind := range tc.want {
				e.waitFor(kind+" wait observed", func() bool { n, _ := heldWaits(t, kind); return n > before[kind].count })
			}
			e.barrier()
			for _, k := range kinds {
				n, s := heldWaits(t, k)
				got := seen{n - before[k].count, s - before[k].sum}
				want := seen{}
				if w, ok := tc.want[k]; ok {
					want = seen{1, w}
				}
				// Sums of seconds as floats: the difference with an
				// earlier test's sum is not exact.
				if got.count != want.count || math.Abs(got.sum-want.sum) > 1e-6 {
					t.Errorf("kind %s: %d waits observed, %g s in all; want %d, %g s", k, got.count, got.sum, want.count, want.sum)
				}
			}
		})
	}
}
