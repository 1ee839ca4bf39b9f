package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/plugins/userquota"
)

// dashboardFile is the Grafana dashboard of issue 22 point 5, which the
// chart also ships as a ConfigMap (dashboard.enabled).
const dashboardFile = "charts/userquota/dashboards/userquota.json"

// dashboardConfig is the queue config TestDashboard runs under, on one
// 32-cpu node: elastic queues a and b guaranteed a quarter each; a with
// maxapplications, a user and a group limit, b with a small user limit
// for carol, so that every series the dashboard reads has a sample.
const dashboardConfig = `
partitions:
- name: default
  queues:
  - name: root
    submitacl: "*"
    properties: {quota.sharing: elastic}
    queues:
    - name: a
      resources: {guaranteed: {vcore: 8}, max: {vcore: 32}}
      maxapplications: 10
      limits:
      - limit: each user
        users: ["*"]
        maxresources: {vcore: 32}
      - limit: dev
        groups: ["dev"]
        maxresources: {vcore: 32}
    - name: b
      resources: {guaranteed: {vcore: 8}, max: {vcore: 32}}
      limits:
      - limit: carol
        users: ["carol"]
        maxresources: {vcore: 1}
`

// TestDashboard checks that every metric the Grafana dashboard queries is
// served by the scheduler: the scheduler binary, run from the chart's
// objects with perUserMetrics (the dashboard's per-user row), takes a
// small workload on the real control plane (labelled series appear only
// after their first sample): a pod of carol's held by her user limit is
// let in (the wait of held pods), bob's pods borrow the node (the share
// gauges of the elastic queues), ann's (group dev) take a loan back by
// preemption, carol's pod is held by her user limit (the oldest hold) and
// another of hers, bound by someone else, is charged over it.
// Then each metric name of each PromQL expression of the dashboard (panel
// targets and variable queries, parsed, not listed by hand) must have a
// sample in its /metrics.
func TestDashboard(t *testing.T) {
	queries := dashboardQueries(t, filepath.Join(repoRoot(t), dashboardFile))
	names := map[string][]string{} // metric name -> the expressions using it
	for _, q := range queries {
		ns, err := promqlMetricNames(q)
		if err != nil || len(ns) == 0 {
			t.Fatalf("dashboard query %q: metric names %v, %v", q, ns, err)
		}
		for _, n := range ns {
			names[n] = append(names[n], q)
		}
	}

	c := newCluster(t, 1, rbacAPIServer)
	m := c.installFrom(chartSource("--set", "scheduler.perUserMetrics=true"))
	s := c.startSchedulerProcess("scheduler", m.schedulerConfigFor(t, nil), m.kubeconfig)
	c.eventually("the scheduler holds the Lease", 30*time.Second, func() (bool, error) {
		return c.leaseHolder() != "", nil
	})
	// A new version of the chart's queue config (a reload counted).
	c.setQueueConfigIn(systemNamespace, dashboardConfig)
	c.eventually("the config applied", 15*time.Second, func() (bool, error) {
		return c.hasEvent(systemNamespace, userquota.ReasonConfigApplied), nil
	})
	k := c.startKubelet()
	// A let-in (the wait of held pods): carol's second pod is held by her
	// 1-cpu limit while her first runs and let in when it goes; both go
	// before bob's pods need the node whole. bob's pods beyond b's
	// guaranteed are mostly held by b's share until a recompute counts
	// their demand and let in then (4 such let-ins in one run), but that
	// rests on the recompute's timing; this one does not.
	c.createPod(podSpec{name: "carol-first", user: "carol", queue: "root.b", cpu: "1"})
	c.waitBound("carol-first", 30*time.Second)
	c.createPod(podSpec{name: "carol-next", user: "carol", queue: "root.b", cpu: "1"})
	c.waitHeld("carol-next")
	c.deletePod("carol-first")
	c.waitBound("carol-next", 30*time.Second)
	c.deletePod("carol-next")
	// bob's pods borrow the node whole; ann's first takes a's quarter back
	// by preemption, her second, beyond a's guaranteed quarter but within
	// its share (which grows with a's demand), finds root at its share and
	// is refused in its cycle (not waited for).
	for i := 0; i < 4; i++ {
		n := fmt.Sprintf("b-%d", i)
		c.createPodObject(c.makePod(podSpec{name: n, user: "bob", queue: "root.b", cpu: "8"}))
		c.waitBound(n, 30*time.Second)
	}
	c.createPodObject(c.makePod(podSpec{name: "a-0", user: "ann", groups: []string{"dev"}, queue: "root.a", cpu: "8"}))
	c.waitBound("a-0", reclaimPodTimeout)
	if got := strings.Join(k.preempted(), ","); got != "b-3" {
		t.Errorf("preempted %s, want b's youngest", got)
	}
	c.createPodObject(c.makePod(podSpec{name: "a-1", user: "ann", groups: []string{"dev"}, queue: "root.a", cpu: "4"}))
	c.createPod(podSpec{name: "carol-held", user: "carol", queue: "root.b", cpu: "2"})
	// Bound by someone else (nodeName set at creation), over carol's limit.
	over := c.makePod(podSpec{name: "carol-bound", user: "carol", queue: "root.b", cpu: "2"})
	over.Spec.NodeName = "node-0"
	c.createPodObject(over)

	reader := c.readerToken("metrics-reader", "/metrics")
	// Counters are incremented a moment after what the test waits for
	// (a status write after the hold): give them 30 s.
	var missing []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		served := exposedMetrics(s.get(t, "/metrics", reader, http.StatusOK))
		missing = nil
		for n := range names {
			if !served[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	sort.Strings(missing)
	for _, n := range missing {
		t.Errorf("the dashboard queries %s, which /metrics does not serve; in %q", n, names[n])
	}
	t.Logf("%d queries, %d metric names, %d not served", len(queries), len(names), len(missing))
	s.requireNoForbidden(t)
}

// exposedMetrics returns the names of the samples of a Prometheus text
// exposition (a histogram's _bucket, _sum and _count each).
func exposedMetrics(text string) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if i := strings.IndexAny(l, "{ "); i > 0 {
			out[l[:i]] = true
		}
	}
	return out
}

