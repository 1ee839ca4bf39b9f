package ugm

import (
	"sort"

	"github.com/userquota/userquota/pkg/resources"
)

// QueueUsage is one queue of a usage tree, in the REST shape of YuniKorn's
// usage endpoints: usage of the subtree, running applications in it, and the
// limits in force there for whoever the tree belongs to. The reserved
// fields are ours (reserved.go), left out when nothing is reserved so the
// shape stays YuniKorn's.
type QueueUsage struct {
	QueuePath           string           `json:"queuePath"`
	ResourceUsage       resources.Vector `json:"resourceUsage"`
	RunningApplications []string         `json:"runningApplications"`
	MaxResources        resources.Limit  `json:"maxResources"`
	MaxApplications     uint64           `json:"maxApplications"`
	// ReservedResource is what gang reservations in the subtree still
	// hold: counted by every check like usage, not running yet.
	ReservedResource resources.Vector `json:"reservedResource,omitempty"`
	// ReservedGangs are the keys of the gangs holding a reservation in
	// the subtree, sorted; one whose minimum is all drawn by pods not
	// running yet is listed with nothing left in ReservedResource.
	ReservedGangs []string      `json:"reservedGangs,omitempty"`
	Children      []*QueueUsage `json:"children"`
}

// UserUsage is a user's usage: the group each running application is
// tracked against (empty string: none) and the queue tree.
type UserUsage struct {
	UserName string            `json:"userName"`
	Groups   map[string]string `json:"groups"`
	Queues   *QueueUsage       `json:"queues"`
}

// GroupUsage is a group's usage: its running applications and queue tree.
type GroupUsage struct {
	GroupName    string      `json:"groupName"`
	Applications []string    `json:"applications"`
	Queues       *QueueUsage `json:"queues"`
}

// Users returns every tracked user and every user holding a gang
// reservation, sorted by name. It copies under the read lock; the result
// shares nothing with the Manager.
func (m *Manager) Users() []UserUsage {
	m.mu.RLock()
	defer m.mu.RUnlock()
	apps := m.appsByTracker()
	groupsOf := m.groupsByUser()
	reserved := m.reservations().users
	out := make([]UserUsage, 0, len(m.users)+len(reserved))
	for name, t := range m.users {
		out = append(out, m.userUsage(name, t, apps, groupsOf[t], reserved[name]))
	}
	for name, rt := range reserved {
		if m.users[name] == nil {
			out = append(out, m.userUsage(name, nil, apps, nil, rt))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UserName < out[j].UserName })
	return out
}

// User returns one user's usage; false when the user is neither tracked
// nor holding a gang reservation.
func (m *Manager) User(name string) (UserUsage, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := m.users[name]
	rt := m.reservations().users[name]
	if t == nil && rt == nil {
		return UserUsage{}, false
	}
	return m.userUsage(name, t, m.appsByTracker(), m.groupsByUser()[t], rt), true
}

// Groups returns every tracked group and every group a gang reservation
// was made against, sorted by name.
func (m *Manager) Groups() []GroupUsage {
	m.mu.RLock()
	defer m.mu.RUnlock()
	apps := m.appsByTracker()
	reserved := m.reservations().groups
	out := make([]GroupUsage, 0, len(m.groups)+len(reserved))
	for name, t := range m.groups {
		out = append(out, m.groupUsage(name, t, apps, reserved[name]))
	}
	for name, rt := range reserved {
		if m.groups[name] == nil {
			out = append(out, m.groupUsage(name, nil, apps, rt))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupName < out[j].GroupName })
	return out
}

// Group returns one group's usage; false when the group is neither
// tracked nor holding a gang reservation.
func (m *Manager) Group(name string) (GroupUsage, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := m.groups[name]
	rt := m.reservations().groups[name]
	if t == nil && rt == nil {
		return GroupUsage{}, false
	}
	return m.groupUsage(name, t, m.appsByTracker(), rt), true
}

