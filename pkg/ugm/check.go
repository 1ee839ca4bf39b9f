package ugm

import (
	"fmt"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
)

// check decides req without changing anything. Callers hold m.mu. It
// returns the leaf queue, the running application (nil if new) and, for a
// new application, the group it would be tracked against. With soft (only
// CheckReclaim), a share refusal above the pod's own queue is recorded
// there instead of returned.
func (m *Manager) check(req *Request, soft *shareNeeds) (*queue, *app, string, error) {
	leaf := m.queues.byPath[req.Queue]
	if leaf == nil || m.partition != nil && leaf.limits == nil {
		switch {
		case m.partition == nil:
			// No config: any queue is allowed and nothing is limited.
			return nil, m.apps[req.App], m.resolveGroup(nil, req.Groups), m.conflict(req, nil)
		case leaf == nil && req.Create:
			return m.checkCreate(req, soft)
		case req.Create:
			return nil, nil, "", &QueueError{Queue: req.Queue, Reason: "left the queue config and takes no new pods until it is empty"}
		}
		return nil, nil, "", &QueueError{Queue: req.Queue, Reason: "does not exist in the queue config"}
	}
	if !leaf.leaf(m.partition == nil) {
		return nil, nil, "", &QueueError{Queue: req.Queue, Reason: "is a parent queue; pods run only in leaf queues"}
	}
	a := m.apps[req.App]
	if a != nil && (a.user.name != req.User || a.leaf != leaf) {
		return nil, nil, "", &AppConflict{App: req.App, User: req.User, Queue: req.Queue, HeldUser: a.user.name, HeldQueue: a.leaf.path}
	}
	var g *tracker
	group := ""
	if a != nil {
		if g = a.group; g != nil {
			group = g.name
		}
	} else if group = m.resolveGroup(leaf, req.Groups); group != "" {
		g = m.groups[group]
	}
	w := walk{
		req:    req,
		user:   newClimb(WhoUser, req.User, m.users[req.User], leaf),
		group:  newClimb(WhoGroup, group, g, leaf),
		newApp: a == nil,
		shares: m.sharesFor(func(x *shareIndex) *shares.Share { return x.get(leaf) }, leaf.usage, req.Resources),
		soft:   soft,
	}
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
func (m *Manager) checkCreate(req *Request, soft *shareNeeds) (*queue, *app, string, error) {
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
	if r := queueLevel(req.Queue, tl, nil, 0).admit(req.Queue, req.Resources, false); r != nil {
		return nil, nil, "", r
	}
	group := m.resolveGroup(anc, req.Groups)
	var g *tracker
	if group != "" {
		g = m.groups[group]
	}
	// The new leaf is empty; its share is in the table when the pod was
	// counted as pending for it.
	st := m.sharesFor(func(x *shareIndex) *shares.Share { return x.table.Get(req.Queue) }, nil, req.Resources)
	if st != nil && tl.share != nil && tl.share.elastic {
		if r := checkShare(st.table.Get(req.Queue), req.Queue, nil, req.Resources); r != nil {
			return nil, nil, "", r
		}
	}
	w := walk{
		req:    req,
		user:   newClimb(WhoUser, req.User, m.users[req.User], nil),
		group:  newClimb(WhoGroup, group, g, nil),
		newApp: true,
		shares: st,
		soft:   soft,
	}
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
}

// up checks every queue from from to root: at each, the user's limit, the
// group's, then the queue's own max, maxapplications and runtime share.
func (w *walk) up(from *queue) error {
	for q := from; q != nil; q = q.parent {
		if r := w.user.at(q).admit(q.path, w.req.Resources, w.newApp); r != nil {
			return r
		}
		if w.group.name != "" {
			if r := w.group.at(q).admit(q.path, w.req.Resources, w.newApp); r != nil {
				return r
			}
		}
		if q.limits == nil {
			continue
		}
		if r := queueLevel(q.path, q.limits, q.usage, q.apps).admit(q.path, w.req.Resources, w.newApp); r != nil {
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

// level is one limit in force on one queue for one user, group or the
// queue itself, beside what that one holds there.
type level struct {
	who, name string // WhoUser, WhoGroup or WhoQueue; the user, group or queue
	max       resources.Limit
	maxApps   uint64
	usage     resources.Vector
	apps      int
}

// queueLevel is a queue's own limits (ql) as a level.
func queueLevel(path string, ql *queueLimits, usage resources.Vector, apps int) level {
	return level{who: WhoQueue, name: path, max: ql.max, maxApps: ql.maxApps, usage: usage, apps: apps}
}

// admit refuses req at the queue at path when it would take the level over
// its resources, or, for a new application, over its running applications.
func (l level) admit(path string, req resources.Vector, newApp bool) *Refusal {
	if e, over := l.max.Exceeds(l.usage, req); over {
		return &Refusal{Who: l.who, Name: l.name, Queue: path, Limit: LimitResources,
			Resource: e.ID.Name(), Usage: e.Usage, Request: e.Request, Max: e.Max}
	}
	if newApp && l.maxApps > 0 && uint64(l.apps)+1 > l.maxApps {
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

// at returns the level at q and steps to q's parent.
func (c *climb) at(q *queue) level {
	l := level{who: c.who, name: c.name}
	if c.n == nil && c.t != nil {
		c.n = c.t.nodes[q]
	}
	var e *limitEntry
	if c.n != nil {
		e, l.usage, l.apps = c.n.limit, c.n.usage, c.n.apps
		c.n = c.n.parent
	} else if c.who == WhoUser {
		e = q.limits.userLimit(c.name)
	} else {
		e = q.limits.groupLimit(c.name)
	}
	if e != nil {
		l.max, l.maxApps = e.maxResources, e.maxApplications
	}
	return l
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