// dashboardQueries returns every PromQL expression of a Grafana dashboard:
// each target's expr, in panels and in rows' panels, and the expression of
// each query variable (label_values(EXPR, label), query_result(EXPR)).
func dashboardQueries(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels     []json.RawMessage
		Templating struct {
			List []struct {
				Name  string
				Type  string
				Query json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "expr" {
					out = append(out, s)
				} else {
					walk(x)
				}
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, p := range d.Panels {
		var v any
		if err := json.Unmarshal(p, &v); err != nil {
			t.Fatal(err)
		}
		walk(v)
	}
	panels := len(out)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q.Query); err != nil {
			if err := json.Unmarshal(v.Query, &q); err != nil {
				t.Fatalf("variable %s: query %s: %v", v.Name, v.Query, err)
			}
		}
		expr, ok := variableExpr(q.Query)
		if !ok {
			t.Fatalf("variable %s: query %q: want label_values(EXPR, label) or query_result(EXPR)", v.Name, q.Query)
		}
		out = append(out, expr)
	}
	if panels == 0 || len(out) == panels {
		t.Fatalf("%s: %d panel queries, %d variable queries: the parse found too little", path, panels, len(out)-panels)
	}
	return out
}

var (
	labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)
	queryResult = regexp.MustCompile(`^\s*query_result\((.*)\)\s*$`)
)

// variableExpr returns the PromQL expression of a Grafana query variable.
func variableExpr(q string) (string, bool) {
	for _, re := range []*regexp.Regexp{labelValues, queryResult} {
		if m := re.FindStringSubmatch(q); m != nil {
			return m[1], true
		}
	}
	return "", false
}

// promqlKeywords are PromQL's words that are neither metrics nor called
// with parentheses right after them.
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "atan2": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"start": true, "end": true, "inf": true, "nan": true,
}

// grouping are the clauses whose parenthesized lists hold label names.
var grouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)

