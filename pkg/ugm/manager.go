package ugm

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
)

// AppKey identifies an application. Application ids are only unique within
// a namespace, so the namespace is part of the key.
type AppKey struct {
	Namespace string
	ID        string
}

// String renders the key as "namespace/id" (just "id" without a namespace).
func (k AppKey) String() string {
	if k.Namespace == "" {
		return k.ID
	}
	return k.Namespace + "/" + k.ID
}

// Request is one allocation as ugm sees it: who, where, for which
// application, and how much.
type Request struct {
	User   string
	Groups []string
	// Queue is the full path of a leaf queue ("root.a.b").
	Queue     string
	App       AppKey
	Resources resources.Vector
	// Create says the placement rule that chose Queue may create it: when
	// it does not exist, the increase creates it (and missing parents) as
	// a dynamic queue with the child template in force for it; a check
	// treats it as an empty queue with those limits and creates nothing.
	Create bool
	// NonPreemptible marks a pod that must never be preempted: in an
	// elastic queue it may only use guaranteed capacity, never capacity
	// lent by other queues (nonpreemptible.go).
	NonPreemptible bool
	// Trees is the request's part in the quota trees (forest.go): the
	// pod's labels that name its nodes, and the nodes ugm charged. Nil
	// for a pod that carries no tree label. Immutable: ugm replaces it on
	// its own copies of a request, never changes it.
	Trees *TreePart
}

// ErrUnknownApp is returned by Decrease for an application ugm does not
// track: nothing is changed.
var ErrUnknownApp = errors.New("application is not tracked")

// app is a running application: its owner, the group resolved for it at its
// first allocation (fixed for its life; nil when none), its queue, and how
// many allocations it holds.
type app struct {
	key         AppKey
	user        *tracker
	group       *tracker
	leaf        *queue
	allocations int
	// usage is what its allocations hold together (fair ordering).
	usage resources.Vector
	// userLeaf and groupLeaf are its user's and group's tracker nodes on
	// leaf (groupLeaf nil without a group): they stay while it runs, so
	// its checks and releases climb from them without a lookup.
	userLeaf, groupLeaf *node
	// ended is set when it stops running: a Handle to it is stale.
	ended bool
	// inline backs usage for the common resources, as in a node.
	inline [4]int64
}

// Manager is the User Group Manager of one partition. The zero value is not
// usable; call New. All methods are safe for concurrent use (see the package
// comment for the locking).
type Manager struct {
	mu sync.RWMutex
	// partition is the partition in force (inForce's); nil means no
	// config: every queue under root is usable and nothing is limited.
	partition *queueconfig.Partition
	// inForce is the config in force as one value, stored under mu for
	// writing together with the compiled limits (config.go).
	inForce atomic.Pointer[InForce]
	queues  queueTree
	users   map[string]*tracker
	groups  map[string]*tracker
	apps    map[AppKey]*app
	// shares is the share table in force for elastic queues (nil: none
	// computed yet, shares are not checked). Swapped without m.mu.
	shares atomic.Pointer[shareIndex]
	// adm is the room held for pods admitted and not charged yet
	// (admission.go).
	adm admissions
	// forest is the quota trees in force and what is charged on them
	// (forest.go).
	forest forest
}

// New returns a Manager with no config: usage is tracked, nothing is limited.
func New() *Manager {
	return &Manager{
		queues: newQueueTree(),
		users:  map[string]*tracker{},
		groups: map[string]*tracker{},
		apps:   map[AppKey]*app{},
		adm:    newAdmissions(),
	}
}

// Check reports whether req would fit every limit, without changing
// anything: nil, or a *Refusal, *QueueError or *AppConflict. It takes the
// read lock and allocates nothing when the answer is yes.
func (m *Manager) Check(req *Request) error {
	if err := validate(req); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, _, _, err := m.check(req, nil)
	return err
}

// CheckWith is Check through h, the caller's handle for req: a valid one
// skips the lookups, an unresolved or stale one is resolved here (see
// Handle). The answer is Check's.
func (m *Manager) CheckWith(req *Request, h *Handle) error {
	if err := validate(req); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, _, _, err := m.checkFor(req, nil, nil, h)
	return err
}

// Increase checks req and, if it fits, commits it on every queue of the path
// for the user, the application's group and the queues, all or nothing. The
// first allocation of an application starts it running and fixes its group.
func (m *Manager) Increase(req *Request) error { return m.CommitWith("", req, nil) }

