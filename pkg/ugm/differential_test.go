package ugm

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
)

// The differential test runs random sequences of config loads, increases and
// decreases against ugm and against model, a brute-force reference that
// recomputes every usage by summing a list of live allocations. Every
// decision and every usage value must agree.

type allocation struct {
	id    int
	req   Request
	group string // the group resolved for its application
}

type model struct {
	cfg  *queueconfig.Partition
	live []allocation
	// kinds says what each queue outside the config that exists (holds a
	// live allocation in its subtree) was created as: kindDynLeaf or
	// kindDynParent by a request that may create it, else kindUnconf.
	kinds map[string]string
}

const (
	kindDynLeaf   = "dynamic leaf"
	kindDynParent = "dynamic parent"
	kindUnconf    = "unconfigured"
)

// kind returns what path is: "config" (with the config's queue), one of the
// kinds above, or "" when it does not exist.
func (md *model) kind(path string) (string, *queueconfig.Queue) {
	if md.cfg != nil {
		if q := md.cfg.Queue(path); q != nil {
			return "config", q
		}
	}
	if path == "root" {
		return "config", nil
	}
	return md.kinds[path], nil
}

// deepest returns the deepest existing queue above path.
func (md *model) deepest(path string) string {
	for p := queueconfig.ParentPath(path); ; p = queueconfig.ParentPath(p) {
		if k, _ := md.kind(p); k != "" {
			return p
		}
	}
}

// hosts reports whether a dynamic queue may be created below path.
func (md *model) hosts(path string) bool {
	k, q := md.kind(path)
	switch k {
	case "config":
		return md.cfg != nil && (q == nil || q.IsParent)
	case kindDynParent:
		return true
	}
	return false
}

// template returns the max and maxapplications of a dynamic leaf below
// path: the child template of the nearest configured parent, else of its
// nearest ancestor that has one.
func (md *model) template(path string) (resources.Limit, uint64) {
	for p := path; p != ""; p = queueconfig.ParentPath(p) {
		if q := md.cfg.Queue(p); q != nil {
			for ; q != nil; q = q.Parent {
				if q.ChildTemplate != nil {
					return q.ChildTemplate.Max, q.ChildTemplate.MaxApplications
				}
			}
			return nil, 0
		}
	}
	return nil, 0
}

// created records the queues an allocation to path creates, as ugm does:
// dynamic when the request may create and the deepest existing queue hosts
// dynamic queues, else unconfigured.
func (md *model) created(r Request) {
	if k, _ := md.kind(r.Queue); k != "" {
		return
	}
	dynamic := md.cfg != nil && r.Create && md.hosts(md.deepest(r.Queue))
	if md.kinds == nil {
		md.kinds = map[string]string{}
	}
	for p := r.Queue; ; p = queueconfig.ParentPath(p) {
		if k, _ := md.kind(p); k != "" {
			return
		}
		switch {
		case !dynamic:
			md.kinds[p] = kindUnconf
		case p == r.Queue:
			md.kinds[p] = kindDynLeaf
		default:
			md.kinds[p] = kindDynParent
		}
	}
}

// released forgets the queues left without a live allocation.
func (md *model) released() {
	for p := range md.kinds {
		used := false
		for _, a := range md.live {
			if inSubtree(a.req.Queue, p) {
				used = true
				break
			}
		}
		if !used {
			delete(md.kinds, p)
		}
	}
}

func (md *model) running(app AppKey) []allocation {
	var out []allocation
	for _, a := range md.live {
		if a.req.App == app {
			out = append(out, a)
		}
	}
	return out
}

func inSubtree(leaf, q string) bool { return leaf == q || strings.HasPrefix(leaf, q+".") }

// modelGroup resolves a group by walking the config, entry by entry.
func modelGroup(cfg *queueconfig.Partition, leaf string, groups []string) string {
	if cfg == nil || len(groups) == 0 {
		return ""
	}
	// Walk the path's prefixes: a forced pod may sit in a queue the config
	// does not have, whose configured ancestors still resolve its group.
	for path := leaf; path != ""; path = queueconfig.ParentPath(path) {
		q := cfg.Queue(path)
		if q == nil {
			continue
		}
		wild := false
		for _, l := range q.Limits {
			for _, g := range l.Groups {
				if g == "*" {
					wild = true
					continue
				}
				for _, ug := range groups {
					if ug == g {
						return g
					}
				}
			}
		}
		if wild {
			return "*"
		}
	}
	return ""
}

func modelLimit(q *queueconfig.Queue, who, name string) *queueconfig.Limit {
	var wild *queueconfig.Limit
	for i := range q.Limits {
		l := &q.Limits[i]
		list := l.Users
		if who == WhoGroup {
			list = l.Groups
		}
		for _, n := range list {
			if n == name && (who == WhoUser || name != "*") {
				return l
			}
			if n == "*" && wild == nil {
				wild = l
			}
		}
	}
	return wild
}

