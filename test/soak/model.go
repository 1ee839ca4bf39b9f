package main

// The soak's own model of the queue config and of what the plugin charges,
// written from docs/design.md and docs/api.md, independently of pkg/ugm: it
// is the oracle the scheduler's REST usage is compared with. Only the config
// generator's output is handed to pkg/queueconfig, to be sure the scheduler
// will accept it.

import (
	"crypto/sha256"
	"fmt"
	"math/rand"
	"sort"
	"strings"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/test/internal/controlplane"
)

// Resource names as the REST API reports them: cpu in millicores, memory in
// bytes, pods counted.
const (
	resCPU    = "cpu"
	resMemory = "memory"
	resPods   = "pods"
)

// vec is an amount of resources in base units.
type vec map[string]int64

func (v vec) add(o vec, sign int64) {
	for k, x := range o {
		v[k] += sign * x
		if v[k] == 0 {
			delete(v, k)
		}
	}
}

func (v vec) clone() vec {
	out := make(vec, len(v))
	for k, x := range v {
		out[k] = x
	}
	return out
}

func (v vec) String() string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, v[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func vecEqual(a, b vec) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		if b[k] != x {
			return false
		}
	}
	return true
}

// limitDef is one entry of a queue's limits.
type limitDef struct {
	name    string
	users   []string
	groups  []string
	max     vec // resources it names; nil: none
	maxApps uint64
}

// queueDef is one queue of the config.
type queueDef struct {
	name, path string
	parent     *queueDef
	children   []*queueDef
	max        vec
	maxApps    uint64
	limits     []limitDef
}

// qconfig is one version of the queue config.
type qconfig struct {
	version int
	yaml    string
	sum     string // the /ws/v1/config checksum (of the queue config and the trees)
	root    *queueDef
	byPath  map[string]*queueDef
	// trees are the quotas of the quota trees beside the queue config
	// (forest.go): tree -> node -> quota.
	trees treeQuotas
}

// leaves are the leaf queues pods name; root.default is also where a pod
// naming no queue goes (the plugin's defaultQueue).
var leafPaths = []string{"root.default", "root.alpha.a1", "root.alpha.a2", "root.beta.b1", "root.beta.b2"}

const defaultQueue = "root.default"

// groupName is the i-th named group; "guests" is a group no limit names
// (its users resolve to the "*" group).
func groupName(i int) string { return fmt.Sprintf("g%d", i) }

const unnamedGroup = "guests"

// configParams are the amounts one config version draws at random.
type configParams struct {
	userPods, userCPU int64  // root "*" user
	vipPods           int64  // root, the named vip users
	groupPods         int64  // root, each named group
	starGroupPods     int64  // root "*" group
	alphaCPU          int64  // root.alpha resources.max cpu (milli)
	alphaUserPods     int64  // root.alpha "*" user pods
	alphaUserApps     uint64 // root.alpha "*" user maxapplications
	a1Apps            uint64 // root.alpha.a1 maxapplications
	a2UserPods        int64  // root.alpha.a2 "*" user pods
	b1GroupPods       int64  // root.beta.b1, the one named group
	b2Pods            int64  // root.beta.b2 resources.max pods
	b2StarGroupPods   int64  // root.beta.b2 "*" group pods
	b2GroupPods       int64  // root.beta.b2 named group pods
	defaultUserMemory int64  // root.default "*" user memory
}

