package rest

import (
	"bytes"
	_ "embed"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// Thresholds of the meters: at or over HotPercent a node is highlighted
// (as by `userquotactl usage`), at or over warnPercent it turns amber.
const (
	HotPercent  = 90
	warnPercent = 70
)

// pageRefresh is how often the page reloads itself, in seconds.
const pageRefresh = 10

// appsColumn names the running-applications column of a tree.
const appsColumn = "applications"

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Parse(pageHTML))

// pageData is what the page template renders.
type pageData struct {
	Partition string
	Checksum  string // short form; "" when no config is in force
	Generated string
	Refresh   int
	Hot       []hotItem
	// Shares: a share table is in force, so the queue tree shows each
	// queue's guaranteed / share / max.
	Shares bool
	Queues treeView
	// Waiting are the queues with pods held by quota, each linking to
	// its held pods in let-in order (dao.HeldPath), by path.
	Waiting []waitingView
	// Trees are the quota trees in force beside the queue config
	// (docs/forests.md), by name; none without trees.
	Trees  []forestView
	Users  []whoView
	Groups []whoView
}

// hotItem is one meter at or over HotPercent, for the summary at the top.
type hotItem struct {
	Kind, Name, Anchor string
	Queue, Resource    string
	Usage, Limit       string
	Share              string
	// Where is "in QUEUE", or "at node NODE" for a quota tree's node.
	Where string
}

// forestView is one quota tree's section: its nodes, parents before
// children, each with a meter per resource of the tree (usage of the
// node's subtree against the node's quota).
type forestView struct {
	Name, Label string
	Anchor      string // the section's id
	JSON        string // path of the trees' JSON endpoint
	Hot         bool
	Columns     []string // the tree's resources, in its order
	Rows        []forestRow
}

// forestRow is one node of a quota tree.
type forestRow struct {
	Node   string
	Indent int // in em
	Soft   bool
	Hot    bool
	Cells  []cellView // one per column; Kind "tree", Name the tree, Queue the node
}

// whoView is one user's or group's section.
type whoView struct {
	Kind, Name string
	Anchor     string // the section's id
	JSON       string // path of its JSON endpoint
	Hot        bool
	Apps       []appView
	// Gangs are the gangs holding a reservation for this user or group.
	Gangs []string
	Tree  treeView
}

type appView struct{ ID, Group string }

// waitingView is a queue with pods held by quota: how many, and the path
// of their list.
type waitingView struct {
	Queue string
	Held  int
	URL   string
}

// treeView is a usage tree as table rows, parents before children.
type treeView struct {
	Columns []string
	Rows    []rowView
}

type rowView struct {
	Queue  string // full path
	Name   string // last path element
	Indent int    // in em
	Hot    bool
	Cells  []cellView // one per column
	// Waiting is the queue's held pods (queue tree only; nil: none).
	Waiting *waitingView
}

// cellView is one resource of one node: a meter when a limit applies.
type cellView struct {
	Kind, Name, Queue, Resource string // for the data- attributes
	Usage, Limit                string // formatted; Limit "" when none
	UsageRaw, LimitRaw          int64
	Limited                     bool
	Percent                     int    // usage/limit, floored; over 100 when over
	Share                       string // Percent as text; "blocked" for a limit of 0
	Width                       int    // Percent capped at 100
	Level                       string
	// Quota is the queue's guaranteed / runtime share / max of this
	// resource, when a share table has the queue; nil otherwise.
	Quota *quotaView
	// Reserved is what gang reservations hold here beside the usage
	// (formatted; on the applications column, the gangs), ReservedRaw the
	// amount (0: none) and Gangs their keys. It counts against the limit
	// as usage does, so the meter shows it as a segment of HeldWidth
	// percent after the usage's.
	Reserved    string
	ReservedRaw int64
	Gangs       string
	HeldWidth   int
	// Lent (quota trees only) is the part of the usage held by pods
	// allocated at this node whose own node is below it: room lent to
	// soft nodes under it (formatted; LentRaw 0: none).
	Lent    string
	LentRaw int64
}