// sum adds up live allocations matching keep in the subtree of q.
func (md *model) sum(q string, keep func(allocation) bool) (resources.Vector, int) {
	var v resources.Vector
	apps := map[AppKey]bool{}
	for _, a := range md.live {
		if inSubtree(a.req.Queue, q) && keep(a) {
			v.AddUnchecked(a.req.Resources)
			apps[a.req.App] = true
		}
	}
	return v, len(apps)
}

func modelExceeds(lim resources.Limit, maxApps uint64, usage resources.Vector, apps int, r resources.Vector, newApp bool) (string, string, bool) {
	if e, over := lim.Exceeds(usage, r); over {
		return LimitResources, e.ID.Name(), true
	}
	if newApp && maxApps > 0 && uint64(apps)+1 > maxApps {
		return LimitApplications, "", true
	}
	return "", "", false
}

// decide returns "" when r is allowed, else a short description of why not.
func (md *model) decide(r Request, force bool) (string, string) {
	// dynamic is set for a dynamic leaf, existing or to be created: its
	// limits are the child template's, and its configured ancestors'.
	dynamic := false
	if !force && md.cfg != nil {
		switch k, q := md.kind(r.Queue); {
		case k == "config":
			if q.IsParent {
				return "queue", ""
			}
		case k == kindDynLeaf:
			dynamic = true
		case k == "" && r.Create && md.hosts(md.deepest(r.Queue)):
			dynamic = true
		default:
			return "queue", ""
		}
	}
	running := md.running(r.App)
	if len(running) > 0 && (running[0].req.User != r.User || running[0].req.Queue != r.Queue) {
		return "conflict", ""
	}
	group := modelGroup(md.cfg, r.Queue, r.Groups)
	if len(running) > 0 {
		group = running[0].group
	}
	if force {
		return "", group
	}
	if md.cfg == nil {
		return "", group
	}
	newApp := len(running) == 0
	leaf := md.cfg.Queue(r.Queue)
	if dynamic {
		max, apps := md.template(r.Queue)
		u, n := md.sum(r.Queue, func(allocation) bool { return true })
		if kind, res, over := modelExceeds(max, apps, u, n, r.Resources, newApp); over {
			return fmt.Sprintf("queue %s %s %s %s", r.Queue, r.Queue, kind, res), group
		}
		for p := queueconfig.ParentPath(r.Queue); leaf == nil; p = queueconfig.ParentPath(p) {
			leaf = md.cfg.Queue(p)
		}
	}
	for q := leaf; q != nil; q = q.Parent {
		if l := modelLimit(q, WhoUser, r.User); l != nil {
			u, n := md.sum(q.Path, func(a allocation) bool { return a.req.User == r.User })
			if kind, res, over := modelExceeds(l.MaxResources, l.MaxApplications, u, n, r.Resources, newApp); over {
				return fmt.Sprintf("user %s %s %s %s", r.User, q.Path, kind, res), group
			}
		}
		if group != "" {
			if l := modelLimit(q, WhoGroup, group); l != nil {
				u, n := md.sum(q.Path, func(a allocation) bool { return a.group == group })
				if kind, res, over := modelExceeds(l.MaxResources, l.MaxApplications, u, n, r.Resources, newApp); over {
					return fmt.Sprintf("group %s %s %s %s", group, q.Path, kind, res), group
				}
			}
		}
		u, n := md.sum(q.Path, func(allocation) bool { return true })
		if kind, res, over := modelExceeds(q.Max, q.MaxApplications, u, n, r.Resources, newApp); over {
			return fmt.Sprintf("queue %s %s %s %s", q.Path, q.Path, kind, res), group
		}
	}
	return "", group
}

func describe(err error) string {
	var r *Refusal
	var qe *QueueError
	var ac *AppConflict
	switch {
	case err == nil:
		return ""
	case errors.As(err, &r):
		return fmt.Sprintf("%s %s %s %s %s", r.Who, r.Name, r.Queue, r.Limit, r.Resource)
	case errors.As(err, &qe):
		return "queue"
	case errors.As(err, &ac):
		return "conflict"
	}
	return "error: " + err.Error()
}

