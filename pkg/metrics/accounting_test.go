package metrics

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/accounting"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

var accountingMetrics = []string{"userquota_queue_resource_seconds_total", "userquota_queue_idle_guaranteed_resource_seconds_total",
	"userquota_group_resource_seconds_total", "userquota_user_resource_seconds_total"}

// books: root.a guaranteed 2 cpu; sue (group dev) runs 3 cpu and 1Gi in
// root.a for an hour, bob (no group) 1 cpu in root.b (no share).
func books(t *testing.T, users bool) *accounting.Books {
	t.Helper()
	c := testingclock.NewFakeClock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	b := accounting.New(c, accounting.Options{Users: users})
	b.SetGuaranteed(map[string]resources.Vector{"root.a": resources.FromMap(map[string]int64{"cpu": 2000})})
	b.Charged(&ugm.Request{User: "sue", Groups: []string{"dev"}, Queue: "root.a", Resources: resources.FromMap(map[string]int64{"cpu": 3000, "memory": 1 << 30})})
	b.Charged(&ugm.Request{User: "bob", Queue: "root.b", Resources: resources.FromMap(map[string]int64{"cpu": 1000})})
	c.Step(time.Hour)
	return b
}

// TestResourceSecondsCounters: the counters of resource-seconds in
// Prometheus units (core-seconds, byte-seconds), by share; an elastic
// queue's guaranteed and borrowed series and its idle series for what it
// guarantees shown even at 0, a queue without a share only its unshared
// one; users only with per-user accounts.
func TestResourceSecondsCounters(t *testing.T) {
	Register()
	for _, tc := range []struct {
		name  string
		users bool
		want  string
	}{
		{name: "groups and queues", want: `
# HELP userquota_group_resource_seconds_total [ALPHA] Resource-seconds a group's pods used in a leaf queue (the pod's user's first group), by the part of the queue's share, split pro rata to the queue's split.
# TYPE userquota_group_resource_seconds_total counter
userquota_group_resource_seconds_total{group="dev",queue="root.a",resource="cpu",share="borrowed",unit="core"} 3600
userquota_group_resource_seconds_total{group="dev",queue="root.a",resource="cpu",share="guaranteed",unit="core"} 7200
userquota_group_resource_seconds_total{group="dev",queue="root.a",resource="memory",share="borrowed",unit="byte"} 3.8654705664e+12
userquota_group_resource_seconds_total{group="dev",queue="root.a",resource="memory",share="guaranteed",unit="byte"} 0
# HELP userquota_queue_idle_guaranteed_resource_seconds_total [ALPHA] Resource-seconds of an elastic queue's guaranteed share its subtree did not use (guaranteed minus usage, when positive).
# TYPE userquota_queue_idle_guaranteed_resource_seconds_total counter
userquota_queue_idle_guaranteed_resource_seconds_total{queue="root.a",resource="cpu",unit="core"} 0
# HELP userquota_queue_resource_seconds_total [ALPHA] Resource-seconds used in a queue's subtree (cpu: core-seconds, memory: byte-seconds), by the part of the queue's share: guaranteed (within its guaranteed share), borrowed (above it), unshared (no share in force).
# TYPE userquota_queue_resource_seconds_total counter
userquota_queue_resource_seconds_total{queue="root",resource="cpu",share="unshared",unit="core"} 14400
userquota_queue_resource_seconds_total{queue="root",resource="memory",share="unshared",unit="byte"} 3.8654705664e+12
userquota_queue_resource_seconds_total{queue="root.a",resource="cpu",share="borrowed",unit="core"} 3600
userquota_queue_resource_seconds_total{queue="root.a",resource="cpu",share="guaranteed",unit="core"} 7200
userquota_queue_resource_seconds_total{queue="root.a",resource="memory",share="borrowed",unit="byte"} 3.8654705664e+12
userquota_queue_resource_seconds_total{queue="root.a",resource="memory",share="guaranteed",unit="byte"} 0
userquota_queue_resource_seconds_total{queue="root.b",resource="cpu",share="unshared",unit="core"} 3600
`},
		{name: "with users", users: true, want: `
# HELP userquota_user_resource_seconds_total [ALPHA] Resource-seconds a user's pods used in a leaf queue, by the part of the queue's share, split pro rata to the queue's split (only with perUserAccounting).
# TYPE userquota_user_resource_seconds_total counter
userquota_user_resource_seconds_total{queue="root.a",resource="cpu",share="borrowed",unit="core",user="sue"} 3600
userquota_user_resource_seconds_total{queue="root.a",resource="cpu",share="guaranteed",unit="core",user="sue"} 7200
userquota_user_resource_seconds_total{queue="root.a",resource="memory",share="borrowed",unit="byte",user="sue"} 3.8654705664e+12
userquota_user_resource_seconds_total{queue="root.a",resource="memory",share="guaranteed",unit="byte",user="sue"} 0
userquota_user_resource_seconds_total{queue="root.b",resource="cpu",share="unshared",unit="core",user="bob"} 3600
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unset := SetAccounting(books(t, tc.users))
			defer unset()
			names := accountingMetrics
			if tc.users {
				names = []string{"userquota_user_resource_seconds_total"}
			}
			if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(tc.want), names...); err != nil {
				t.Error(err)
			}
		})
	}
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(""), accountingMetrics...); err != nil {
		t.Errorf("with no books: %v", err)
	}
}

// TestResourceSecondsLint: the counters pass Prometheus' linter.
func TestResourceSecondsLint(t *testing.T) {
	Register()
	unset := SetAccounting(books(t, true))
	defer unset()
	rec := httptest.NewRecorder()
	legacyregistry.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var text strings.Builder
	for _, line := range strings.SplitAfter(rec.Body.String(), "\n") {
		for _, name := range accountingMetrics {
			if strings.Contains(line, name) {
				text.WriteString(line)
				break
			}
		}
	}
	if !strings.Contains(text.String(), "userquota_user_resource_seconds_total{") {
		t.Fatalf("no user series:\n%s", text.String())
	}
	problems, err := testutil.NewPromLinter(strings.NewReader(text.String())).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestResourceSecondsSorted: the collector sends each family's series in
// the order the registry sorts them in (label values, labels by name), so
// that its sort at every scrape has nothing to move; users on, so that a
// family whose first label by name is not its first (user) is among
// them. The books keep their accounts in maps, whose order is not that.
func TestResourceSecondsSorted(t *testing.T) {
	c := testingclock.NewFakeClock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	b := accounting.New(c, accounting.Options{Users: true})
	b.SetGuaranteed(map[string]resources.Vector{"root.q3": resources.FromMap(map[string]int64{"cpu": 2000})})
	for u := range 60 {
		b.Charged(&ugm.Request{User: fmt.Sprintf("u%02d", u), Groups: []string{fmt.Sprintf("g%d", u%7)}, Queue: fmt.Sprintf("root.q%d", u%5),
			Resources: resources.FromMap(map[string]int64{"cpu": 1000, "memory": 1 << 30, "pods": 1})})
	}
	c.Step(time.Minute)
	unset := SetAccounting(b)
	defer unset()
	families, n := sentSorted(t, booksCollector)
	if families != 4 || n < 60*3 {
		t.Fatalf("%d families, %d series; want all 4 and 60 users' worth", families, n)
	}
}

// sentSorted collects c once and fails t unless each family's series are
// sent in the registry's order; it returns how many families and series
// were sent.
func sentSorted(t *testing.T, c metrics.StableCollector) (families, series int) {
	t.Helper()
	Register()
	ch := make(chan metrics.Metric, 100000)
	c.CollectWithStability(ch)
	close(ch)
	last := map[string][]*dto.LabelPair{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		name := m.Desc().String()
		if prev, ok := last[name]; ok && compareLabels(prev, pb.Label) > 0 {
			t.Fatalf("%s: %v sent after %v", name, pb.Label, prev)
		}
		last[name] = pb.Label
		series++
	}
	return len(last), series
}

// compareLabels orders two series of a family by their label values
// (dto's pairs are sorted by name), as the registry's gather does.
func compareLabels(a, b []*dto.LabelPair) int {
	for i := range min(len(a), len(b)) {
		if c := strings.Compare(a[i].GetValue(), b[i].GetValue()); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}