// IncreaseWith is Increase through h, the caller's handle for req (see
// CheckWith); h is resolved to req's application once it runs.
func (m *Manager) IncreaseWith(req *Request, h *Handle) error { return m.CommitWith("", req, h) }

// Commit is Increase for the pod key: the room it holds (Admit) does not
// count against it, and is turned into its charge.
func (m *Manager) Commit(key string, req *Request) error { return m.CommitWith(key, req, nil) }

// CommitWith is Commit through h, the caller's handle for req (nil or
// not valid: the one the pod's admission resolved, if any); h is resolved
// to req's application once it runs.
func (m *Manager) CommitWith(key string, req *Request, h *Handle) error {
	running := h.running()
	if err := validate(req); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	own := m.adm.byKey[key]
	use := h
	if own != nil && !h.valid(req) {
		use, running = &own.h, own.h.running()
	}
	running.touch()
	leaf, a, group, err := m.checkFor(req, own, nil, use)
	if err != nil {
		return err
	}
	m.unadmit(key, false)
	a, err = m.commit(req, leaf, a, group, false)
	if err == nil {
		h.resolve(req, a)
	}
	return err
}

// ForceIncrease commits req without checking limits: for pods that already
// run (a restart or failover finds them bound), which the scheduler cannot
// refuse. A queue missing from the config is tracked, unlimited, until
// empty. It still refuses an application conflict or a bad request.
// ForceCommit also says which limit the charge went over.
func (m *Manager) ForceIncrease(req *Request) error {
	_, err := m.ForceCommit("", req)
	return err
}

// ForceCommit is ForceIncrease for the pod key: the room it held, if any,
// goes. over is the first limit of the config the charge took its user,
// group or queue over (overLimit), nil when it fit. The charge is made
// either way; err means nothing changed.
func (m *Manager) ForceCommit(key string, req *Request) (over *Refusal, err error) {
	return m.ForceCommitWith(key, req, nil)
}

// ForceCommitWith is ForceCommit through h, the caller's handle for req
// (nil: none): a valid one gives the application and its leaf without a
// lookup, and h is resolved to req's application once it runs, so that
// the charge's release (DecreaseWith) needs none either.
func (m *Manager) ForceCommitWith(key string, req *Request, h *Handle) (over *Refusal, err error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var leaf *queue
	var a *app
	if h.valid(req) {
		// A running application of req's user in req's queue.
		a, leaf = h.a, h.leaf
	} else {
		leaf = m.queues.byPath[req.Queue] // nil: commit creates it
		a = m.apps[req.App]
		if a != nil && (a.user.name != req.User || a.leaf.path != req.Queue) {
			return nil, &AppConflict{App: req.App, User: req.User, Queue: req.Queue, HeldUser: a.user.name, HeldQueue: a.leaf.path}
		}
	}
	group := ""
	if a == nil {
		group = m.newAppGroup(req, leaf)
	}
	over = m.overLimit(req, leaf, a, group)
	if over == nil && len(m.forest.trees) > 0 {
		// Where it fits on usage alone, past soft nodes; over where not.
		_ = m.forest.visit(req, func(t *treeState, n *treeNodeState) {
			if over == nil {
				_, over = m.placeTree(t, n, req.Resources, nil, false, nil)
			}
		})
	}
	m.unadmit(key, false)
	a, err = m.commit(req, leaf, a, group, true)
	if err != nil {
		return nil, err
	}
	h.resolve(req, a)
	return over, nil
}

// overLimit is the first limit of the config that charging req takes its
// user, group or queue over, or nil: the walk of the check a new pod meets
// (leaf to root: the user's and the group's maxresources and
// maxapplications, the queue's max and maxapplications), on usage alone.
// Room held by admissions is not counted: it is promised, not used (a
// follower holds room for pods it never binds), and a forced pod that
// takes it leaves the admitted pods to be refused, not over. Runtime
// shares and the guaranteed share of non-preemptible pods are not
// checked: they move with demand, and reclaim corrects them. leaf nil is a
// queue the commit creates: its ancestors count, and for a dynamic queue
// its child template's max. a is req's running application (nil: new),
// group the one resolved for a new one. Callers hold m.mu. It allocates
// nothing when nothing is over.
func (m *Manager) overLimit(req *Request, leaf *queue, a *app, group string) *Refusal {
	if m.partition == nil {
		return nil // nothing is limited
	}
	from := leaf
	if from == nil {
		from = m.queues.deepest(req.Queue)
		if tl := from.childLimits; req.Create && tl != nil {
			l := level{who: WhoQueue, name: req.Queue, max: tl.max, maxApps: tl.maxApps}
			if r := l.admit(req.Queue, req.Resources, false); r != nil {
				return r
			}
		}
	}
	var g *tracker
	if a != nil {
		g, group = a.group, ""
		if g != nil {
			group = g.name
		}
	} else if group != "" {
		g = m.groups[group]
	}
	w := walk{req: req, newApp: a == nil}
	w.user, w.group = m.climbs(req, leaf, a, group, g)
	// Without shares the walk refuses with a *Refusal only.
	r, _ := w.up(from).(*Refusal)
	return r
}