// newConfig draws a config version. The structure (queues, which names
// every limit entry lists, their order) is the same in every version, only
// the amounts change: so the group an application resolves to never depends
// on the version (docs/design.md: resolved once, fixed for its life), and
// the model's recomputation needs no history of it. Child limits never
// exceed their parent's (YuniKorn's validator); pkg/queueconfig checks the
// result.
func newConfig(rng *rand.Rand, version, users, groups int, vips []string) *qconfig {
	r := func(lo, hi int64) int64 { return lo + rng.Int63n(hi-lo+1) }
	// Scale the group and queue limits with the number of users, so a
	// run with more users has about the same fraction refused.
	perGroup := int64(users/groups + 1)
	p := configParams{
		userPods:      r(3, 5),
		userCPU:       r(1500, 3000),
		vipPods:       r(6, 9),
		groupPods:     r(2*perGroup, 3*perGroup),
		starGroupPods: r(perGroup, 2*perGroup),
		alphaUserApps: uint64(r(2, 4)),
		a1Apps:        uint64(r(int64(users/3)+2, int64(users/2)+4)),
		b2Pods:        r(int64(users/3)+2, int64(users/2)+4),
	}
	p.alphaCPU = r(int64(users)*250, int64(users)*450)
	p.alphaUserPods = r(2, p.userPods)
	p.a2UserPods = r(1, p.alphaUserPods)
	p.b1GroupPods = r(perGroup, p.groupPods)
	// A limit on a queue may not exceed the queue's own max.
	p.b2StarGroupPods = r(2, min(p.starGroupPods, p.b2Pods))
	p.b2GroupPods = r(2, min(p.groupPods, p.b2Pods))
	p.defaultUserMemory = r(1, 2) << 30

	root := &queueDef{name: "root", path: "root"}
	var rootLimits []limitDef
	for g := 0; g < groups; g++ {
		rootLimits = append(rootLimits, limitDef{name: "group " + groupName(g), groups: []string{groupName(g)},
			max: vec{resPods: p.groupPods}})
	}
	rootLimits = append(rootLimits,
		limitDef{name: "other groups", groups: []string{"*"}, max: vec{resPods: p.starGroupPods}},
		limitDef{name: "vips", users: vips, max: vec{resPods: p.vipPods}},
		limitDef{name: "everyone", users: []string{"*"}, max: vec{resPods: p.userPods, resCPU: p.userCPU}},
	)
	root.limits = rootLimits
	add := func(parent *queueDef, name string) *queueDef {
		q := &queueDef{name: name, path: parent.path + "." + name, parent: parent}
		parent.children = append(parent.children, q)
		return q
	}
	def := add(root, "default")
	def.limits = []limitDef{{name: "default users", users: []string{"*"}, max: vec{resMemory: p.defaultUserMemory}}}
	alpha := add(root, "alpha")
	alpha.max = vec{resCPU: p.alphaCPU}
	alpha.limits = []limitDef{{name: "alpha users", users: []string{"*"}, max: vec{resPods: p.alphaUserPods}, maxApps: p.alphaUserApps}}
	a1 := add(alpha, "a1")
	a1.maxApps = p.a1Apps
	a2 := add(alpha, "a2")
	a2.limits = []limitDef{{name: "a2 users", users: []string{"*"}, max: vec{resPods: p.a2UserPods}, maxApps: p.alphaUserApps}}
	beta := add(root, "beta")
	b1 := add(beta, "b1")
	b1.limits = []limitDef{{name: "b1 g1", groups: []string{groupName(1 % groups)}, max: vec{resPods: p.b1GroupPods}}}
	b2 := add(beta, "b2")
	b2.max = vec{resPods: p.b2Pods}
	// A named group, then "*": users of g2 are tracked as g2 here, every
	// other grouped user as the cumulative group "*" (hiding their named
	// group at root).
	b2.limits = []limitDef{
		{name: "b2 g2", groups: []string{groupName(2 % groups)}, max: vec{resPods: p.b2GroupPods}},
		{name: "b2 groups", groups: []string{"*"}, max: vec{resPods: p.b2StarGroupPods}},
	}

	c := &qconfig{version: version, root: root, byPath: map[string]*queueDef{}}
	var walk func(q *queueDef)
	walk = func(q *queueDef) {
		c.byPath[q.path] = q
		for _, ch := range q.children {
			walk(ch)
		}
	}
	walk(root)
	c.yaml = renderYAML(root, version)
	c.trees = drawTrees(r, users)
	c.sum = fmt.Sprintf("%x", sha256.Sum256([]byte(c.yaml)))
	if cfg, err := c.load(); err == nil {
		c.sum = cfg.Checksum
	}
	return c
}

// data is the ConfigMap's data: the queue config and the quota trees.
func (c *qconfig) data() map[string]string {
	d := map[string]string{controlplane.QueueConfigKey: c.yaml}
	for _, t := range soakTrees {
		if q := c.trees[t.name]; q != nil {
			d[treeKeyOf(t.name)] = renderTree(&t, q)
		}
	}
	return d
}

// load reads the ConfigMap's data as the scheduler will
// (queueconfig.LoadConfigMap: the queue config and every tree).
func (c *qconfig) load() (*queueconfig.Config, error) {
	return queueconfig.LoadConfigMap(c.data(), controlplane.QueueConfigKey, "default")
}

// validate loads the version as the scheduler will (pkg/queueconfig) and
// checks that it has the trees.
func (c *qconfig) validate() error {
	cfg, err := c.load()
	if err != nil {
		return err
	}
	if len(cfg.Trees) != len(soakTrees) {
		return fmt.Errorf("%d quota trees loaded, want %d", len(cfg.Trees), len(soakTrees))
	}
	return nil
}

