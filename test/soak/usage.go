package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/ugm"
	"github.com/userquota/userquota/test/internal/controlplane"
)

// What the plugin defaults to (its args, as the soak runs it).
const (
	schedulerName = controlplane.SchedulerName
	defaultUser   = "nobody"
)

// podCharge is what the plugin charges for a pod: who, where, which
// application, how much.
type podCharge struct {
	user   string
	groups []string
	queue  string // full path
	app    string // namespace/id, as the REST API shows applications
	res    vec
	gang   *gangDef // nil: not a gang's pod
	// trees: the leaf each tree label names (tree -> node; forest.go).
	trees map[string]string
}

// chargeOf derives a pod's charge the way docs/design.md describes it.
func chargeOf(pod *v1.Pod) podCharge {
	c := podCharge{user: defaultUser, queue: defaultQueue}
	for _, key := range podmeta.UserInfoKeys {
		raw, ok := pod.Annotations[key]
		if !ok {
			continue
		}
		var ui podmeta.UserInfo
		if err := json.Unmarshal([]byte(raw), &ui); err == nil && ui.User != "" {
			c.user, c.groups = ui.User, ui.Groups
		}
		break
	}
	for _, m := range []struct {
		m   map[string]string
		key string
	}{{pod.Annotations, podmeta.LabelQueue}, {pod.Labels, podmeta.LabelQueue}, {pod.Annotations, podmeta.YuniKornQueue}, {pod.Labels, podmeta.YuniKornQueue}, {pod.Labels, "queue"}} {
		if v := m.m[m.key]; v != "" {
			c.queue = strings.ToLower(v)
			if !strings.HasPrefix(c.queue, "root.") && c.queue != "root" {
				c.queue = "root." + c.queue
			}
			break
		}
	}
	id := appID(pod)
	c.app = pod.Namespace + "/" + id
	c.gang = gangOf(pod, id)
	c.trees = treesOf(pod.Labels)
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	c.res = vec{resPods: 1}
	for name, q := range reqs {
		switch name {
		case v1.ResourceCPU:
			if m := q.MilliValue(); m != 0 {
				c.res[resCPU] = m
			}
		default:
			if x := q.Value(); x != 0 {
				c.res[string(name)] = x
			}
		}
	}
	return c
}

// appID: an id label (or annotation), else the gang object it names,
// else the controlling owner (a
// ReplicaSet named <deployment>-<pod-template-hash> counts as its
// Deployment), else the pod itself.
func appID(pod *v1.Pod) string {
	if id := podmeta.ExplicitAppID(pod.Labels, pod.Annotations); id != "" {
		return id
	}
	if id, ok := gang.ObjectApp(pod); ok {
		return id
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		kind, name := ref.Kind, ref.Name
		if h := pod.Labels["pod-template-hash"]; kind == "ReplicaSet" && h != "" && strings.HasSuffix(name, "-"+h) {
			kind, name = "Deployment", strings.TrimSuffix(name, "-"+h)
		}
		return kind + "/" + name
	}
	return "pod/" + string(pod.UID)
}

// chargedNow reports whether the plugin must be charging the pod: ours,
// bound, not terminal. (releaseOnTerminating is false: a pod being deleted
// is charged until it is gone.)
func chargedNow(pod *v1.Pod) bool {
	return pod.Spec.SchedulerName == schedulerName && pod.Spec.NodeName != "" &&
		pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed
}

// unode is the usage of one user, group or queue on one queue.
type unode struct {
	res  vec
	apps map[string]int // application -> charged pods in this subtree
}

func newUnode() *unode { return &unode{res: vec{}, apps: map[string]int{}} }