// Queues returns the aggregate usage of every queue (all users together)
// with each queue's own max and maxapplications, from root.
func (m *Manager) Queues() *QueueUsage {
	m.mu.RLock()
	defer m.mu.RUnlock()
	running := map[*queue][]string{}
	for _, a := range m.apps {
		for q := a.leaf; q != nil; q = q.parent {
			running[q] = append(running[q], a.key.String())
		}
	}
	var build func(q *queue) *QueueUsage
	build = func(q *queue) *QueueUsage {
		qu := newQueueUsage(q.path, q.usage, running[q])
		if q.limits != nil {
			qu.MaxResources = q.limits.max
			qu.MaxApplications = q.limits.maxApps
		}
		for _, c := range q.children {
			qu.Children = append(qu.Children, build(c))
		}
		sortChildren(qu)
		return qu
	}
	return withReserved(build(m.queues.root), m.reservations().queues, m.queueLimitsAt)
}

// appsByTracker lists, per tracker node, the running applications below it.
func (m *Manager) appsByTracker() map[*node][]string {
	out := map[*node][]string{}
	for _, a := range m.apps {
		for _, t := range [2]*tracker{a.user, a.group} {
			if t == nil {
				continue
			}
			for n := t.nodes[a.leaf]; n != nil; n = n.parent {
				out[n] = append(out[n], a.key.String())
			}
		}
	}
	return out
}

// groupsByUser maps each user tracker to its running applications' groups
// (application -> group, "" for none), in one pass over the applications.
func (m *Manager) groupsByUser() map[*tracker]map[string]string {
	out := make(map[*tracker]map[string]string, len(m.users))
	for _, a := range m.apps {
		g := ""
		if a.group != nil {
			g = a.group.name
		}
		byApp := out[a.user]
		if byApp == nil {
			byApp = map[string]string{}
			out[a.user] = byApp
		}
		byApp[a.key.String()] = g
	}
	return out
}

// userUsage is the snapshot of user name: its tracker t (nil: it runs
// nothing) and its reservations rt (nil: none).
func (m *Manager) userUsage(name string, t *tracker, apps map[*node][]string, groups map[string]string, rt reservedTree) UserUsage {
	if groups == nil {
		groups = map[string]string{}
	}
	return UserUsage{UserName: name, Groups: groups, Queues: withReserved(treeUsage(t, apps), rt, m.trackerLimitsAt(userKind, name))}
}

// groupUsage is userUsage for group name.
func (m *Manager) groupUsage(name string, t *tracker, apps map[*node][]string, rt reservedTree) GroupUsage {
	gu := GroupUsage{GroupName: name, Queues: withReserved(treeUsage(t, apps), rt, m.trackerLimitsAt(groupKind, name))}
	gu.Applications = append([]string{}, gu.Queues.RunningApplications...)
	return gu
}

// treeUsage copies a tracker's nodes into a tree rooted at "root"; nil for
// no tracker.
func treeUsage(t *tracker, apps map[*node][]string) *QueueUsage {
	if t == nil {
		return nil
	}
	copies := make(map[*node]*QueueUsage, len(t.nodes))
	var root *QueueUsage
	for _, n := range t.nodes {
		qu := newQueueUsage(n.q.path, n.usage, apps[n])
		if n.limit != nil {
			qu.MaxResources = n.limit.maxResources
			qu.MaxApplications = n.limit.maxApplications
		}
		copies[n] = qu
	}
	for n, qu := range copies {
		if n.parent == nil {
			root = qu
			continue
		}
		p := copies[n.parent]
		p.Children = append(p.Children, qu)
	}
	for _, qu := range copies {
		sortChildren(qu)
	}
	return root
}

func newQueueUsage(path string, usage resources.Vector, apps []string) *QueueUsage {
	running := append([]string{}, apps...)
	sort.Strings(running)
	return &QueueUsage{
		QueuePath:           path,
		ResourceUsage:       usage.Clone(),
		RunningApplications: running,
		MaxResources:        resources.Limit{},
		Children:            []*QueueUsage{},
	}
}

func sortChildren(qu *QueueUsage) {
	sort.Slice(qu.Children, func(i, j int) bool { return qu.Children[i].QueuePath < qu.Children[j].QueuePath })
}

// Counts returns how many users and groups are tracked, without copying
// any usage (for metrics).
func (m *Manager) Counts() (users, groups int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.users), len(m.groups)
}