// quotaView is one resource of one queue's elastic quota: guaranteed,
// runtime share and max, formatted ("∞": unlimited), and raw for the
// data- attributes ("" for unlimited).
type quotaView struct {
	Queue, Resource                 string // for the data- attributes
	Guaranteed, Share, Max          string
	GuaranteedRaw, ShareRaw, MaxRaw string
	// Scaled is the guaranteed in effect when it was scaled down (the
	// guarantees no longer fit); "" when not.
	Scaled string
	// Enforced: the queue is elastic, so admission checks the share;
	// otherwise the share is computed but does not refuse pods.
	Enforced bool
	// Short: enforced, and the queue wants more than its share (its
	// demand, usage plus pending, is over it: pods wait for capacity lent
	// elsewhere) or holds more than it (the share shrank).
	Short bool
	// Demand is the demand the share was computed for, formatted.
	Demand string
}

// unlimited is how the page shows an unbounded guaranteed, share or max.
const unlimited = "∞"

// shareLookup finds a queue's share and whether it is enforced; nil when
// there is no share table (the tree then shows no quotas).
type shareLookup func(q *ugm.QueueUsage) (sh *shares.Share, enforced bool)

// page serves the read-only usage page.
func (s *server) page(w http.ResponseWriter, _ *http.Request) {
	data := s.pageData(time.Now())
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, data); err != nil {
		writeError(w, http.StatusInternalServerError, "rendering the page failed", err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	// Plain HTML and inline CSS: no script, nothing from elsewhere.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	_, _ = w.Write(buf.Bytes())
}

// pageData takes the snapshots the page shows: the queues, the users and
// the groups, each copied in one step.
func (s *server) pageData(now time.Time) pageData {
	d := pageData{Partition: s.opts.Partition, Generated: now.UTC().Format(time.RFC3339), Refresh: pageRefresh}
	if s.opts.Config != nil {
		if cfg := s.opts.Config(); cfg != nil && len(cfg.Checksum) >= 12 {
			d.Checksum = cfg.Checksum[:12]
		}
	}
	var quotas shareLookup
	if t := s.shareTable(); t != nil {
		d.Shares = true
		part := s.partitionConfig()
		dyn, _ := s.opts.Usage.(dynamicQueues)
		quotas = func(q *ugm.QueueUsage) (*shares.Share, bool) {
			sh := t.Get(q.QueuePath)
			if sh == nil {
				return nil, false
			}
			_, enforced := queueState(part, dyn, q.QueuePath, len(q.Children) == 0, true)
			return sh, enforced
		}
	}
	d.Queues = newQueueTreeView(s.opts.Usage.Queues(), quotas)
	d.Waiting = s.waiting()
	for i := range d.Queues.Rows {
		row := &d.Queues.Rows[i]
		for j := range d.Waiting {
			if d.Waiting[j].Queue == row.Queue {
				row.Waiting = &d.Waiting[j]
			}
		}
	}
	if s.opts.Forest != nil {
		for _, t := range s.opts.Forest() {
			fv := newForestView(t)
			fv.JSON = "/ws/v1/partition/" + url.PathEscape(s.opts.Partition) + "/trees"
			d.Trees = append(d.Trees, fv)
		}
	}
	for _, u := range s.opts.Usage.Users() {
		wv := s.newWhoView("user", u.UserName, u.Queues)
		ids := make([]string, 0, len(u.Groups))
		for id := range u.Groups {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			wv.Apps = append(wv.Apps, appView{ID: id, Group: u.Groups[id]})
		}
		d.Users = append(d.Users, wv)
	}
	for _, g := range s.opts.Usage.Groups() {
		wv := s.newWhoView("group", g.GroupName, g.Queues)
		for _, id := range g.Applications {
			wv.Apps = append(wv.Apps, appView{ID: id})
		}
		d.Groups = append(d.Groups, wv)
	}
	collect := func(t treeView, anchor string) {
		for _, r := range t.Rows {
			for _, c := range r.Cells {
				if c.Limited && c.Level == "hot" {
					d.Hot = append(d.Hot, hotItem{Kind: c.Kind, Name: c.Name, Anchor: anchor, Queue: c.Queue,
						Resource: c.Resource, Usage: c.Usage, Limit: c.Limit, Share: c.Share, Where: "in " + c.Queue})
				}
			}
		}
	}
	collect(d.Queues, "queues")
	for _, fv := range d.Trees {
		for _, r := range fv.Rows {
			for _, c := range r.Cells {
				if c.Limited && c.Level == "hot" {
					d.Hot = append(d.Hot, hotItem{Kind: c.Kind, Name: c.Name, Anchor: fv.Anchor, Queue: c.Queue,
						Resource: c.Resource, Usage: c.Usage, Limit: c.Limit, Share: c.Share, Where: "at node " + c.Queue})
				}
			}
		}
	}
	for _, wv := range d.Users {
		collect(wv.Tree, wv.Anchor)
	}
	for _, wv := range d.Groups {
		collect(wv.Tree, wv.Anchor)
	}
	return d
}

// waiting lists the queues with held pods, by path, each with the path
// of its list.
func (s *server) waiting() []waitingView {
	if s.opts.HeldCounts == nil {
		return nil
	}
	counts := s.opts.HeldCounts()
	out := make([]waitingView, 0, len(counts))
	for q, n := range counts {
		if n <= 0 {
			continue
		}
		u := "/ws/v1/partition/" + url.PathEscape(s.opts.Partition) + "/queue/" + url.PathEscape(q) + "/held"
		out = append(out, waitingView{Queue: q, Held: n, URL: u})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Queue < out[j].Queue })
	return out
}