// randomConfig writes a config whose limits shrink with depth, so that most
// pass validation; the ones that do not are skipped (and must change
// nothing, which SetConfig is never called for).
func randomConfig(rng *rand.Rand) string {
	var b strings.Builder
	// scale is the largest value at this depth; values sit in
	// (scale/2, scale] so a child's (scale halves) never exceeds a parent's.
	limits := func(indent string, scale int) {
		n := rng.Intn(4)
		if n == 0 {
			return
		}
		fmt.Fprintf(&b, "%slimits:\n", indent)
		users := rng.Perm(4)[:1+rng.Intn(2)]
		groups := rng.Perm(4)[:1+rng.Intn(2)]
		entry := func(kind, name string) {
			fmt.Fprintf(&b, "%s- limit: %s %s\n%s  %s: [%q]\n", indent, kind, name, indent, kind, name)
			cpu, mem := scale/2+1+rng.Intn(scale/2), scale/2+1+rng.Intn(scale/2)
			apps := scale/4 + 1
			switch rng.Intn(3) {
			case 0:
				fmt.Fprintf(&b, "%s  maxresources: {vcore: %d, memory: %d}\n", indent, cpu, mem)
			case 1:
				fmt.Fprintf(&b, "%s  maxresources: {vcore: %d}\n%s  maxapplications: %d\n", indent, cpu, indent, apps)
			default:
				fmt.Fprintf(&b, "%s  maxapplications: %d\n", indent, apps)
			}
		}
		for _, u := range users {
			entry("users", fmt.Sprintf("u%d", u))
		}
		for _, g := range groups {
			entry("groups", fmt.Sprintf("g%d", g))
		}
		if rng.Intn(2) == 0 {
			entry("users", "*")
		}
		if rng.Intn(2) == 0 {
			entry("groups", "*")
		}
	}
	template := func(indent string) {
		if rng.Intn(2) == 0 {
			return
		}
		fmt.Fprintf(&b, "%schildtemplate:\n", indent)
		if rng.Intn(2) == 0 {
			fmt.Fprintf(&b, "%s  maxapplications: %d\n", indent, 1+rng.Intn(3))
		}
		fmt.Fprintf(&b, "%s  resources:\n%s    max: {vcore: %d}\n", indent, indent, 1+rng.Intn(3))
	}
	b.WriteString("partitions:\n- name: default\n  queues:\n  - name: root\n")
	template("    ")
	limits("    ", 16)
	b.WriteString("    queues:\n    - name: default\n")
	for _, p := range []string{"a", "b"} {
		fmt.Fprintf(&b, "    - name: %s\n", p)
		parentApps := 0
		if rng.Intn(2) == 0 {
			parentApps = 3 + rng.Intn(4)
			fmt.Fprintf(&b, "      maxapplications: %d\n", parentApps)
		}
		if rng.Intn(2) == 0 {
			fmt.Fprintf(&b, "      resources:\n        max: {vcore: %d}\n", 8+rng.Intn(10))
		}
		template("      ")
		limits("      ", 8)
		fmt.Fprintf(&b, "      queues:\n")
		for _, c := range []string{"x", "y"} {
			fmt.Fprintf(&b, "      - name: %s\n", c)
			if parentApps > 0 {
				fmt.Fprintf(&b, "        maxapplications: %d\n", 1+rng.Intn(parentApps))
			}
			limits("        ", 4)
		}
	}
	return b.String()
}

var (
	// diffQueues are the configured leaves, a parent, and queues outside the
	// config: root.nope, dynamic ones below root and the parents, two
	// levels deep (root.b.new is then a dynamic parent), and below a leaf.
	diffQueues = []string{"root.default", "root.a.x", "root.a.y", "root.b.x", "root.b.y", "root.a", "root.nope",
		"root.dyn", "root.a.dyn", "root.b.new.leaf", "root.b.new", "root.a.x.dyn"}
	diffUsers  = []string{"u0", "u1", "u2", "u3", "u4"}
	diffGroups = []string{"g0", "g1", "g2", "g3", "g4"}
)

func randomRequest(rng *rand.Rand) Request {
	var groups []string
	for _, g := range diffGroups {
		if rng.Intn(3) == 0 {
			groups = append(groups, g)
		}
	}
	var v resources.Vector
	v.Set(resources.Intern("cpu"), int64(rng.Intn(4))*500)
	v.Set(resources.Intern("memory"), int64(rng.Intn(3)))
	v.Set(resources.Intern("pods"), 1)
	return Request{
		User:      diffUsers[rng.Intn(len(diffUsers))],
		Groups:    groups,
		Queue:     diffQueues[rng.Intn(len(diffQueues))],
		App:       AppKey{Namespace: "ns", ID: fmt.Sprintf("app%d", rng.Intn(8))},
		Resources: v,
		Create:    rng.Intn(2) == 0,
	}
}