// promqlMetricNames returns the metric names an expression selects, sorted
// and once each: every identifier that is not a function or aggregation
// (followed by a parenthesis), a keyword, a label (in braces or a
// grouping clause), a string, a number, a duration or a Grafana variable
// ($x, ${x}).
func promqlMetricNames(expr string) ([]string, error) {
	if strings.Contains(expr, "__name__") {
		return nil, fmt.Errorf("a metric selected by __name__ is not read here: name it")
	}
	// Strings, label matchers and ranges go first: they may hold anything.
	var b strings.Builder
	depth := map[byte]int{}
	closing := map[byte]byte{'}': '{', ']': '['}
	for i := 0; i < len(expr); i++ {
		ch := expr[i]
		switch {
		case ch == '"' || ch == '\'' || ch == '`':
			j := i + 1
			for ; j < len(expr) && expr[j] != ch; j++ {
				if expr[j] == '\\' && ch != '`' {
					j++
				}
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			i = j
			b.WriteByte(' ')
		case ch == '{' || ch == '[':
			depth[ch]++
		case ch == '}' || ch == ']':
			if depth[closing[ch]] == 0 {
				return nil, fmt.Errorf("unbalanced %c at %d", ch, i)
			}
			depth[closing[ch]]--
			b.WriteByte(' ')
		case depth['{']+depth['['] > 0:
		default:
			b.WriteByte(ch)
		}
	}
	if depth['{']+depth['['] != 0 {
		return nil, fmt.Errorf("unbalanced braces or brackets")
	}
	s := grouping.ReplaceAllString(b.String(), " ")
	seen := map[string]bool{}
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '$': // a Grafana variable: $x or ${x}
			i++
			if i < len(s) && s[i] == '{' {
				for i < len(s) && s[i] != '}' {
					i++
				}
				i++
			}
			for i < len(s) && isIdent(s[i], false) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.': // a number or a duration
			for i < len(s) && (isIdent(s[i], false) || s[i] == '.') {
				i++
			}
		case isIdent(c, true):
			j := i
			for j < len(s) && isIdent(s[j], false) {
				j++
			}
			word := s[i:j]
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n') {
				k++
			}
			if !(k < len(s) && s[k] == '(') && !promqlKeywords[strings.ToLower(word)] {
				seen[word] = true
			}
			i = j
		default:
			i++
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// TestPromQLMetricNames checks the parse TestDashboard relies on.
func TestPromQLMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`sum by (who, limit) (rate(userquota_refusals_total{limit=~"share|guaranteed"}[$__rate_interval]))`, []string{"userquota_refusals_total"}},
		{`max by (queue) (userquota_queue_usage{queue=~"$queue",resource="cpu"} and on (instance) (userquota_leader == 1))`, []string{"userquota_leader", "userquota_queue_usage"}},
		{`a / on (queue, resource) group_left(unit) b offset 5m > bool 0.9e3`, []string{"a", "b"}},
		{`histogram_quantile(0.9, sum by (le) (rate(x_bucket[5m:1m])))`, []string{"x_bucket"}},
		{`sum(increase(c_total{result="invalid"}[1h])) or vector(0)`, []string{"c_total"}},
		{"topk(20, max without (pod) (m{l='a}b'}))", []string{"m"}},
		{`rate(x[${interval}]) * on(instance) group_right y`, []string{"x", "y"}},
	} {
		got, err := promqlMetricNames(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want,+got):\n%s", tc.expr, diff)
		}
	}
	for _, bad := range []string{`x{a="b"`, `rate(x[5m)`, `x{a="b}`, `{__name__="x"}`} {
		if got, err := promqlMetricNames(bad); err == nil {
			t.Errorf("%s: %v, want an error", bad, got)
		}
	}
	for q, want := range map[string]string{
		"label_values(userquota_queue_usage, queue)":   "userquota_queue_usage",
		"label_values(up{job=\"x\"}, instance)":        `up{job="x"}`,
		"query_result(topk(5, userquota_queue_usage))": "topk(5, userquota_queue_usage)",
	} {
		if got, ok := variableExpr(q); !ok || got != want {
			t.Errorf("variableExpr(%s) = %q, %v, want %q", q, got, ok, want)
		}
	}
}