// Decrease releases req, which must be exactly what an earlier increase
// committed (package ledger keeps that record). It is never refused; the
// application stops running with its last allocation, and trackers and
// queues left empty are removed. An unknown application is an error and
// changes nothing; usage that would go negative is clamped at zero and
// reported, since it means a caller's records are wrong.
func (m *Manager) Decrease(req *Request) error { return m.DecreaseWith(req, nil) }

// DecreaseWith is Decrease through h, the caller's handle for req (nil:
// none): a valid one gives the application without a lookup.
func (m *Manager) DecreaseWith(req *Request, h *Handle) error {
	running := h.running()
	m.mu.Lock()
	defer m.mu.Unlock()
	running.touch()
	var a *app
	if h.valid(req) {
		a = h.a
	} else if a = m.apps[req.App]; a == nil {
		return fmt.Errorf("decrease %s: %w", req.App, ErrUnknownApp)
	}
	ended := a.allocations <= 1
	clamped := false
	for _, n := range [2]*node{a.userLeaf, a.groupLeaf} {
		for ; n != nil; n = n.parent {
			clamped = n.usage.SubClamped(req.Resources) || clamped
			if ended {
				n.apps--
			}
		}
	}
	for q := a.leaf; q != nil; q = q.parent {
		clamped = q.usage.SubClamped(req.Resources) || clamped
		if req.NonPreemptible {
			clamped = q.npUsage.SubClamped(req.Resources) || clamped
		}
		if ended {
			q.apps--
		}
	}
	if req.Trees != nil && len(req.Trees.Nodes) > 0 {
		var c bool
		req.Trees, c = m.forest.charge(req.Trees, req.Resources, req.NonPreemptible, -1)
		clamped = c || clamped
	}
	a.allocations--
	a.usage.SubClamped(req.Resources)
	if ended {
		a.ended = true
		a.userLeaf.ends++
		delete(m.apps, a.key)
		m.appEnded(a.key)
		m.dropEmpty(a.user, a.leaf)
		if a.group != nil {
			m.dropEmpty(a.group, a.leaf)
		}
		m.queues.prune(a.leaf)
	}
	if clamped {
		return fmt.Errorf("decrease %s: usage below zero clamped at zero: %v released more than was held", req.App, req.Resources)
	}
	return nil
}

// DynamicQueue reports whether path is a queue held outside the config: a
// queue a placement rule created (dynamic; leaf says whether pods run in
// it) or one that left the config while in use (draining: it takes no new
// pods). A configured queue reports false: the config says what it is. It
// is the placement package's view of the queues (placement.Queues).
func (m *Manager) DynamicQueue(path string) (exists, leaf, draining bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.dynamicQueue(path)
}

// dynamicQueue is DynamicQueue for a caller holding m.mu.
func (m *Manager) dynamicQueue(path string) (exists, leaf, draining bool) {
	q := m.queues.byPath[path]
	switch {
	case q == nil:
		return false, false, false
	case q.dynamic:
		return true, !q.limits.isParent, false
	case q.limits == nil:
		return true, len(q.children) == 0, true
	}
	return false, false, false
}

// dropEmpty removes t's nodes on the path of leaf that no longer hold a
// running application, and t itself when its root is empty.
func (m *Manager) dropEmpty(t *tracker, leaf *queue) {
	for n := t.nodes[leaf]; n != nil && n.apps <= 0; n = n.parent {
		delete(t.nodes, n.q)
		if t.last == n {
			t.last = nil
		}
	}
	if len(t.nodes) > 0 {
		return
	}
	if t.kind == userKind {
		delete(m.users, t.name)
	} else {
		delete(m.groups, t.name)
	}
}

