package ugm

import (
	"fmt"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
)

// check decides req without changing anything, counting the room held
// by admissions. Callers hold m.mu. It returns the leaf queue, the running
// application (nil if new) and, for a new application, the group it would
// be tracked against. With soft (only CheckReclaim), a share refusal above
// the pod's own queue is recorded there instead of returned.
func (m *Manager) check(req *Request, soft *shareNeeds) (*queue, *app, string, error) {
	return m.checkFor(req, nil, soft, nil)
}

// checkFor is check for the pod holding own (nil: none): its own held
// room does not count against it. The quota trees the request names
// (forest.go) are part of the same check: a label naming no leaf of its
// tree refuses it first, a tree's quota after every queue limit. h (nil:
// none) is the caller's own handle for req: used when valid, else
// resolved.
func (m *Manager) checkFor(req *Request, own *admission, soft *shareNeeds, h *Handle) (*queue, *app, string, error) {
	if len(m.forest.trees) == 0 {
		return m.checkQueues(req, own, soft, h)
	}
	if err := m.forest.visit(req, func(*treeState, *treeNodeState) {}); err != nil {
		return nil, nil, "", err
	}
	leaf, a, group, err := m.checkQueues(req, own, soft, h)
	if err != nil {
		return nil, nil, "", err
	}
	if r := m.checkTrees(req, own, treeNeedsOf(soft)); r != nil {
		return nil, nil, "", r
	}
	return leaf, a, group, nil
}

// checkQueues is checkFor's check of the queue tree: placement's queue,
// the application, and every user, group and queue limit on the path.
// A valid h gives the application and its leaf without a lookup.
func (m *Manager) checkQueues(req *Request, own *admission, soft *shareNeeds, h *Handle) (*queue, *app, string, error) {
	if err := m.admittedConflict(req, own); err != nil {
		return nil, nil, "", err
	}
	var leaf *queue
	var a *app
	resolved := h.valid(req)
	if resolved {
		a, leaf = h.a, h.leaf
	} else {
		leaf = m.queues.byPath[req.Queue]
	}
	if leaf == nil || m.partition != nil && leaf.limits == nil {
		switch {
		case m.partition == nil:
			// No config: any queue is allowed and nothing is limited.
			return nil, m.apps[req.App], m.groupOf(req, nil), m.conflict(req, nil)
		case leaf == nil && req.Create:
			return m.checkCreate(req, own, soft)
		case req.Create:
			return nil, nil, "", &QueueError{Queue: req.Queue, Reason: "left the queue config and takes no new pods until it is empty"}
		}
		return nil, nil, "", &QueueError{Queue: req.Queue, Reason: "does not exist in the queue config"}
	}
	if !leaf.leaf(m.partition == nil) {
		return nil, nil, "", &QueueError{Queue: req.Queue, Reason: "is a parent queue; pods run only in leaf queues"}
	}
	if !resolved {
		a = m.apps[req.App]
		if a != nil && (a.user.name != req.User || a.leaf != leaf) {
			return nil, nil, "", &AppConflict{App: req.App, User: req.User, Queue: req.Queue, HeldUser: a.user.name, HeldQueue: a.leaf.path}
		}
		h.resolve(req, a)
	}
	var g *tracker
	group := ""
	switch {
	case resolved:
		// The climbs start at the handle's nodes; the trackers are
		// needed only where a climb has no node, which cannot happen
		// above a running application's leaf.
		group = h.groupName
	case a != nil:
		if g = a.group; g != nil {
			group = g.name
		}
	default:
		if group = m.groupOf(req, leaf); group != "" {
			g = m.groups[group]
		}
	}
	var w walk
	if resolved {
		w.user.who, w.user.name, w.user.n = WhoUser, req.User, h.user
		w.group.who, w.group.name, w.group.n = WhoGroup, group, h.group
		m.startWalk(&w, req, own, group, false)
	} else {
		w.user, w.group = m.climbs(req, leaf, a, group, g)
		m.startWalk(&w, req, own, group, a == nil && !m.appAdmitted(req))
	}
	w.shares = m.sharesFor(func(x *shareIndex) *shares.Share { return x.get(leaf) }, leaf.usage, req.Resources)
	w.soft = soft
	if soft != nil {
		soft.leaf = leaf
	}
	if err := w.up(leaf); err != nil {
		return nil, nil, "", err
	}
	if req.NonPreemptible {
		if r := m.checkNonPreemptible(req, leaf, nil, false); r != nil {
			return nil, nil, "", r
		}
	}
	return leaf, a, group, nil
}