func TestDifferential(t *testing.T) {
	steps := 3000
	if testing.Short() {
		steps = 500
	}
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			m := New()
			md := &model{}
			nextID, configs, refusals := 0, 0, 0
			// Handles kept across steps, one per (user, queue, app), so
			// they go stale with config changes and ended applications.
			handles := map[string]*Handle{}
			handle := func(r Request) *Handle {
				if rng.Intn(2) == 0 {
					return nil
				}
				k := r.User + "|" + r.Queue + "|" + r.App.String()
				if handles[k] == nil {
					handles[k] = &Handle{}
				}
				return handles[k]
			}
			resolved, forcedResolved := 0, 0
			for step := 0; step < steps; step++ {
				switch op := rng.Intn(100); {
				case op < 5:
					cfg, err := queueconfig.Parse([]byte(randomConfig(rng)))
					if err != nil {
						continue
					}
					configs++
					md.cfg = cfg.Partition("default")
					m.SetConfig(md.cfg)
				case op < 35 && len(md.live) > 0:
					i := rng.Intn(len(md.live))
					a := md.live[i]
					md.live = append(md.live[:i], md.live[i+1:]...)
					md.released()
					if err := m.DecreaseWith(&a.req, handle(a.req)); err != nil {
						t.Fatalf("step %d: decrease %+v: %v", step, a.req, err)
					}
				default:
					r := randomRequest(rng)
					if (op < 60 || op >= 97) && len(md.live) > 0 {
						// Another pod of a running application: the case
						// handles resolve (forced too: a pod found running).
						l := md.live[rng.Intn(len(md.live))].req
						r.User, r.Groups, r.Queue, r.App, r.Create = l.User, l.Groups, l.Queue, l.App, l.Create
					}
					force := op >= 95
					want, group := md.decide(r, force)
					var err error
					if force {
						h := handle(r)
						if h.valid(&r) {
							forcedResolved++
						}
						_, err = m.ForceCommitWith("", &r, h)
					} else {
						h := handle(r)
						if got := describe(m.CheckWith(&r, h)); got != want {
							t.Fatalf("step %d: %+v: check with handle %+v says %q, model says %q", step, r, h, got, want)
						}
						if h.valid(&r) {
							resolved++
						}
						err = m.IncreaseWith(&r, h)
					}
					if got := describe(err); got != want {
						t.Fatalf("step %d: %+v (force %v): ugm says %q, model says %q", step, r, force, got, want)
					}
					if err == nil {
						md.created(r)
						md.live = append(md.live, allocation{id: nextID, req: r, group: group})
						nextID++
					} else {
						refusals++
					}
				}
				compareUsage(t, step, m, md)
			}
			for _, a := range md.live {
				if err := m.Decrease(&a.req); err != nil {
					t.Fatal(err)
				}
			}
			if len(m.Users()) != 0 || len(m.Groups()) != 0 || !m.Queues().ResourceUsage.IsZero() || len(m.apps) != 0 {
				t.Fatalf("not empty after releasing everything: users %d groups %d", len(m.Users()), len(m.Groups()))
			}
			if configs == 0 || refusals == 0 || nextID == 0 || resolved == 0 || forcedResolved == 0 {
				t.Fatalf("degenerate run: %d configs, %d refusals, %d allocations, %d and %d through a resolved handle", configs, refusals, nextID, resolved, forcedResolved)
			}
			t.Logf("%d allocations, %d refusals, %d configs, %d checks and %d forced charges through a resolved handle", nextID, refusals, configs, resolved, forcedResolved)
		})
	}
}

// compareUsage checks every user, group and queue node against the model.
func compareUsage(t *testing.T, step int, m *Manager, md *model) {
	t.Helper()
	check := func(what string, tree *QueueUsage, keep func(allocation) bool) {
		var walk func(q *QueueUsage)
		walk = func(q *QueueUsage) {
			want, n := md.sum(q.QueuePath, keep)
			if !want.Equal(q.ResourceUsage) || n != len(q.RunningApplications) {
				t.Fatalf("step %d: %s %s: ugm %v (%d apps), model %v (%d apps)", step, what, q.QueuePath, q.ResourceUsage, len(q.RunningApplications), want, n)
			}
			for _, c := range q.Children {
				walk(c)
			}
		}
		walk(tree)
	}
	users := map[string]bool{}
	groups := map[string]bool{}
	for _, a := range md.live {
		users[a.req.User] = true
		if a.group != "" {
			groups[a.group] = true
		}
	}
	got := m.Users()
	if len(got) != len(users) {
		t.Fatalf("step %d: ugm tracks %d users, model %d", step, len(got), len(users))
	}
	for _, u := range got {
		name := u.UserName
		check("user "+name, u.Queues, func(a allocation) bool { return a.req.User == name })
	}
	gg := m.Groups()
	if len(gg) != len(groups) {
		names := []string{}
		for _, g := range gg {
			names = append(names, g.GroupName)
		}
		sort.Strings(names)
		t.Fatalf("step %d: ugm tracks groups %v, model %v", step, names, groups)
	}
	for _, g := range gg {
		name := g.GroupName
		check("group "+name, g.Queues, func(a allocation) bool { return a.group == name })
	}
	check("queue", m.Queues(), func(allocation) bool { return true })
}