func validate(req *Request) error {
	switch {
	case req.User == "":
		return errors.New("request has no user")
	case req.App.ID == "":
		return errors.New("request has no application id")
	case req.Queue != "root" && !strings.HasPrefix(req.Queue, "root."):
		return &QueueError{Queue: req.Queue, Reason: "is not a full queue path (it must start with root.)"}
	}
	for i, x := range req.Resources {
		if x < 0 {
			return fmt.Errorf("request has a negative amount of %s", resources.ID(i).Name())
		}
	}
	return nil
}

// groupOf is the group a request of a new application is tracked
// against: the one resolved when its application was admitted, else
// resolved from leaf (nil: from no queue) as resolveGroup does.
func (m *Manager) groupOf(req *Request, leaf *queue) string {
	if aa := m.adm.apps[req.App]; aa != nil {
		return aa.group
	}
	return m.resolveGroup(leaf, req.Groups)
}

// TrackedGroup is the group req's application is tracked against ("" for
// none): its running or admitted application's, else the group a new one
// would be resolved to (newAppGroup).
func (m *Manager) TrackedGroup(req *Request) string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if a := m.apps[req.App]; a != nil {
		if a.group == nil {
			return ""
		}
		return a.group.name
	}
	return m.newAppGroup(req, m.queues.byPath[req.Queue])
}

// newAppGroup is groupOf from leaf, or, for a queue still to be created
// (leaf nil), from its deepest existing ancestor: a new queue has no group
// limits of its own. Callers hold m.mu.
func (m *Manager) newAppGroup(req *Request, leaf *queue) string {
	if leaf == nil {
		leaf = m.queues.deepest(req.Queue)
	}
	return m.groupOf(req, leaf)
}

// resolveGroup picks the group a new application is tracked against: walking
// leaf to root, the first queue whose limits name one of the user's groups
// (earliest limit entry first) decides; a "*" group entry on a queue matches
// when no named one does and is tracked as the cumulative group "*". So a
// "*" low in the tree hides a named group higher up. "" means no group.
func (m *Manager) resolveGroup(leaf *queue, groups []string) string {
	if len(groups) == 0 {
		return ""
	}
	for q := leaf; q != nil; q = q.parent {
		if g := q.limits.matchGroup(groups); g != "" {
			return g
		}
	}
	return ""
}

// newLeaf creates the queue of a request whose queue does not exist: a
// dynamic queue when the request may create one and the config lets it
// hang there, else an unconfigured queue (no config, or a forced pod in a
// queue the config does not have), which goes when empty.
func (m *Manager) newLeaf(req *Request) *queue {
	if m.partition != nil && req.Create && m.queues.deepest(req.Queue).childLimits != nil {
		return m.queues.createDynamic(req.Queue)
	}
	return m.queues.ensure(req.Queue)
}

// commit applies a checked request, creating its queue when it does not
// exist (leaf nil), and returns its running application. Callers hold m.mu
// for writing.
func (m *Manager) commit(req *Request, leaf *queue, a *app, group string, forced bool) (*app, error) {
	var u, g *tracker
	roots := [3]resources.Vector{m.queues.root.usage}
	if a != nil {
		u, g = a.user, a.group
		roots[1] = rootOf(a.userLeaf).usage
		if a.groupLeaf != nil {
			roots[2] = rootOf(a.groupLeaf).usage
		}
	} else {
		u = m.users[req.User]
		if group != "" {
			g = m.groups[group]
		}
		if u != nil && u.nodes[m.queues.root] != nil {
			roots[1] = u.nodes[m.queues.root].usage
		}
		if g != nil && g.nodes[m.queues.root] != nil {
			roots[2] = g.nodes[m.queues.root].usage
		}
	}
	// Root usage bounds every node below it, so if the roots do not
	// overflow no node does: check before changing anything.
	for _, r := range roots {
		if !r.CanAdd(req.Resources) {
			return nil, fmt.Errorf("usage of %s would overflow: %w", req.Resources, resources.ErrOverflow)
		}
	}
	if leaf == nil {
		if leaf = m.queues.byPath[req.Queue]; leaf == nil {
			leaf = m.newLeaf(req)
		}
	}
	newApp := a == nil
	if u == nil {
		u = newTracker(userKind, req.User)
		m.users[req.User] = u
	}
	if newApp && group != "" && g == nil {
		g = newTracker(groupKind, group)
		m.groups[group] = g
	}
	if newApp {
		a = &app{key: req.App, user: u, group: g, leaf: leaf}
		a.usage = a.inline[:0]
		m.apps[req.App] = a
		m.appStarted(req.App)
	}
	a.allocations++
	a.usage.AddUnchecked(req.Resources)
	// Every tree the pod names, in force or not (forest.go); usage of the
	// queue root bounds every tree node's, so none overflows.
	if req.Trees != nil {
		req.Trees, _ = m.forest.charge(m.chargeRefs(req, forced), req.Resources, req.NonPreemptible, 1)
	}
	if newApp {
		// A new application's leaf is its tracker's likeliest next one
		// (tracker.last); a running one's commit leaves the tracker
		// alone, which saves a memory access per charge.
		a.userLeaf = u.path(leaf)
		u.last = a.userLeaf
		if g != nil {
			a.groupLeaf = g.path(leaf)
			g.last = a.groupLeaf
		}
	}
	for _, n := range [2]*node{a.userLeaf, a.groupLeaf} {
		for ; n != nil; n = n.parent {
			n.usage.AddUnchecked(req.Resources)
			if newApp {
				n.apps++
			}
		}
	}
	for q := leaf; q != nil; q = q.parent {
		q.usage.AddUnchecked(req.Resources)
		if req.NonPreemptible {
			q.npUsage.AddUnchecked(req.Resources)
		}
		if newApp {
			q.apps++
		}
	}
	return a, nil
}