func renderVec(b *strings.Builder, v vec) {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		switch k {
		case resCPU:
			parts = append(parts, fmt.Sprintf("vcore: \"%dm\"", v[k]))
		default:
			parts = append(parts, fmt.Sprintf("%s: \"%d\"", k, v[k]))
		}
	}
	b.WriteString("{" + strings.Join(parts, ", ") + "}")
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func renderYAML(root *queueDef, version int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# soak config version %d (test/soak)\npartitions:\n- name: default\n  queues:\n", version)
	var q func(d *queueDef, indent string)
	q = func(d *queueDef, indent string) {
		fmt.Fprintf(&b, "%s- name: %s\n", indent, d.name)
		in := indent + "  "
		if len(d.children) > 0 {
			fmt.Fprintf(&b, "%sparent: true\n", in)
		}
		if d.maxApps > 0 {
			fmt.Fprintf(&b, "%smaxapplications: %d\n", in, d.maxApps)
		}
		if len(d.max) > 0 {
			fmt.Fprintf(&b, "%sresources:\n%s  max: ", in, in)
			renderVec(&b, d.max)
			b.WriteString("\n")
		}
		if len(d.limits) > 0 {
			fmt.Fprintf(&b, "%slimits:\n", in)
			for _, l := range d.limits {
				fmt.Fprintf(&b, "%s- limit: %q\n", in, l.name)
				if len(l.users) > 0 {
					fmt.Fprintf(&b, "%s  users: %s\n", in, quoteList(l.users))
				}
				if len(l.groups) > 0 {
					fmt.Fprintf(&b, "%s  groups: %s\n", in, quoteList(l.groups))
				}
				if len(l.max) > 0 {
					fmt.Fprintf(&b, "%s  maxresources: ", in)
					renderVec(&b, l.max)
					b.WriteString("\n")
				}
				if l.maxApps > 0 {
					fmt.Fprintf(&b, "%s  maxapplications: %d\n", in, l.maxApps)
				}
			}
		}
		if len(d.children) > 0 {
			fmt.Fprintf(&b, "%squeues:\n", in)
			for _, c := range d.children {
				q(c, in)
			}
		}
	}
	q(root, "  ")
	return b.String()
}

// pathOf returns the queues from root to the leaf path.
func pathOf(leaf string) []string {
	parts := strings.Split(leaf, ".")
	out := make([]string, len(parts))
	for i := range parts {
		out[i] = strings.Join(parts[:i+1], ".")
	}
	return out
}

// limit is what one limit entry imposes; nil means no entry applies.
type limit struct {
	max     vec
	maxApps uint64
}

// userLimit: the entry naming the user on this queue, else the "*" entry.
func (q *queueDef) userLimit(user string) *limit {
	var star *limit
	for _, l := range q.limits {
		for _, u := range l.users {
			if u == user {
				return &limit{max: l.max, maxApps: l.maxApps}
			}
			if u == "*" && star == nil {
				star = &limit{max: l.max, maxApps: l.maxApps}
			}
		}
	}
	return star
}

// groupLimit: for a tracked group, its named entry on this queue, else the
// "*" group entry (also the cumulative group "*"'s own).
func (q *queueDef) groupLimit(group string) *limit {
	var star *limit
	for _, l := range q.limits {
		for _, g := range l.groups {
			if g == group && g != "*" {
				return &limit{max: l.max, maxApps: l.maxApps}
			}
			if g == "*" && star == nil {
				star = &limit{max: l.max, maxApps: l.maxApps}
			}
		}
	}
	return star
}

func (q *queueDef) queueLimit() *limit {
	if len(q.max) == 0 && q.maxApps == 0 {
		return nil
	}
	return &limit{max: q.max, maxApps: q.maxApps}
}

// resolveGroup: walking leaf to root, the first queue with a limit entry
// naming one of the user's groups decides (earliest entry, then earliest
// name in it); else a "*" group entry there means the cumulative group "*";
// else up. No groups: no group tracking ("").
func (c *qconfig) resolveGroup(leaf string, groups []string) string {
	if len(groups) == 0 {
		return ""
	}
	has := map[string]bool{}
	for _, g := range groups {
		has[g] = true
	}
	path := pathOf(leaf)
	for i := len(path) - 1; i >= 0; i-- {
		q := c.byPath[path[i]]
		if q == nil {
			continue
		}
		star := false
		for _, l := range q.limits {
			for _, g := range l.groups {
				if g == "*" {
					star = true
				} else if has[g] {
					return g
				}
			}
		}
		if star {
			return "*"
		}
	}
	return ""
}