// usageModel is the usage recomputed from a set of charged pods, in the
// shape of the REST API: per user, per group and for all users, a tree of
// queues.
type usageModel struct {
	cfg      *qconfig // structure only: group resolution
	users    map[string]map[string]*unode
	groups   map[string]map[string]*unode
	queues   map[string]*unode
	appGroup map[string]string // running application -> its group ("" none)
	appUser  map[string]string
	appQueue map[string]string
	appPods  map[string]int
	// reserved: what gang reservations hold, by snap key (reserve).
	reserved map[string]*rnode
	// trees: the usage of each quota tree node's subtree, all resources
	// (tree -> node -> usage; forest.go).
	trees map[string]map[string]vec
}

func newUsageModel(cfg *qconfig) *usageModel {
	return &usageModel{cfg: cfg, users: map[string]map[string]*unode{}, groups: map[string]map[string]*unode{},
		queues: map[string]*unode{}, appGroup: map[string]string{}, appUser: map[string]string{}, appQueue: map[string]string{}, appPods: map[string]int{},
		trees: map[string]map[string]vec{}}
}

// conflict reports why a pod may not join its application: the
// application runs for another user or in another queue (docs/design.md;
// the plugin refuses such a pod). "" if it may.
func (m *usageModel) conflict(c podCharge) string {
	if m.appPods[c.app] == 0 || m.appUser[c.app] == c.user && m.appQueue[c.app] == c.queue {
		return ""
	}
	return fmt.Sprintf("application %s runs for user %q in %s", c.app, m.appUser[c.app], m.appQueue[c.app])
}

// groupFor is the group the pod's application is tracked against: fixed at
// its first pod.
func (m *usageModel) groupFor(c podCharge) string {
	if m.appPods[c.app] > 0 {
		return m.appGroup[c.app]
	}
	return m.cfg.resolveGroup(c.queue, c.groups)
}

func bump(tree map[string]*unode, path []string, c podCharge, sign int) {
	for _, q := range path {
		n := tree[q]
		if n == nil {
			n = newUnode()
			tree[q] = n
		}
		n.res.add(c.res, int64(sign))
		n.apps[c.app] += sign
		if n.apps[c.app] <= 0 {
			delete(n.apps, c.app)
		}
		if len(n.res) == 0 && len(n.apps) == 0 {
			delete(tree, q)
		}
	}
}

// charge adds a pod and returns the group it was tracked against.
func (m *usageModel) charge(c podCharge) string {
	group := m.groupFor(c)
	path := pathOf(c.queue)
	if m.users[c.user] == nil {
		m.users[c.user] = map[string]*unode{}
	}
	bump(m.users[c.user], path, c, 1)
	if group != "" {
		if m.groups[group] == nil {
			m.groups[group] = map[string]*unode{}
		}
		bump(m.groups[group], path, c, 1)
	}
	bump(m.queues, path, c, 1)
	m.treeCharge(c, 1)
	if m.appPods[c.app] == 0 {
		m.appGroup[c.app] = group
		m.appUser[c.app] = c.user
		m.appQueue[c.app] = c.queue
	}
	m.appPods[c.app]++
	return group
}

// uncharge removes a pod charged against group.
func (m *usageModel) uncharge(c podCharge, group string) {
	path := pathOf(c.queue)
	bump(m.users[c.user], path, c, -1)
	if len(m.users[c.user]) == 0 {
		delete(m.users, c.user)
	}
	if group != "" {
		bump(m.groups[group], path, c, -1)
		if len(m.groups[group]) == 0 {
			delete(m.groups, group)
		}
	}
	bump(m.queues, path, c, -1)
	m.treeCharge(c, -1)
	m.appPods[c.app]--
	if m.appPods[c.app] <= 0 {
		delete(m.appPods, c.app)
		delete(m.appGroup, c.app)
		delete(m.appUser, c.app)
		delete(m.appQueue, c.app)
	}
}

// node returns the usage of an entity on a queue (nil: none).
func (m *usageModel) node(w who, queue string) *unode {
	switch w.kind {
	case "user":
		return m.users[w.name][queue]
	case "group":
		return m.groups[w.name][queue]
	default:
		return m.queues[queue]
	}
}

