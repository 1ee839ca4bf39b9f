package metrics

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

var config = queueconfigtest.Root(`
queues:
- name: sandbox
  maxapplications: 3
  resources:
    max: {vcore: 4, memory: 8Gi}
  limits:
  - limit: sue
    users: [sue]
    maxresources: {vcore: 2}
  - limit: dev
    groups: [dev]
    maxresources: {memory: 4Gi}
`)

// manager charges sue (group dev) 1500m and 1Gi in root.sandbox.
func manager(t *testing.T) *ugm.Manager {
	t.Helper()
	m := ugm.New()
	m.SetConfig(queueconfigtest.MustPartition(t, config))
	req := ugm.Request{User: "sue", Groups: []string{"dev"}, Queue: "root.sandbox", App: ugm.AppKey{Namespace: "ns", ID: "train"},
		Resources: resources.FromMap(map[string]int64{"cpu": 1500, "memory": 1 << 30, "pods": 1})}
	if err := ledger.New(m).Allocate("p1", req); err != nil {
		t.Fatal(err)
	}
	return m
}

var queueMetrics = []string{"userquota_leader", "userquota_tracked_users", "userquota_tracked_groups",
	"userquota_queue_usage", "userquota_queue_limit", "userquota_queue_running_applications", "userquota_queue_max_applications"}

var userMetrics = []string{"userquota_user_usage", "userquota_user_limit", "userquota_user_running_applications",
	"userquota_group_usage", "userquota_group_limit", "userquota_group_running_applications"}

const queueExposition = `
# HELP userquota_leader [ALPHA] 1 when this scheduler replica leads and its usage is the live one, else 0.
# TYPE userquota_leader gauge
userquota_leader 1
# HELP userquota_tracked_users [ALPHA] Users with running pods (usage tracked).
# TYPE userquota_tracked_users gauge
userquota_tracked_users 1
# HELP userquota_tracked_groups [ALPHA] Groups with running applications (usage tracked).
# TYPE userquota_tracked_groups gauge
userquota_tracked_groups 1
# HELP userquota_queue_usage [ALPHA] Usage of a queue's subtree by all users, by resource.
# TYPE userquota_queue_usage gauge
userquota_queue_usage{queue="root",resource="cpu",unit="core"} 1.5
userquota_queue_usage{queue="root",resource="memory",unit="byte"} 1.073741824e+09
userquota_queue_usage{queue="root",resource="pods",unit="integer"} 1
userquota_queue_usage{queue="root.sandbox",resource="cpu",unit="core"} 1.5
userquota_queue_usage{queue="root.sandbox",resource="memory",unit="byte"} 1.073741824e+09
userquota_queue_usage{queue="root.sandbox",resource="pods",unit="integer"} 1
# HELP userquota_queue_limit [ALPHA] A queue's own maximum (resources.max), by resource; absent when unlimited.
# TYPE userquota_queue_limit gauge
userquota_queue_limit{queue="root.sandbox",resource="cpu",unit="core"} 4
userquota_queue_limit{queue="root.sandbox",resource="memory",unit="byte"} 8.589934592e+09
# HELP userquota_queue_running_applications [ALPHA] Running applications in a queue's subtree.
# TYPE userquota_queue_running_applications gauge
userquota_queue_running_applications{queue="root"} 1
userquota_queue_running_applications{queue="root.sandbox"} 1
# HELP userquota_queue_max_applications [ALPHA] A queue's maxapplications; absent when unlimited.
# TYPE userquota_queue_max_applications gauge
userquota_queue_max_applications{queue="root.sandbox"} 3
`

