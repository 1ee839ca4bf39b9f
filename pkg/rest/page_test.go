package rest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
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
	m, _ := newManager(t, `
partitions:
- name: default
  queues:
  - name: root
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
`, []charge{{pod: "p", user: evil, groups: []string{`"><img src=x onerror=alert(2)>`}, queue: "root.default", app: "<b>app</b>", cpu: 1000}})
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