// snap is usage in a comparable, flattened form: one line per entity and
// queue with usage, plus each user's application -> group map and each
// group's applications. The same type holds what the scheduler's REST API
// says and what the model recomputes.
type snap struct {
	lines map[string]string // "user alice root.alpha" -> "{cpu:.. pods:..} apps=[...]"
	pods  map[string]int64  // same keys -> pods (for the drift figure)
}

func nodeLine(res vec, apps []string) string {
	sort.Strings(apps)
	return res.String() + " apps=" + strings.Join(apps, ",")
}

func (m *usageModel) snap() snap {
	s := snap{lines: map[string]string{}, pods: map[string]int64{}}
	put := func(key string, n *unode) {
		apps := make([]string, 0, len(n.apps))
		for a := range n.apps {
			apps = append(apps, a)
		}
		s.lines[key] = nodeLine(n.res, apps)
		s.pods[key] = n.res[resPods]
	}
	for u, tree := range m.users {
		for q, n := range tree {
			put("user "+u+" "+q, n)
		}
	}
	for g, tree := range m.groups {
		for q, n := range tree {
			put("group "+g+" "+q, n)
		}
	}
	for q, n := range m.queues {
		put("queue "+q, n)
	}
	for k, r := range m.reserved {
		s.lines[reservedKey(k)] = reservedLine(r.res, r.gangs)
	}
	m.treeSnap(s)
	userGroups := map[string][]string{}
	groupApps := map[string][]string{}
	for app, user := range m.appUser {
		g := m.appGroup[app]
		userGroups[user] = append(userGroups[user], app+"="+g)
		if g != "" {
			groupApps[g] = append(groupApps[g], app)
		}
	}
	for u, l := range userGroups {
		sort.Strings(l)
		s.lines["user "+u+" groups"] = strings.Join(l, ",")
	}
	for g, l := range groupApps {
		sort.Strings(l)
		s.lines["group "+g+" applications"] = strings.Join(l, ",")
	}
	return s
}

// restSnap flattens the three usage answers into a snap.
func restSnap(users []ugm.UserUsage, groups []ugm.GroupUsage, queues *ugm.QueueUsage) snap {
	s := snap{lines: map[string]string{}, pods: map[string]int64{}}
	var walk func(prefix string, n *ugm.QueueUsage)
	walk = func(prefix string, n *ugm.QueueUsage) {
		if n == nil {
			return
		}
		res := vec{}
		for k, x := range n.ResourceUsage.Map() {
			if x != 0 {
				res[k] = x
			}
		}
		if len(res) > 0 || len(n.RunningApplications) > 0 {
			key := prefix + n.QueuePath
			s.lines[key] = nodeLine(res, append([]string(nil), n.RunningApplications...))
			s.pods[key] = res[resPods]
		}
		if len(n.ReservedGangs) > 0 {
			s.lines[reservedKey(prefix+n.QueuePath)] = reservedLine(vec(n.ReservedResource.Map()), n.ReservedGangs)
		}
		for _, c := range n.Children {
			walk(prefix, c)
		}
	}
	for _, u := range users {
		walk("user "+u.UserName+" ", u.Queues)
		if len(u.Groups) > 0 {
			l := make([]string, 0, len(u.Groups))
			for app, g := range u.Groups {
				l = append(l, app+"="+g)
			}
			sort.Strings(l)
			s.lines["user "+u.UserName+" groups"] = strings.Join(l, ",")
		}
	}
	for _, g := range groups {
		walk("group "+g.GroupName+" ", g.Queues)
		if len(g.Applications) > 0 {
			l := append([]string(nil), g.Applications...)
			sort.Strings(l)
			s.lines["group "+g.GroupName+" applications"] = strings.Join(l, ",")
		}
	}
	walk("queue ", queues)
	return s
}