// checkCreate checks a request for a dynamic queue that does not exist yet
// (req.Create): the new leaf counts as an empty queue with the limits of
// the child template in force for it, the new parents between it and the
// deepest existing queue have no limits, and every queue from there to root
// checks as usual. Nothing is created.
func (m *Manager) checkCreate(req *Request, own *admission, soft *shareNeeds) (*queue, *app, string, error) {
	anc := m.queues.deepest(req.Queue)
	if anc.childLimits == nil {
		reason := fmt.Sprintf("cannot be created: %s is a leaf queue", anc.path)
		if anc.limits == nil {
			reason = fmt.Sprintf("cannot be created: %s left the queue config", anc.path)
		}
		return nil, nil, "", &QueueError{Queue: req.Queue, Reason: reason}
	}
	if a := m.apps[req.App]; a != nil {
		return nil, nil, "", &AppConflict{App: req.App, User: req.User, Queue: req.Queue, HeldUser: a.user.name, HeldQueue: a.leaf.path}
	}
	tl := anc.childLimits
	var w walk
	group := m.groupOf(req, anc)
	w.user, w.group = m.climbs(req, nil, nil, group, nil)
	m.startWalk(&w, req, own, group, !m.appAdmitted(req))
	if r := w.queueLevel(req.Queue, tl, nil, 0).admit(req.Queue, req.Resources, false); r != nil {
		return nil, nil, "", r
	}
	if group != "" {
		w.group.t = m.groups[group]
	}
	// The new leaf is empty; its share is in the table when the pod was
	// counted as pending for it.
	st := m.sharesFor(func(x *shareIndex) *shares.Share { return x.table.Get(req.Queue) }, nil, req.Resources)
	if st != nil && tl.share != nil && tl.share.elastic {
		if r := checkShare(st.table.Get(req.Queue), req.Queue, nil, req.Resources); r != nil {
			return nil, nil, "", r
		}
	}
	w.shares, w.soft = st, soft
	if err := w.up(anc); err != nil {
		return nil, nil, "", err
	}
	if req.NonPreemptible {
		var leafShare *shares.Share
		if x := m.shares.Load(); x != nil {
			leafShare = x.table.Get(req.Queue)
		}
		if r := m.checkNonPreemptible(req, anc, leafShare, tl.share != nil && tl.share.elastic); r != nil {
			return nil, nil, "", r
		}
	}
	return nil, nil, group, nil
}

// walk is one check's climb from a queue to root. It allocates nothing
// when the request fits.
type walk struct {
	req         *Request
	user, group climb
	newApp      bool
	// shares is the share table the check uses (nil: none, or the request
	// keeps its leaf within its guaranteed share).
	shares *shareIndex
	soft   *shareNeeds
	// queues is the room admissions hold by queue path (nil: none held),
	// own the asker's admission (nil: none), whose room is its own.
	queues map[string]*held
	own    *admission
}

// startWalk starts w, the walk of req (holding own) with the group
// resolved for it, whose user and group climbs are set. It fills w in
// place: a walk is about 200 bytes, and building one by value, then
// copying it out, cost about a twelfth of a check in cache
// (BenchmarkCheckHandle, same user; docs/performance.md).
func (m *Manager) startWalk(w *walk, req *Request, own *admission, group string, newApp bool) {
	w.req, w.own, w.newApp = req, own, newApp
	if !m.adm.none() {
		w.queues = m.adm.queues
		w.user.held = m.adm.users[req.User]
		w.group.held = m.adm.groups[group]
		if own != nil {
			w.user.own = own.req.User == req.User
			w.group.own = own.group == group
		}
	}
}

// heldAtQueue returns the room held in the queue at path, the part of it
// that is the asker's own, and the applications admitted there.
func (w *walk) heldAtQueue(path string) (held, own resources.Vector, apps int) {
	if w.queues == nil {
		return nil, nil, 0
	}
	if h := w.queues[path]; h != nil {
		held, apps = h.res, h.apps
	}
	if w.own != nil && onPath(w.own.req.Queue, path) {
		own = w.own.req.Resources
	}
	return held, own, apps
}