const userExposition = `
# HELP userquota_user_usage [ALPHA] A user's usage in a queue's subtree, by resource (only with the perUserMetrics arg).
# TYPE userquota_user_usage gauge
userquota_user_usage{queue="root",resource="cpu",unit="core",user="sue"} 1.5
userquota_user_usage{queue="root",resource="memory",unit="byte",user="sue"} 1.073741824e+09
userquota_user_usage{queue="root",resource="pods",unit="integer",user="sue"} 1
userquota_user_usage{queue="root.sandbox",resource="cpu",unit="core",user="sue"} 1.5
userquota_user_usage{queue="root.sandbox",resource="memory",unit="byte",user="sue"} 1.073741824e+09
userquota_user_usage{queue="root.sandbox",resource="pods",unit="integer",user="sue"} 1
# HELP userquota_user_limit [ALPHA] The user limit in force in a queue, by resource (only with perUserMetrics).
# TYPE userquota_user_limit gauge
userquota_user_limit{queue="root.sandbox",resource="cpu",unit="core",user="sue"} 2
# HELP userquota_user_running_applications [ALPHA] A user's running applications in a queue's subtree (only with perUserMetrics).
# TYPE userquota_user_running_applications gauge
userquota_user_running_applications{queue="root",user="sue"} 1
userquota_user_running_applications{queue="root.sandbox",user="sue"} 1
# HELP userquota_group_usage [ALPHA] A group's usage in a queue's subtree, by resource (only with perUserMetrics).
# TYPE userquota_group_usage gauge
userquota_group_usage{group="dev",queue="root",resource="cpu",unit="core"} 1.5
userquota_group_usage{group="dev",queue="root",resource="memory",unit="byte"} 1.073741824e+09
userquota_group_usage{group="dev",queue="root",resource="pods",unit="integer"} 1
userquota_group_usage{group="dev",queue="root.sandbox",resource="cpu",unit="core"} 1.5
userquota_group_usage{group="dev",queue="root.sandbox",resource="memory",unit="byte"} 1.073741824e+09
userquota_group_usage{group="dev",queue="root.sandbox",resource="pods",unit="integer"} 1
# HELP userquota_group_limit [ALPHA] The group limit in force in a queue, by resource (only with perUserMetrics).
# TYPE userquota_group_limit gauge
userquota_group_limit{group="dev",queue="root.sandbox",resource="memory",unit="byte"} 4.294967296e+09
# HELP userquota_group_running_applications [ALPHA] A group's running applications in a queue's subtree (only with perUserMetrics).
# TYPE userquota_group_running_applications gauge
userquota_group_running_applications{group="dev",queue="root"} 1
userquota_group_running_applications{group="dev",queue="root.sandbox"} 1
`

// The gauges are computed at scrape time from the source's snapshots;
// per-user series only with PerUser.
func TestGauges(t *testing.T) {
	Register()
	Register() // once per process, whatever the callers do
	m := manager(t)

	unset := SetSource(&Source{Usage: m})
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(queueExposition), queueMetrics...); err != nil {
		t.Error(err)
	}
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(""), userMetrics...); err != nil {
		t.Errorf("per-user series without PerUser: %v", err)
	}
	unset()

	unset = SetSource(&Source{Usage: m, PerUser: true, Leader: func() bool { return false }})
	defer unset()
	want := strings.Replace(queueExposition, "userquota_leader 1", "userquota_leader 0", 1) + userExposition
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want), append(queueMetrics, userMetrics...)...); err != nil {
		t.Error(err)
	}
}

// Without a source (no plugin built, or its context ended) no gauge is shown.
func TestNoSource(t *testing.T) {
	Register()
	unset := SetSource(&Source{Usage: manager(t)})
	unset()
	unset() // a second call changes nothing
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(""), queueMetrics...); err != nil {
		t.Error(err)
	}
	// An older source's unset does not remove a newer one.
	first := SetSource(&Source{Usage: manager(t)})
	second := SetSource(&Source{Usage: manager(t)})
	defer second()
	first()
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader("# HELP userquota_tracked_users [ALPHA] Users with running pods (usage tracked).\n# TYPE userquota_tracked_users gauge\nuserquota_tracked_users 1\n"), "userquota_tracked_users"); err != nil {
		t.Error(err)
	}
}