// rootOf returns the root node of n's tracker.
func rootOf(n *node) *node {
	for n.parent != nil {
		n = n.parent
	}
	return n
}

// Resize changes the resources of one allocation of a running application
// from req.Resources to newResources (a pod resized in place). It is forced:
// the scheduler cannot refuse a resize. When the growth takes someone over a
// limit the change is still made and the *Refusal a normal increase would
// have met is returned, for the caller to log; any other error means nothing
// changed.
func (m *Manager) Resize(req *Request, newResources resources.Vector) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, over, err := m.resizeCheck(req, newResources)
	if err != nil {
		return err
	}
	apply := func(v *resources.Vector) {
		v.SubClamped(req.Resources)
		v.AddUnchecked(newResources)
	}
	for _, n := range [2]*node{a.userLeaf, a.groupLeaf} {
		for ; n != nil; n = n.parent {
			apply(&n.usage)
		}
	}
	apply(&a.usage)
	m.forest.resize(req.Trees.nodes(), req.Resources, newResources, req.NonPreemptible)
	for q := a.leaf; q != nil; q = q.parent {
		apply(&q.usage)
		if req.NonPreemptible {
			apply(&q.npUsage)
		}
	}
	return over
}

// CheckResize returns what Resize would: the *Refusal the growth from
// req.Resources to newResources meets (an admission webhook asks before
// a resize is made), or another error; it changes nothing.
func (m *Manager) CheckResize(req *Request, newResources resources.Vector) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, over, err := m.resizeCheck(req, newResources)
	if err != nil {
		return err
	}
	return over
}

// resizeCheck finds req's running application and checks the growth to
// newResources as an increase: over is the refusal it meets, err a resize
// that cannot be made. Callers hold m.mu.
func (m *Manager) resizeCheck(req *Request, newResources resources.Vector) (a *app, over, err error) {
	for i, x := range newResources {
		if x < 0 {
			return nil, nil, fmt.Errorf("resize %s: negative amount of %s", req.App, resources.ID(i).Name())
		}
	}
	if a = m.apps[req.App]; a == nil {
		return nil, nil, fmt.Errorf("resize %s: %w", req.App, ErrUnknownApp)
	}
	var growth resources.Vector
	for i := 0; i < max(len(newResources), len(req.Resources)); i++ {
		if d := newResources.Get(resources.ID(i)) - req.Resources.Get(resources.ID(i)); d > 0 {
			growth.Set(resources.ID(i), d)
		}
	}
	if !m.queues.root.usage.CanAdd(growth) {
		return nil, nil, fmt.Errorf("resize %s: %w", req.App, resources.ErrOverflow)
	}
	if a.leaf.limits != nil || m.partition == nil {
		probe := Request{User: a.user.name, Groups: req.Groups, Queue: a.leaf.path, App: a.key, Resources: growth, NonPreemptible: req.NonPreemptible}
		_, _, _, over = m.check(&probe, nil)
	}
	if over == nil {
		if r := m.forest.overTrees(req.Trees.nodes(), growth); r != nil {
			over = r
		}
	}
	return a, over, nil
}
