package ugm

import (
	"sort"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
)

// Snapshots show what gang reservations hold beside usage: a reservation
// counts in every check, so a user, group or queue near a limit because
// of a gang that runs nothing yet must not look idle. It is gathered when
// a snapshot is taken, from the few reservations (m.adm.gangs), so the
// check and charge paths keep no second book. Pod admissions, those that
// drew on a gang included, are not shown: they are not usage (admission.go).

// reservedAt is what gang reservations hold at one queue path, its
// subtree included.
type reservedAt struct {
	res   resources.Vector
	gangs []string // sorted
	// leaf: the path is a reservation's own queue, which may not exist yet
	// (a dynamic queue the gang's pods will create).
	leaf bool
}

// reservedTree is what reservations hold, by queue path.
type reservedTree map[string]*reservedAt

// reservations are the gang reservations of one snapshot: by user, by
// group (the one resolved for the gang's application) and in all.
type reservations struct {
	users, groups map[string]reservedTree
	queues        reservedTree
}

// reservations gathers every gang reservation. Callers hold m.mu.
func (m *Manager) reservations() reservations {
	if len(m.adm.gangs) == 0 {
		// Nil maps read as empty: a snapshot without gangs allocates
		// nothing more.
		return reservations{}
	}
	r := reservations{users: map[string]reservedTree{}, groups: map[string]reservedTree{}, queues: reservedTree{}}
	keys := make([]string, 0, len(m.adm.gangs))
	for k := range m.adm.gangs {
		keys = append(keys, k)
	}
	// In key order, so every list of gangs comes out sorted.
	sort.Strings(keys)
	for _, k := range keys {
		g := m.adm.gangs[k]
		r.users[g.req.User] = r.users[g.req.User].add(k, &g.req)
		if g.group != "" {
			r.groups[g.group] = r.groups[g.group].add(k, &g.req)
		}
		r.queues.add(k, &g.req)
	}
	return r
}

// add records the reservation key of req at every queue of its path and
// returns t (made when nil).
func (t reservedTree) add(key string, req *Request) reservedTree {
	if t == nil {
		t = reservedTree{}
	}
	paths(req.Queue, func(p string) {
		at := t[p]
		if at == nil {
			at = &reservedAt{}
			t[p] = at
		}
		at.res.AddUnchecked(req.Resources)
		at.gangs = append(at.gangs, key)
	})
	t[req.Queue].leaf = true
	return t
}

// withReserved shows t on the usage tree root (nil: none yet) and returns
// it: each node on a reservation's path gets what is reserved there, and a
// node the tree lacks (a user or queue with a reservation only) is added,
// with no usage and the limits limitsAt gives for its path.
func withReserved(root *QueueUsage, t reservedTree, limitsAt func(path string, leaf bool) (resources.Limit, uint64)) *QueueUsage {
	if len(t) == 0 {
		return root
	}
	byPath := map[string]*QueueUsage{}
	if root != nil {
		var index func(*QueueUsage)
		index = func(qu *QueueUsage) {
			byPath[qu.QueuePath] = qu
			for _, c := range qu.Children {
				index(c)
			}
		}
		index(root)
	}
	ps := make([]string, 0, len(t))
	for p := range t {
		ps = append(ps, p)
	}
	// A parent's path is a prefix of its children's: sorted, parents come
	// first and are in the tree when a child is added.
	sort.Strings(ps)
	for _, p := range ps {
		at := t[p]
		qu := byPath[p]
		if qu == nil {
			qu = newQueueUsage(p, nil, nil)
			if max, maxApps := limitsAt(p, at.leaf); max != nil || maxApps > 0 {
				qu.MaxResources, qu.MaxApplications = max, maxApps
			}
			byPath[p] = qu
			if parent := byPath[queueconfig.ParentPath(p)]; parent != nil {
				parent.Children = append(parent.Children, qu)
				sortChildren(parent)
			} else {
				root = qu
			}
		}
		if !at.res.IsZero() {
			qu.ReservedResource = at.res.Clone()
		}
		qu.ReservedGangs = append([]string(nil), at.gangs...)
	}
	return root
}

// trackerLimitsAt is limitsAt for user or group name: its limit on the
// queue at path, as the check finds it where the tracker has no node;
// none on a queue that does not exist yet (the check puts no user or
// group limit there).
func (m *Manager) trackerLimitsAt(k kind, name string) func(string, bool) (resources.Limit, uint64) {
	return func(path string, _ bool) (resources.Limit, uint64) {
		q := m.queues.byPath[path]
		if q == nil {
			return nil, 0
		}
		e := q.limits.userLimit(name)
		if k == groupKind {
			e = q.limits.groupLimit(name)
		}
		if e == nil {
			return nil, 0
		}
		return e.maxResources, e.maxApplications
	}
}

// queueLimitsAt is limitsAt for the queue tree, called only for queues
// that do not exist yet: a reservation's own queue has the limits of the
// child template in force for it (what checkCreate checks), the dynamic
// parents between it and an existing queue none.
func (m *Manager) queueLimitsAt(path string, leaf bool) (resources.Limit, uint64) {
	if !leaf {
		return nil, 0
	}
	if tl := m.queues.deepest(path).childLimits; tl != nil {
		return tl.max, tl.maxApps
	}
	return nil, 0
}