func TestCounters(t *testing.T) {
	Register()
	refusals.Reset()
	increaseCounts.reset()
	decreaseCounts.reset()
	configReloads.Reset()
	RecordRefusal(&ugm.Refusal{Who: ugm.WhoUser, Limit: ugm.LimitResources})
	RecordRefusal(&ugm.Refusal{Who: ugm.WhoUser, Limit: ugm.LimitResources})
	RecordRefusal(&ugm.Refusal{Who: ugm.WhoGroup, Limit: ugm.LimitApplications})
	RecordRefusal(&ugm.Refusal{Who: ugm.WhoQueue, Limit: ugm.LimitResources})
	RecordRefusal(&ugm.QueueError{Queue: "root.x", Reason: "does not exist"})
	RecordRefusal(errors.New("bad user info"))
	RecordIncrease(SourceReserve)
	RecordIncrease(SourceRunning)
	RecordIncrease(SourceReserve)
	RecordDecrease(SourceRelease)
	RecordDecrease(SourceUnreserve)
	RecordConfigReload(ResultApplied)
	RecordConfigReload(ResultInvalid)
	RecordConfigReload(ResultApplied)
	want := `
# HELP userquota_refusals_total [ALPHA] Scheduling attempts UserQuota refused (at PreFilter, or at Reserve when the room was taken meanwhile), by who would exceed a limit (user, group, queue; pod when no limit is involved) and which (resources, applications; none).
# TYPE userquota_refusals_total counter
userquota_refusals_total{limit="applications",who="group"} 1
userquota_refusals_total{limit="none",who="pod"} 2
userquota_refusals_total{limit="resources",who="queue"} 1
userquota_refusals_total{limit="resources",who="user"} 2
# HELP userquota_increases_total [ALPHA] Pod charges committed, by source: reserve (a scheduled pod), running (a bound pod found at start or failover) or audit (a bound pod whose charge no informer event made).
# TYPE userquota_increases_total counter
userquota_increases_total{source="reserve"} 2
userquota_increases_total{source="running"} 1
# HELP userquota_decreases_total [ALPHA] Pod charges released, by source: release (the pod finished or was deleted), unreserve (a later scheduling step failed) or audit (the pod was gone and no informer event said so).
# TYPE userquota_decreases_total counter
userquota_decreases_total{source="release"} 1
userquota_decreases_total{source="unreserve"} 1
# HELP userquota_config_reloads_total [ALPHA] Versions of the queue-config ConfigMap read, by result: applied, or invalid (the previous config stays in force).
# TYPE userquota_config_reloads_total counter
userquota_config_reloads_total{result="applied"} 2
userquota_config_reloads_total{result="invalid"} 1
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want),
		"userquota_refusals_total", "userquota_increases_total", "userquota_decreases_total", "userquota_config_reloads_total"); err != nil {
		t.Error(err)
	}
}

func TestGangCounters(t *testing.T) {
	Register()
	gangs.Reset()
	for _, ev := range []string{GangHeld, GangReserved, GangReserved, GangTimedOut, GangFailed, GangDeleted} {
		RecordGang(ev)
	}
	want := `
# HELP userquota_gangs_total [ALPHA] Gangs by event: held (its minimum did not fit; once per wait), reserved (its whole minimum reserved), timed_out (a reservation not all used by its timeout, Soft), failed (the same, Hard), deleted (its last pod deleted while reserved).
# TYPE userquota_gangs_total counter
userquota_gangs_total{event="deleted"} 1
userquota_gangs_total{event="failed"} 1
userquota_gangs_total{event="held"} 1
userquota_gangs_total{event="reserved"} 2
userquota_gangs_total{event="timed_out"} 1
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want), "userquota_gangs_total"); err != nil {
		t.Error(err)
	}
}