// queueLevel is a queue's own limits (ql) as a level, with the room held
// in it.
func (w *walk) queueLevel(path string, ql *queueLimits, usage resources.Vector, apps int) level {
	l := level{who: WhoQueue, name: path, max: ql.max, maxApps: ql.maxApps, usage: usage}
	var heldApps int
	l.held, l.own, heldApps = w.heldAtQueue(path)
	l.apps = apps + heldApps
	return l
}

// up checks every queue from from to root: at each, the user's limit, the
// group's, then the queue's own max, maxapplications and runtime share.
func (w *walk) up(from *queue) error {
	for q := from; q != nil; q = q.parent {
		if r := w.user.admit(q, w); r != nil {
			return r
		}
		if w.group.name != "" {
			if r := w.group.admit(q, w); r != nil {
				return r
			}
		}
		if q.limits == nil {
			continue
		}
		if r := w.admitQueue(q); r != nil {
			return r
		}
		if w.shares != nil && q.limits.share != nil && q.limits.share.elastic {
			if r := checkShare(w.shares.get(q), q.path, q.usage, w.req.Resources); r != nil {
				if w.soft == nil || q == w.soft.leaf {
					return r
				}
				w.soft.blocked = append(w.soft.blocked, q.path)
			}
		}
	}
	return nil
}

// admitQueue refuses w's request at q for q's own limits (nil: it fits).
// The level is built only for a refusal (climb.admit says why).
func (w *walk) admitQueue(q *queue) *Refusal {
	ql := q.limits
	if ql.max == nil && ql.maxApps == 0 {
		return nil
	}
	held, own, heldApps := w.heldAtQueue(q.path)
	if !over(ql.max, ql.maxApps, q.usage, held, own, w.req.Resources, q.apps+heldApps, w.newApp) {
		return nil
	}
	return w.queueLevel(q.path, ql, q.usage, q.apps).admit(q.path, w.req.Resources, w.newApp)
}

// over reports whether req takes a level (max and maxApps over usage and
// apps, with held less own) over: the predicate level.admit refuses on,
// without the level.
func over(max resources.Limit, maxApps uint64, usage, held, own, req resources.Vector, apps int, newApp bool) bool {
	var o bool
	if held == nil {
		// Nothing held (the common case): Exceeds, which inlines here;
		// ExceedsWith does the same but is too large to inline, and its
		// call cost a tenth of a check in cache (docs/performance.md).
		_, o = max.Exceeds(usage, req)
	} else {
		_, o = max.ExceedsWith(usage, held, own, req)
	}
	return o || newApp && appsOver(maxApps, apps)
}

// appsOver reports whether one more application takes apps over maxApps
// (0: no limit).
func appsOver(maxApps uint64, apps int) bool {
	return maxApps > 0 && uint64(apps)+1 > maxApps
}

// level is one limit in force on one queue for one user, group or the
// queue itself, beside what that one holds there: usage and apps
// running, plus the room held by admissions less own (the asker's).
type level struct {
	who, name string // WhoUser, WhoGroup or WhoQueue; the user, group or queue
	max       resources.Limit
	maxApps   uint64
	usage     resources.Vector
	held, own resources.Vector
	apps      int
}

// admit refuses req at the queue at path when it would take the level over
// its resources, or, for a new application, over its running applications.
func (l level) admit(path string, req resources.Vector, newApp bool) *Refusal {
	if e, over := l.max.ExceedsWith(l.usage, l.held, l.own, req); over {
		r := &Refusal{Who: l.who, Name: l.name, Queue: path, Limit: LimitResources,
			Resource: e.ID.Name(), Usage: e.Usage, Request: e.Request, Max: e.Max}
		if h := l.held.Get(e.ID) - l.own.Get(e.ID); h > 0 {
			r.Admitted = h
		}
		return r
	}
	if newApp && appsOver(l.maxApps, l.apps) {
		return &Refusal{Who: l.who, Name: l.name, Queue: path, Limit: LimitApplications,
			Usage: int64(l.apps), Request: 1, Max: int64(l.maxApps)}
	}
	return nil
}

