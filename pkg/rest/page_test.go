package rest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// parseHTML parses a page, failing the test on error.
func parseHTML(t *testing.T, body string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing the page: %v", err)
	}
	return doc
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

// findAll returns every element below n for which match holds.
func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// meter is what one bar of the page says.
type meter struct {
	Who, Name, Queue, Resource string
	Usage, Limit, Percent      string
	Level, Width, Text         string
}

// meters lists the page's bars in document order.
func meters(doc *html.Node) []meter {
	var out []meter
	for _, n := range findAll(doc, func(n *html.Node) bool { return hasClass(n, "meter") }) {
		m := meter{Who: attr(n, "data-who"), Name: attr(n, "data-name"), Queue: attr(n, "data-queue"),
			Resource: attr(n, "data-resource"), Usage: attr(n, "data-usage"), Limit: attr(n, "data-limit"),
			Percent: attr(n, "data-percent"), Text: text(n)}
		for _, l := range []string{"ok", "warn", "hot"} {
			if hasClass(n, l) {
				m.Level = l
			}
		}
		if fill := findAll(n, func(n *html.Node) bool { return hasClass(n, "fill") }); len(fill) == 1 {
			m.Width = attr(fill[0], "style")
		}
		out = append(out, m)
	}
	return out
}

func TestPage(t *testing.T) {
	status, body, header := get(t, NewHandler(testOptions(t)), "GET", "/", nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	if csp := header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	doc := parseHTML(t, body)

	// Structure: the three sections, one article per user and group, no script.
	for _, id := range []string{"alerts", "queues", "users", "groups"} {
		if len(findAll(doc, func(n *html.Node) bool { return attr(n, "id") == id })) != 1 {
			t.Errorf("no element with id %q", id)
		}
	}
	var who []string
	for _, a := range findAll(doc, func(n *html.Node) bool { return n.Data == "article" }) {
		who = append(who, attr(a, "data-who")+" "+attr(a, "data-name")+" hot="+boolString(hasClass(a, "hot")))
	}
	if diff := cmp.Diff([]string{"user bob hot=false", "user sue hot=true", "group dev hot=false"}, who); diff != "" {
		t.Errorf("articles (-want,+got):\n%s", diff)
	}
	if s := findAll(doc, func(n *html.Node) bool { return n.Data == "script" }); len(s) > 0 {
		t.Errorf("the page has %d script elements", len(s))
	}
	if q := quotas(doc); len(q) != 0 {
		t.Errorf("quota lines without a share table: %+v", q)
	}

	// Values: every bar, with its numbers, level and width.
	want := []meter{
		{Who: "queue", Name: "root.sandbox", Queue: "root.sandbox", Resource: "applications", Usage: "1", Limit: "3", Percent: "33", Level: "ok", Width: "width: 33%", Text: "1 / 3 · 33%"},
		{Who: "queue", Name: "root.sandbox", Queue: "root.sandbox", Resource: "cpu", Usage: "2000", Limit: "4000", Percent: "50", Level: "ok", Width: "width: 50%", Text: "2 / 4 · 50%"},
		{Who: "queue", Name: "root.sandbox", Queue: "root.sandbox", Resource: "memory", Usage: "2147483648", Limit: "8589934592", Percent: "25", Level: "ok", Width: "width: 25%", Text: "2Gi / 8Gi · 25%"},
		{Who: "user", Name: "sue", Queue: "root.sandbox", Resource: "cpu", Usage: "2000", Limit: "2000", Percent: "100", Level: "hot", Width: "width: 100%", Text: "2 / 2 · 100%"},
		{Who: "user", Name: "sue", Queue: "root.sandbox", Resource: "memory", Usage: "2147483648", Limit: "4294967296", Percent: "50", Level: "ok", Width: "width: 50%", Text: "2Gi / 4Gi · 50%"},
		{Who: "group", Name: "dev", Queue: "root.sandbox", Resource: "cpu", Usage: "2000", Limit: "3000", Percent: "66", Level: "ok", Width: "width: 66%", Text: "2 / 3 · 66%"},
	}
	if diff := cmp.Diff(want, meters(doc)); diff != "" {
		t.Errorf("meters (-want,+got):\n%s", diff)
	}

	// The summary names sue's cpu, and only that.
	alerts := findAll(doc, func(n *html.Node) bool { return n.Data == "li" && attr(n, "data-who") != "" })
	if len(alerts) != 1 || text(alerts[0]) != "user sue: cpu 2 / 2 (100%) in root.sandbox" {
		var got []string
		for _, a := range alerts {
			got = append(got, text(a))
		}
		t.Errorf("alerts %q", got)
	}
	// Unlimited usage is shown as a value without a bar; the columns are
	// applications then resources by name.
	bob := findAll(doc, func(n *html.Node) bool { return n.Data == "article" && attr(n, "data-name") == "bob" })[0]
	var rows []string
	for _, tr := range findAll(bob, func(n *html.Node) bool { return n.Data == "tr" }) {
		var cells []string
		for _, c := range findAll(tr, func(n *html.Node) bool { return n.Data == "th" || n.Data == "td" }) {
			cells = append(cells, text(c))
		}
		rows = append(rows, strings.Join(cells, " | "))
	}
	if diff := cmp.Diff([]string{
		"queue | applications | cpu | memory | pods",
		"root | 1 | 500m | 512Mi | 1",
		"default | 1 | 500m | 512Mi | 1",
	}, rows); diff != "" {
		t.Errorf("bob's rows (-want,+got):\n%s", diff)
	}
	if !strings.Contains(text(bob), "1 running application: ns/web") {
		t.Errorf("bob's applications: %q", text(bob))
	}
	if !strings.Contains(body, `href="/ws/v1/partition/default/usage/user/sue"`) {
		t.Error("no link to sue's JSON")
	}
}

// User names come from pod annotations: the page must escape them.
func TestPageEscapesNames(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	m, _ := newManager(t, queueconfigtest.Root(`
limits:
- limit: everyone
  users: ["*"]
  maxresources: {vcore: 1}
- limit: ops
  groups: [ops]
  maxresources: {vcore: 2}
- limit: every group
  groups: ["*"]
  maxresources: {vcore: 1}
queues:
- name: default
`), []charge{{pod: "p", user: evil, groups: []string{`"><img src=x onerror=alert(2)>`}, queue: "root.default", app: "<b>app</b>", cpu: 1000}})
	status, body, _ := get(t, NewHandler(Options{Partition: "default", Usage: m}), "GET", "/", nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	for _, raw := range []string{evil, "<img", "<b>app"} {
		if strings.Contains(body, raw) {
			t.Errorf("the page holds %q unescaped", raw)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the user name is not shown escaped")
	}
	doc := parseHTML(t, body)
	if s := findAll(doc, func(n *html.Node) bool {
		return n.Data == "script" || n.Data == "img" || n.Data == "b" && text(n) == "app"
	}); len(s) > 0 {
		t.Errorf("injected elements parsed: %d", len(s))
	}
	if !strings.Contains(text(doc), "<b>app</b>") {
		t.Error("the application id is not shown as text")
	}
	// The names survive as text and attributes, exactly.
	users := findAll(doc, func(n *html.Node) bool { return n.Data == "article" && attr(n, "data-who") == "user" })
	if len(users) != 1 || attr(users[0], "data-name") != evil || !strings.Contains(text(users[0]), "user "+evil) {
		t.Fatalf("user article not found with the name %q", evil)
	}
	var hot []string
	for _, mt := range meters(doc) {
		if mt.Level == "hot" {
			hot = append(hot, mt.Who+" "+mt.Name+" "+mt.Resource+" "+mt.Percent)
		}
	}
	// The user's group matched no named limit: it is tracked as "*".
	if diff := cmp.Diff([]string{"user " + evil + " cpu 100", "group * cpu 100"}, hot); diff != "" {
		t.Errorf("hot meters (-want,+got):\n%s", diff)
	}
	if !strings.Contains(body, `href="/ws/v1/partition/default/usage/user/%3Cscript%3Ealert%281%29%3C%2Fscript%3E"`) {
		t.Error("the JSON link is not path-escaped")
	}
}

// With nothing tracked and no config the page says so.
func TestPageEmpty(t *testing.T) {
	m, _ := newManager(t, "", nil)
	_, body, _ := get(t, NewHandler(Options{Partition: "default", Usage: m}), "GET", "/", nil)
	doc := parseHTML(t, body)
	for _, want := range []string{"No user has running pods.", "No group has running applications.", "queue config none (no limits)"} {
		if !strings.Contains(text(doc), want) {
			t.Errorf("the page does not say %q", want)
		}
	}
	if len(meters(doc)) != 0 {
		t.Error("bars without limits")
	}
}

func TestPercent(t *testing.T) {
	tests := []struct {
		usage, limit int64
		want         int
	}{
		{0, 10, 0}, {9, 10, 90}, {899, 1000, 89}, {2, 3, 66}, {10, 10, 100}, {15, 10, 150},
		{0, 0, 100}, {1, 0, 1<<31 - 1}, {1 << 62, 1, 1<<31 - 1},
	}
	for _, tc := range tests {
		if got := Percent(tc.usage, tc.limit); got != tc.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", tc.usage, tc.limit, got, tc.want)
		}
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// quota is what one guaranteed / share / max line of the page says.
type quota struct {
	Queue, Resource        string
	Guaranteed, Share, Max string // data- attributes: base units, "" unlimited
	Enforced, Class, Text  string
}

// quotas lists the page's quota lines in document order.
func quotas(doc *html.Node) []quota {
	var out []quota
	for _, n := range findAll(doc, func(n *html.Node) bool { return hasClass(n, "quota") }) {
		q := quota{Queue: attr(n, "data-queue"), Resource: attr(n, "data-resource"), Guaranteed: attr(n, "data-guaranteed"),
			Share: attr(n, "data-share"), Max: attr(n, "data-max"), Enforced: attr(n, "data-enforced"), Text: text(n)}
		for _, c := range []string{"advisory", "short"} {
			if hasClass(n, c) {
				q.Class = c
			}
		}
		out = append(out, q)
	}
	return out
}

// With a share table, every resource cell of the queue tree says the
// queue's guaranteed / share / max; users' and groups' trees do not.
func TestPageShares(t *testing.T) {
	o := elasticOptions(t, true, false)
	table := o.Shares()
	status, body, _ := get(t, NewHandler(o), "GET", "/", nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	doc := parseHTML(t, body)
	if len(findAll(doc, func(n *html.Node) bool { return attr(n, "id") == "quota-legend" })) != 1 {
		t.Error("no legend for guaranteed / share / max")
	}
	got := quotas(doc)
	// One line per queue of the tree and resource column (cpu, memory,
	// pods), in row order.
	var want []quota
	for _, path := range []string{"root", "root.default", "root.shared", "root.shared.a", "root.shared.b", "root.shared.tenants"} {
		sh := table.Get(path)
		if sh == nil {
			t.Fatalf("no share for %s", path)
		}
		for _, rn := range []string{"cpu", "memory", "pods"} {
			id := resources.Intern(rn)
			raw := func(x int64, ok bool) string {
				if !ok {
					return ""
				}
				return strconv.FormatInt(x, 10)
			}
			show := func(x int64, ok bool) string {
				if !ok {
					return "∞"
				}
				return resources.FormatValue(id, x)
			}
			share, shareOK := sh.Runtime.Get(id)
			max, maxOK := sh.Max.Get(id)
			g := sh.Configured.Get(id)
			enforced := strings.HasPrefix(path, "root.shared")
			q := quota{Queue: path, Resource: rn, Guaranteed: raw(g, true), Share: raw(share, shareOK), Max: raw(max, maxOK),
				Enforced: boolString(enforced), Text: show(g, true) + " / " + show(share, shareOK) + " / " + show(max, maxOK)}
			usage := map[string]map[string]int64{
				"root.shared.a": {"cpu": 2000, "memory": 2 << 30, "pods": 2},
				"root.shared.b": {"cpu": 3000, "memory": 2 << 30, "pods": 1},
			}[path][rn]
			usage += map[string]map[string]int64{
				"root.shared": {"cpu": 5000, "memory": 4 << 30, "pods": 3},
			}[path][rn]
			switch {
			case !enforced:
				q.Class = "advisory"
			case shareOK && (sh.Demand.Get(id) > share || usage > share):
				q.Class = "short"
			}
			want = append(want, q)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("quota lines (-want,+got):\n%s", diff)
	}

	// Values that do not depend on how the surplus is split: root is the
	// capacity, a's guaranteed and max as configured, root.default's
	// share not enforced.
	byKey := map[string]quota{}
	for _, q := range got {
		byKey[q.Queue+" "+q.Resource] = q
	}
	for key, text := range map[string]string{
		"root cpu":             "20 / 20 / 20",
		"root memory":          "64Gi / 64Gi / 64Gi",
		"root.shared.a cpu":    "4 / " + resources.FormatValue(resources.Intern("cpu"), mustShare(t, table, "root.shared.a", "cpu")) + " / 10",
		"root.shared.b memory": "0 / 2Gi / ∞",
	} {
		if q := byKey[key]; q.Text != text {
			t.Errorf("%s: %q, want %q", key, q.Text, text)
		}
	}
	// b wants 7 cpu (3 running, 4 pending) and, with its low weight, gets
	// less; its memory share is what it holds, all it wants.
	if q := byKey["root.shared.b cpu"]; q.Class != "short" {
		t.Errorf("b wants more cpu than its share but the line is %q", q.Class)
	}
	if q := byKey["root.shared.b memory"]; q.Class != "" {
		t.Errorf("b has all the memory it wants but the line is %q", q.Class)
	}
	if q := byKey["root.default cpu"]; q.Class != "advisory" || q.Enforced != "false" {
		t.Errorf("root.default is outside sharing but its line is %+v", q)
	}

	// The meters are unchanged: usage against max.
	for _, m := range meters(doc) {
		if m.Who == "queue" && m.Queue == "root.shared.a" && m.Resource == "cpu" && m.Text != "2 / 10 · 20%" {
			t.Errorf("a's cpu meter %q", m.Text)
		}
	}

	// Without a table, no quota lines and no legend.
	_, body, _ = get(t, NewHandler(elasticOptions(t, false, false)), "GET", "/", nil)
	doc = parseHTML(t, body)
	if q := quotas(doc); len(q) != 0 {
		t.Errorf("quota lines without a share table: %+v", q)
	}
	if strings.Contains(body, "quota-legend") {
		t.Error("legend without a share table")
	}
}

func mustShare(t *testing.T, table *shares.Table, path, resource string) int64 {
	t.Helper()
	x, ok := table.Get(path).Runtime.Get(resources.Intern(resource))
	if !ok {
		t.Fatalf("%s has no %s share", path, resource)
	}
	return x
}

// With quota trees in force the page shows each tree (by name) after the
// queues: every node, parents first, a meter per resource of the tree
// (the subtree's usage against the node's quota), soft nodes marked, a
// node at 90 % or more in the box at the top; without trees, no section.
func TestPageTrees(t *testing.T) {
	gpu := `{"kind":"QuotaTree","metadata":{"name":"gpu"},"spec":{"resourceNames":["nvidia.com/gpu"],"nodes":{
 "org1":{"parent":"nil","hard":"true","quota":{"nvidia.com/gpu":"4"}},
 "a100-org1":{"parent":"org1","hard":"true","quota":{"nvidia.com/gpu":"4"}},
 "h100-org1":{"parent":"org1","hard":"false","quota":{"nvidia.com/gpu":"2"}}}}}`
	cost := `{"kind":"QuotaTree","metadata":{"name":"cost"},"spec":{"resourceNames":["pods","cpu"],"nodes":{
 "all":{"parent":"nil","hard":true,"quota":{"cpu":"10","pods":"10"}},
 "cc-1":{"parent":"all","hard":true,"quota":{"cpu":"4","pods":"5"}}}}}`
	cfg, err := queueconfig.LoadWithTrees([]byte(queueconfigtest.Sandbox), map[string]string{"gpu.tree.json": gpu, "cost.tree.json": cost}, "default")
	if err != nil {
		t.Fatal(err)
	}
	m := ugm.New()
	if err := m.Enforce(cfg, "default"); err != nil {
		t.Fatal(err)
	}
	l := ledger.New(m)
	for _, p := range []struct {
		name   string
		res    map[string]int64
		labels map[string]string
	}{
		{"p1", map[string]int64{"cpu": 1000, "pods": 1, "nvidia.com/gpu": 2}, map[string]string{"tree.userquota.io/gpu": "h100-org1", "tree.userquota.io/cost": "cc-1"}},
		{"p2", map[string]int64{"cpu": 500, "pods": 1}, map[string]string{"tree.userquota.io/cost": "cc-1"}},
		{"p3", map[string]int64{"cpu": 250, "pods": 1}, nil}, // in no tree
	} {
		req := ugm.Request{User: "sue", Queue: "root.sandbox", App: ugm.AppKey{Namespace: "ns", ID: p.name},
			Resources: resources.FromMap(p.res), Trees: &ugm.TreePart{Labels: p.labels}}
		if err := l.Allocate(p.name, req); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
	}
	status, body, _ := get(t, NewHandler(Options{Partition: "default", Usage: m, Forest: m.Forest,
		Config: func() *queueconfig.Config { return cfg }}), "GET", "/", nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	doc := parseHTML(t, body)
	sections := findAll(doc, func(n *html.Node) bool { return n.Data == "section" })
	var order []string
	for _, s := range sections {
		order = append(order, attr(s, "id"))
	}
	if diff := cmp.Diff([]string{"alerts", "queues", "trees", "users", "groups"}, order); diff != "" {
		t.Errorf("sections (-want,+got):\n%s", diff)
	}
	articles := findAll(doc, func(n *html.Node) bool { return n.Data == "article" && attr(n, "data-who") == "tree" })
	var trees []string
	for _, a := range articles {
		trees = append(trees, attr(a, "id")+" "+attr(a, "data-name")+" hot="+boolString(hasClass(a, "hot")))
	}
	if diff := cmp.Diff([]string{"tree-cost cost hot=false", "tree-gpu gpu hot=true"}, trees); diff != "" {
		t.Fatalf("tree sections (-want,+got):\n%s", diff)
	}
	rows := func(a *html.Node) []string {
		var out []string
		for _, tr := range findAll(a, func(n *html.Node) bool { return n.Data == "tr" }) {
			var cells []string
			for _, c := range findAll(tr, func(n *html.Node) bool { return n.Data == "th" || n.Data == "td" }) {
				cells = append(cells, text(c))
			}
			out = append(out, attr(tr, "data-node")+": "+strings.Join(cells, " | ")+map[bool]string{true: " (hot)"}[hasClass(tr, "hot")])
		}
		return out
	}
	// Columns in the tree's order; usage is the subtree's (org1 counts
	// h100-org1's pod; all counts p1 and p2, not p3, which names no node).
	if diff := cmp.Diff([]string{
		": node | pods | cpu",
		"all: all | 2 / 10 · 20% | 1500m / 10 · 15%",
		"cc-1: cc-1 | 2 / 5 · 40% | 1500m / 4 · 37%",
	}, rows(articles[0])); diff != "" {
		t.Errorf("tree cost (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{
		": node | nvidia.com/gpu",
		"org1: org1 | 2 / 4 · 50%",
		"a100-org1: a100-org1 | 0 / 4 · 0%",
		"h100-org1: h100-org1 soft | 2 / 2 · 100% (hot)",
	}, rows(articles[1])); diff != "" {
		t.Errorf("tree gpu (-want,+got):\n%s", diff)
	}
	var got []meter
	for _, mt := range meters(doc) {
		if mt.Who == "tree" {
			got = append(got, mt)
		}
	}
	want := []meter{
		{Who: "tree", Name: "cost", Queue: "all", Resource: "pods", Usage: "2", Limit: "10", Percent: "20", Level: "ok", Width: "width: 20%", Text: "2 / 10 · 20%"},
		{Who: "tree", Name: "cost", Queue: "all", Resource: "cpu", Usage: "1500", Limit: "10000", Percent: "15", Level: "ok", Width: "width: 15%", Text: "1500m / 10 · 15%"},
		{Who: "tree", Name: "cost", Queue: "cc-1", Resource: "pods", Usage: "2", Limit: "5", Percent: "40", Level: "ok", Width: "width: 40%", Text: "2 / 5 · 40%"},
		{Who: "tree", Name: "cost", Queue: "cc-1", Resource: "cpu", Usage: "1500", Limit: "4000", Percent: "37", Level: "ok", Width: "width: 37%", Text: "1500m / 4 · 37%"},
		{Who: "tree", Name: "gpu", Queue: "org1", Resource: "nvidia.com/gpu", Usage: "2", Limit: "4", Percent: "50", Level: "ok", Width: "width: 50%", Text: "2 / 4 · 50%"},
		{Who: "tree", Name: "gpu", Queue: "a100-org1", Resource: "nvidia.com/gpu", Usage: "0", Limit: "4", Percent: "0", Level: "ok", Width: "width: 0%", Text: "0 / 4 · 0%"},
		{Who: "tree", Name: "gpu", Queue: "h100-org1", Resource: "nvidia.com/gpu", Usage: "2", Limit: "2", Percent: "100", Level: "hot", Width: "width: 100%", Text: "2 / 2 · 100%"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tree meters (-want,+got):\n%s", diff)
	}
	var alerts []string
	for _, li := range findAll(doc, func(n *html.Node) bool { return n.Data == "li" && attr(n, "data-who") == "tree" }) {
		a := findAll(li, func(n *html.Node) bool { return n.Data == "a" })
		alerts = append(alerts, attr(a[0], "href")+" "+text(li))
	}
	if diff := cmp.Diff([]string{"#tree-gpu tree gpu: nvidia.com/gpu 2 / 2 (100%) at node h100-org1"}, alerts); diff != "" {
		t.Errorf("alerts (-want,+got):\n%s", diff)
	}
	if !strings.Contains(body, `href="/ws/v1/partition/default/trees"`) {
		t.Error("no link to the trees' JSON")
	}
	// Queue alerts still say where.
	if !strings.Contains(text(doc), "in root.sandbox") {
		t.Error("a queue alert lost its queue")
	}

	// Without trees (no Forest, or none in force): no section.
	for _, o := range []Options{testOptions(t), {Partition: "default", Usage: m, Forest: func() []ugm.ForestTree { return nil }}} {
		_, body, _ = get(t, NewHandler(o), "GET", "/", nil)
		if strings.Contains(body, `id="trees"`) || strings.Contains(body, "Quota trees") {
			t.Error("a trees section without trees")
		}
	}
}

// What a node lends to soft nodes below it (TreeUsage.Lent) is shown
// under its meter.
func TestPageTreesLent(t *testing.T) {
	gpu := resources.Intern("nvidia.com/gpu")
	v := func(x int64) resources.Vector { var r resources.Vector; r.Set(gpu, x); return r }
	forest := []ugm.ForestTree{{Name: "gpu", Label: "tree.userquota.io/gpu", ResourceNames: []string{"nvidia.com/gpu"},
		Root: &ugm.TreeUsage{Node: "org1", Quota: resources.NewLimit(map[string]int64{"nvidia.com/gpu": 4}), Usage: v(3), Lent: v(1),
			Children: []*ugm.TreeUsage{{Node: "h100-org1", Soft: true, Quota: resources.NewLimit(map[string]int64{"nvidia.com/gpu": 2}), Usage: v(2)}}}}}
	m, _ := newManager(t, "", nil)
	_, body, _ := get(t, NewHandler(Options{Partition: "default", Usage: m, Forest: func() []ugm.ForestTree { return forest }}), "GET", "/", nil)
	doc := parseHTML(t, body)
	var lent []string
	for _, n := range findAll(doc, func(n *html.Node) bool { return hasClass(n, "lent") }) {
		lent = append(lent, attr(n, "data-name")+" "+attr(n, "data-queue")+" "+attr(n, "data-resource")+" "+attr(n, "data-lent")+": "+text(n))
	}
	if diff := cmp.Diff([]string{"gpu org1 nvidia.com/gpu 1: 1 lent below"}, lent); diff != "" {
		t.Errorf("lent (-want,+got):\n%s", diff)
	}
}