func (s *server) newWhoView(kind, name string, root *ugm.QueueUsage) whoView {
	wv := whoView{
		Kind:   kind,
		Name:   name,
		Anchor: kind + "-" + name,
		JSON:   "/ws/v1/partition/" + url.PathEscape(s.opts.Partition) + "/usage/" + kind + "/" + url.PathEscape(name),
		Tree:   newTreeView(kind, name, root),
	}
	if root != nil {
		wv.Gangs = root.ReservedGangs
	}
	for _, r := range wv.Tree.Rows {
		wv.Hot = wv.Hot || r.Hot
	}
	return wv
}

// newForestView is a quota tree's section: every node, parents before
// children (children by name, as the REST API gives them), with one cell
// per resource of the tree: a meter of the usage of the node's subtree
// against the node's quota.
func newForestView(t ugm.ForestTree) forestView {
	fv := forestView{Name: t.Name, Label: t.Label, Anchor: "tree-" + t.Name, Columns: append([]string(nil), t.ResourceNames...)}
	var add func(n *ugm.TreeUsage, depth int)
	add = func(n *ugm.TreeUsage, depth int) {
		if n == nil {
			return
		}
		row := forestRow{Node: n.Node, Indent: depth * 2, Soft: n.Soft}
		for _, rn := range fv.Columns {
			id := resources.Intern(rn)
			quota, limited := n.Quota.Get(id)
			c := newCell("tree", t.Name, n.Node, rn, n.Usage.Get(id), quota, limited, func(x int64) string { return resources.FormatValue(id, x) })
			if l := n.Lent.Get(id); l > 0 {
				c.Lent, c.LentRaw = resources.FormatValue(id, l), l
			}
			row.Hot = row.Hot || c.Level == "hot"
			row.Cells = append(row.Cells, c)
		}
		fv.Hot = fv.Hot || row.Hot
		fv.Rows = append(fv.Rows, row)
		for _, c := range n.Children {
			add(c, depth+1)
		}
	}
	add(t.Root, 0)
	return fv
}

// newTreeView flattens a usage tree into rows with one cell per column:
// running applications, then every resource used or limited anywhere in
// the tree, by name. name "" means the queue's own path (the queue tree).
func newTreeView(kind, name string, root *ugm.QueueUsage) treeView {
	return buildTreeView(kind, name, root, nil)
}

// newQueueTreeView is the queue tree's view; with quotas, each resource
// cell of a queue the share table has carries its guaranteed / share / max,
// and the columns include every resource a queue's guaranteed or max
// names.
func newQueueTreeView(root *ugm.QueueUsage, quotas shareLookup) treeView {
	return buildTreeView("queue", "", root, quotas)
}