// diff lists the keys on which two snaps differ, sorted, and the drift:
// how many entries differ and the largest difference in pods on one.
func diff(sched, model snap) (lines []string, entries int, maxPods int64) {
	keys := map[string]bool{}
	for k := range sched.lines {
		keys[k] = true
	}
	for k := range model.lines {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		a, aok := sched.lines[k]
		b, bok := model.lines[k]
		if aok == bok && a == b {
			continue
		}
		entries++
		d := sched.pods[k] - model.pods[k]
		if d < 0 {
			d = -d
		}
		if d > maxPods {
			maxPods = d
		}
		if !aok {
			a = "(absent)"
		}
		if !bok {
			b = "(absent)"
		}
		lines = append(lines, fmt.Sprintf("%s\n    scheduler:  %s\n    recomputed: %s", k, a, b))
	}
	return lines, entries, maxPods
}

// driftApps names the applications a diff's entries disagree on: those on
// one side of an entry only, else (same applications, other amounts) every
// application of the entry, at most 20 in all.
func driftApps(sched, model snap) []string {
	appsOf := func(line string) map[string]bool {
		out := map[string]bool{}
		list := line
		if i := strings.Index(line, " apps="); i >= 0 {
			list = line[i+len(" apps="):]
		}
		for _, a := range strings.Split(list, ",") {
			if j := strings.Index(a, "="); j >= 0 {
				a = a[:j] // "user X groups": app=group
			}
			if a != "" {
				out[a] = true
			}
		}
		return out
	}
	seen := map[string]bool{}
	var apps []string
	add := func(a string) {
		if !seen[a] && len(apps) < 20 {
			seen[a] = true
			apps = append(apps, a)
		}
	}
	for k, a := range sched.lines {
		if isTreeKey(k) {
			continue // no applications: explainTrees lists the pods
		}
		if model.lines[k] != a {
			sa, ma := appsOf(a), appsOf(model.lines[k])
			only := false
			for x := range sa {
				if !ma[x] {
					add(x)
					only = true
				}
			}
			for x := range ma {
				if !sa[x] {
					add(x)
					only = true
				}
			}
			if !only && len(sa) <= 3 {
				for x := range sa {
					add(x)
				}
			}
		}
	}
	for k, b := range model.lines {
		if _, ok := sched.lines[k]; !ok && !isTreeKey(k) {
			for x := range appsOf(b) {
				add(x)
			}
		}
	}
	sort.Strings(apps)
	return apps
}

// fits reports whether req, for a pod (or the rest of a gang) of charge c,
// fits every limit on its path and every node of its trees, strictest of
// cfgs, on m's usage (none when usage is false); newApp: it starts an
// application.
func (m *usageModel) fits(c podCharge, req vec, newApp, usage bool, cfgs []*qconfig) bool {
	group := m.groupFor(c)
	ents := []who{{kind: "user", name: c.user}}
	if group != "" {
		ents = append(ents, who{kind: "group", name: group})
	}
	ents = append(ents, who{kind: "queue"})
	for _, q := range pathOf(c.queue) {
		for _, w := range ents {
			ls := make([]*limit, 0, len(cfgs))
			for _, cfg := range cfgs {
				ls = append(ls, cfg.limitFor(w, q))
			}
			l := strictest(ls)
			if l == nil {
				continue
			}
			after := vec{}
			apps := 0
			if n := m.node(w, q); n != nil && usage {
				after = n.res.clone()
				apps = len(n.apps)
			}
			after.add(req, 1)
			if newApp {
				apps++
			}
			if l.over(after, apps, req, newApp) != "" {
				return false
			}
		}
	}
	// Every node of its trees, from its leaf up (forests.md: all trees or
	// none).
	for _, tn := range treeNodesOf(c) {
		ls := make([]*limit, 0, len(cfgs))
		for _, cfg := range cfgs {
			ls = append(ls, cfg.treeLimit(tn[0], tn[1]))
		}
		l := strictest(ls)
		if l == nil {
			continue
		}
		after := vec{}
		if usage {
			after = m.treeUsage(tn[0], tn[1]).clone()
		}
		after.add(req, 1)
		if l.over(after, 0, req, false) != "" {
			return false
		}
	}
	return true
}