// The metric names and labels pass Prometheus' lint.
func TestLint(t *testing.T) {
	Register()
	g := &ShareGauges{}
	g.Set(map[string]ugm.ElasticQueue{"root.sandbox": elasticQueue(map[string]int64{"cpu": 1000}, map[string]int64{"cpu": 1000},
		map[string]int64{"cpu": 2000}, map[string]int64{"cpu": 1500})})
	unset := SetSource(&Source{Usage: manager(t), PerUser: true, Shares: g,
		OldestHeld: func() map[string]time.Duration { return map[string]time.Duration{"User": time.Minute} }})
	defer unset()
	ObserveHeldWait("User", time.Minute)
	RecordRefusal(errors.New("x"))
	RecordIncrease(SourceReserve)
	RecordDecrease(SourceRelease)
	RecordConfigReload(ResultApplied)
	RecordPreemption("root.a")
	RecordPreempted("root.b", ReasonReclaim)
	// What kube-scheduler's /metrics serves, our families only.
	rec := httptest.NewRecorder()
	legacyregistry.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var text strings.Builder
	for _, line := range strings.SplitAfter(rec.Body.String(), "\n") {
		if strings.HasPrefix(strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE "), "userquota_") {
			text.WriteString(line)
		}
	}
	for _, series := range []string{"userquota_user_usage{", "userquota_queue_borrowed{", "userquota_held_oldest_wait_seconds{", "userquota_held_wait_seconds_bucket{"} {
		if !strings.Contains(text.String(), series) {
			t.Fatalf("/metrics lacks %s...:\n%s", series, text.String())
		}
	}
	problems, err := testutil.NewPromLinter(strings.NewReader(text.String())).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

func TestPreemptionCounters(t *testing.T) {
	Register()
	preemptions.Reset()
	preempted.Reset()
	RecordPreemption("root.a")
	RecordPreemption("root.a")
	RecordPreempted("root.b", ReasonReclaim)
	RecordPreempted("root.b", ReasonReclaim)
	RecordPreempted("root.a", ReasonPriority)
	want := `
# HELP userquota_preemptions_total [ALPHA] Preemptions made by UserQuota's PostFilter, by the queue of the pod that preempted: one per pod that was given a node by evicting others.
# TYPE userquota_preemptions_total counter
userquota_preemptions_total{queue="root.a"} 2
# HELP userquota_preempted_pods_total [ALPHA] Pods UserQuota's PostFilter preempted, by their queue and why: reclaim (their queue used more than its share) or priority (a higher-priority pod of the same queue).
# TYPE userquota_preempted_pods_total counter
userquota_preempted_pods_total{queue="root.a",reason="priority"} 1
userquota_preempted_pods_total{queue="root.b",reason="reclaim"} 2
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want),
		"userquota_preemptions_total", "userquota_preempted_pods_total"); err != nil {
		t.Error(err)
	}
}

// TestUsageSorted: the usage gauges, per user and group too, go out in
// the registry's order (batch.send), each with its type.
func TestUsageSorted(t *testing.T) {
	limits := `
  limits:
  - limit: every user
    users: ["*"]
    maxresources: {vcore: 10, memory: 10Gi}
  - limit: groups
    groups: [g0, g1, g2, g3, g4, g5, g6]
    maxresources: {memory: 10Gi}
    maxapplications: 20
`
	m := ugm.New()
	m.SetConfig(queueconfigtest.MustPartition(t, queueconfigtest.Root("queues:\n- name: a"+limits+"- name: b"+limits)))
	l := ledger.New(m)
	for u := range 40 {
		queue := []string{"root.a", "root.b", "root.a"}[u%3]
		req := ugm.Request{User: fmt.Sprintf("u%02d", 39-u), Groups: []string{fmt.Sprintf("g%d", u%7)}, Queue: queue,
			App:       ugm.AppKey{Namespace: "ns", ID: fmt.Sprintf("app%02d", u)},
			Resources: resources.FromMap(map[string]int64{"cpu": 100, "memory": 1 << 20, "pods": 1})}
		if err := l.Allocate(fmt.Sprintf("p%d", u), req); err != nil {
			t.Fatal(err)
		}
	}
	defer SetSource(&Source{Usage: m, PerUser: true})()
	families, n := sentSorted(t, usageCollector)
	if families < 10 || n < 40*3 {
		t.Fatalf("%d families, %d series; want the queue, user and group gauges of 40 users", families, n)
	}
	// Gauges, not counters.
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader("# HELP userquota_tracked_users [ALPHA] Users with running pods (usage tracked).\n# TYPE userquota_tracked_users gauge\nuserquota_tracked_users 40\n"), "userquota_tracked_users"); err != nil {
		t.Error(err)
	}
}

// TestCountsAfterReset: a count goes to the series the vec exports even
// after a reset (a child kept from before it would count into a series no
// longer exported), and a value counts.go does not list still counts.
func TestCountsAfterReset(t *testing.T) {
	Register()
	RecordIncrease(SourceAudit)
	RecordIncrease(SourceAudit)
	increaseCounts.reset()
	defer increaseCounts.reset()
	RecordIncrease(SourceAudit)
	RecordIncrease("elsewhere")
	want := `
# HELP userquota_increases_total [ALPHA] Pod charges committed, by source: reserve (a scheduled pod), running (a bound pod found at start or failover) or audit (a bound pod whose charge no informer event made).
# TYPE userquota_increases_total counter
userquota_increases_total{source="audit"} 1
userquota_increases_total{source="elsewhere"} 1
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want), "userquota_increases_total"); err != nil {
		t.Error(err)
	}
}

// BenchmarkRecordIncrease is the count of a charge, warm
// (docs/throughput.md, open work 7, compares it with the cold profile).
func BenchmarkRecordIncrease(b *testing.B) {
	Register()
	b.ReportAllocs()
	for b.Loop() {
		RecordIncrease(SourceReserve)
	}
}