// climb steps up a user's or group's tracker nodes in step with the
// queue walk. Where the tracker has no node (nothing held there yet), the
// limit comes from the queue's config and the usage is zero.
type climb struct {
	who, name string
	t         *tracker
	// n is the tracker's node at the queue the walk is at, once found; its
	// parent is the node of the queue's parent.
	n *node
	// held is the room admissions hold for this user or group by queue
	// path (nil: none); own: the asker's admission is this user's or
	// group's.
	held map[string]*held
	own  bool
}

// newClimb starts a climb; leaf is the queue the walk starts at when the
// tracker's node there may be known (nil: looked up at each queue).
func newClimb(who, name string, t *tracker, leaf *queue) climb {
	c := climb{who: who, name: name, t: t}
	if t != nil && leaf != nil {
		c.n = t.leafNode(leaf)
	}
	return c
}

// climbs starts the user's and the group's climbs of req from leaf. A
// running application a (nil: none) holds its leaf nodes, so they need no
// lookup.
func (m *Manager) climbs(req *Request, leaf *queue, a *app, group string, g *tracker) (user, grp climb) {
	if a != nil {
		user = climb{who: WhoUser, name: req.User, t: a.user, n: a.userLeaf}
		grp = climb{who: WhoGroup, name: group, t: a.group, n: a.groupLeaf}
		return user, grp
	}
	return newClimb(WhoUser, req.User, m.users[req.User], leaf), newClimb(WhoGroup, group, g, leaf)
}

// admit refuses w's request at q for this climb's user or group (nil: it
// fits) and steps to q's parent. The level (and its refusal) is built only
// when the request does not fit: building it for every level on the path
// that admits cost more than the check itself (BenchmarkCheck).
func (c *climb) admit(q *queue, w *walk) *Refusal {
	n := c.n
	if n == nil || c.held != nil {
		return c.admitAt(q, w)
	}
	// The common case, kept small so that the loop in Exceeds stays in
	// registers: the climb is at a node and nothing is held for this
	// user or group.
	c.n = n.parent
	e := n.limit
	if e == nil {
		return nil // no limit for this user or group here
	}
	if _, o := e.maxResources.Exceeds(n.usage, w.req.Resources); !o && !(w.newApp && appsOver(e.maxApplications, n.apps)) {
		return nil
	}
	return c.refuse(q, w, e, n.usage, n.apps)
}

// admitAt is admit where the climb has no node yet (nil: looked up here,
// or none: nothing is tracked there) or room is held for this user or
// group.
func (c *climb) admitAt(q *queue, w *walk) *Refusal {
	if c.n == nil && c.t != nil {
		c.n = c.t.nodes[q]
	}
	n := c.n
	var e *limitEntry
	var usage resources.Vector
	apps := 0
	if n != nil {
		e, usage, apps = n.limit, n.usage, n.apps
		c.n = n.parent
	} else if c.who == WhoUser {
		e = q.limits.userLimit(c.name)
	} else {
		e = q.limits.groupLimit(c.name)
	}
	if e == nil {
		return nil // no limit for this user or group here
	}
	return c.refuse(q, w, e, usage, apps)
}

// refuse refuses w's request at q for limit e of this climb's user or
// group, over usage and apps and the room held for it (nil: it fits).
func (c *climb) refuse(q *queue, w *walk, e *limitEntry, usage resources.Vector, apps int) *Refusal {
	var held, own resources.Vector
	if c.held != nil {
		if h := c.held[q.path]; h != nil {
			held, apps = h.res, apps+h.apps
		}
		if c.own && onPath(w.own.req.Queue, q.path) {
			own = w.own.req.Resources
		}
	}
	if !over(e.maxResources, e.maxApplications, usage, held, own, w.req.Resources, apps, w.newApp) {
		return nil
	}
	l := level{who: c.who, name: c.name, max: e.maxResources, maxApps: e.maxApplications,
		usage: usage, held: held, own: own, apps: apps}
	return l.admit(q.path, w.req.Resources, w.newApp)
}

// conflict refuses a request whose application runs for another user or in
// another queue.
func (m *Manager) conflict(req *Request, leaf *queue) error {
	a := m.apps[req.App]
	if a == nil || a.user.name == req.User && (leaf == nil && a.leaf.path == req.Queue || a.leaf == leaf) {
		return nil
	}
	return &AppConflict{App: req.App, User: req.User, Queue: req.Queue, HeldUser: a.user.name, HeldQueue: a.leaf.path}
}