// who names what a limit applies to.
type who struct {
	kind string // user, group, queue
	name string // user or group name, queue path for queues
}

// limitFor returns the limit of one tracked entity on one queue.
func (c *qconfig) limitFor(w who, queue string) *limit {
	q := c.byPath[queue]
	if q == nil {
		return nil
	}
	switch w.kind {
	case "user":
		return q.userLimit(w.name)
	case "group":
		return q.groupLimit(w.name)
	default:
		return q.queueLimit()
	}
}

// loosest combines the limits of several config versions that may be in
// force: a resource is bounded only if every version bounds it, by the
// largest maximum; applications likewise. nil: unlimited.
func loosest(ls []*limit) *limit {
	if len(ls) == 0 {
		return nil
	}
	out := &limit{max: vec{}}
	for i, l := range ls {
		if l == nil {
			return nil
		}
		if i == 0 {
			out.max = l.max.clone()
			out.maxApps = l.maxApps
			continue
		}
		for k, x := range out.max {
			y, ok := l.max[k]
			if !ok {
				delete(out.max, k)
			} else if y > x {
				out.max[k] = y
			}
		}
		if l.maxApps == 0 || out.maxApps == 0 {
			out.maxApps = 0
		} else if l.maxApps > out.maxApps {
			out.maxApps = l.maxApps
		}
	}
	if len(out.max) == 0 && out.maxApps == 0 {
		return nil
	}
	return out
}

// strictest combines limits that may be in force into the one a pod must
// fit under all of: every resource any version bounds, by the smallest
// maximum.
func strictest(ls []*limit) *limit {
	out := &limit{max: vec{}}
	any := false
	for _, l := range ls {
		if l == nil {
			continue
		}
		any = true
		for k, y := range l.max {
			if x, ok := out.max[k]; !ok || y < x {
				out.max[k] = y
			}
		}
		if l.maxApps > 0 && (out.maxApps == 0 || l.maxApps < out.maxApps) {
			out.maxApps = l.maxApps
		}
	}
	if !any {
		return nil
	}
	return out
}

// over reports why usage after adding req (already included in usage)
// breaks the limit, or "" if it does not. Only resources the request asks
// for count (docs/design.md: a limit lowered below usage does not block a
// request that does not add to it); applications only for a new one.
func (l *limit) over(usage vec, apps int, req vec, newApp bool) string {
	if l == nil {
		return ""
	}
	keys := make([]string, 0, len(l.max))
	for k := range l.max {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if req[k] > 0 && usage[k] > l.max[k] {
			return fmt.Sprintf("%s %d > max %d", k, usage[k], l.max[k])
		}
	}
	if newApp && l.maxApps > 0 && uint64(apps) > l.maxApps {
		return fmt.Sprintf("applications %d > max %d", apps, l.maxApps)
	}
	return ""
}

// adjusted returns a copy whose every pods limit is moved by delta (at
// least 1): the harness's self-test (-selftest) gives its checks wrong
// limits on purpose, to see them fire.
func (c *qconfig) adjusted(delta int64) *qconfig {
	out := &qconfig{version: c.version, yaml: c.yaml, sum: c.sum, byPath: map[string]*queueDef{}, trees: treeQuotas{}}
	adj := func(v vec) vec {
		if v == nil {
			return nil
		}
		o := v.clone()
		if p, ok := o[resPods]; ok {
			o[resPods] = max(p+delta, 1)
		}
		return o
	}
	var cp func(q, parent *queueDef) *queueDef
	cp = func(q, parent *queueDef) *queueDef {
		n := &queueDef{name: q.name, path: q.path, parent: parent, max: adj(q.max), maxApps: q.maxApps}
		for _, l := range q.limits {
			l.max = adj(l.max)
			n.limits = append(n.limits, l)
		}
		for _, ch := range q.children {
			n.children = append(n.children, cp(ch, n))
		}
		out.byPath[n.path] = n
		return n
	}
	out.root = cp(c.root, nil)
	for t, nodes := range c.trees {
		out.trees[t] = map[string]vec{}
		for n, q := range nodes {
			out.trees[t][n] = adj(q)
		}
	}
	return out
}