func buildTreeView(kind, name string, root *ugm.QueueUsage, quotas shareLookup) treeView {
	var tv treeView
	if root == nil {
		return tv
	}
	names := map[string]bool{}
	walk(root, 0, func(q *ugm.QueueUsage, depth int) {
		for n := range q.ResourceUsage.Map() {
			names[n] = true
		}
		for n := range q.ReservedResource.Map() {
			names[n] = true
		}
		for _, b := range q.MaxResources {
			names[b.ID.Name()] = true
		}
		if quotas == nil || depth == 0 {
			// Root's guaranteed and max in the table are the capacity,
			// which names every allocatable resource: not a reason for
			// a column.
			return
		}
		if sh, _ := quotas(q); sh != nil {
			for n := range sh.Configured.Map() {
				names[n] = true
			}
			for _, b := range sh.Max {
				names[b.ID.Name()] = true
			}
		}
	})
	tv.Columns = append(tv.Columns, appsColumn)
	res := make([]string, 0, len(names))
	for n := range names {
		res = append(res, n)
	}
	sort.Strings(res)
	tv.Columns = append(tv.Columns, res...)

	walk(root, 0, func(q *ugm.QueueUsage, depth int) {
		who := name
		if who == "" {
			who = q.QueuePath
		}
		row := rowView{Queue: q.QueuePath, Name: queueconfig.LeafName(q.QueuePath), Indent: depth * 2}
		running, maxApps := int64(len(q.RunningApplications)), int64(q.MaxApplications)
		gangs := strings.Join(q.ReservedGangs, ", ")
		apps := newCell(kind, who, q.QueuePath, appsColumn, running, maxApps, maxApps > 0, itoa)
		if n := len(q.ReservedGangs); n > 0 {
			apps.Reserved, apps.ReservedRaw, apps.Gangs = plural(n, "gang"), int64(n), gangs
		}
		row.Cells = append(row.Cells, apps)
		var sh *shares.Share
		var enforced bool
		if quotas != nil {
			sh, enforced = quotas(q)
		}
		for _, rn := range res {
			id := resources.Intern(rn)
			max, limited := q.MaxResources.Get(id)
			format := func(x int64) string { return resources.FormatValue(id, x) }
			c := newCell(kind, who, q.QueuePath, rn, q.ResourceUsage.Get(id), max, limited, format)
			if r := q.ReservedResource.Get(id); r > 0 {
				c.Reserved, c.ReservedRaw, c.Gangs = format(r), r, gangs
				if limited {
					c.HeldWidth = 100 - c.Width
					if p := Percent(c.UsageRaw+r, c.LimitRaw); p < 100 {
						c.HeldWidth = p - c.Width
					}
				}
			}
			if sh != nil {
				c.Quota = newQuota(id, sh, enforced, q.ResourceUsage.Get(id))
			}
			row.Cells = append(row.Cells, c)
		}
		for _, c := range row.Cells {
			row.Hot = row.Hot || c.Level == "hot"
		}
		tv.Rows = append(tv.Rows, row)
	})
	return tv
}

func newCell(kind, name, queue, column string, usage, limit int64, limited bool, format func(int64) string) cellView {
	c := cellView{Kind: kind, Name: name, Queue: queue, Resource: column, UsageRaw: usage, LimitRaw: limit, Limited: limited,
		Usage: format(usage)}
	if !limited {
		return c
	}
	c.Limit = format(limit)
	c.Percent = Percent(usage, limit)
	c.Width = min(c.Percent, 100)
	c.Share = strconv.Itoa(c.Percent) + "%"
	if limit == 0 {
		c.Share = "blocked"
	}
	switch {
	case c.Percent >= HotPercent:
		c.Level = "hot"
	case c.Percent >= warnPercent:
		c.Level = "warn"
	default:
		c.Level = "ok"
	}
	return c
}

// newQuota is one resource of a queue's share, holding usage.
func newQuota(id resources.ID, sh *shares.Share, enforced bool, usage int64) *quotaView {
	qv := &quotaView{Queue: sh.Path, Resource: id.Name(), Enforced: enforced}
	amount := func(x int64, ok bool) (string, string) {
		if !ok || x == shares.Unlimited {
			return unlimited, ""
		}
		return resources.FormatValue(id, x), strconv.FormatInt(x, 10)
	}
	g := sh.Configured.Get(id)
	qv.Guaranteed, qv.GuaranteedRaw = amount(g, true)
	if eff := sh.Guaranteed.Get(id); eff != g {
		qv.Scaled, _ = amount(eff, true)
	}
	share, limited := sh.Runtime.Get(id)
	qv.Share, qv.ShareRaw = amount(share, limited)
	qv.Max, qv.MaxRaw = amount(sh.Max.Get(id))
	demand := sh.Demand.Get(id)
	qv.Demand = resources.FormatValue(id, demand)
	qv.Short = enforced && limited && (demand > share || usage > share)
	return qv
}

// Percent is resources.Percent, kept here for the page's callers.
func Percent(usage, limit int64) int { return resources.Percent(usage, limit) }

func walk(q *ugm.QueueUsage, depth int, fn func(*ugm.QueueUsage, int)) {
	fn(q, depth)
	for _, c := range q.Children {
		walk(c, depth+1, fn)
	}
}

func itoa(x int64) string { return strconv.FormatInt(x, 10) }

// plural is "1 gang", "2 gangs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
