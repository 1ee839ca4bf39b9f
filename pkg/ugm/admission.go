package ugm

import (
	"fmt"
	"math"
	"strings"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
)

// Admissions are room held for pods let into the scheduling queue
// (PreEnqueue) and not charged yet: a check counts them as usage of the
// user, the group and every queue on their path, so that a burst of pods
// is let in only as far as the limits go. They are not usage: snapshots,
// metrics and the REST API show what is charged; an admission becomes a
// charge when its pod is committed (Commit, ForceCommit), or goes
// (Unadmit) when the pod is refused, deleted or bound elsewhere.
//
// They live beside the trackers, keyed by name and queue path, so that a
// user or queue with admissions only is not a tracked user or a running
// application, and a dynamic queue not created yet can hold room.

// held is room held at one place: resources and applications admitted
// there but not running.
type held struct {
	res  resources.Vector
	apps int
}

func (h *held) empty() bool { return h.apps == 0 && h.res.IsZero() }

// admission is one pod's (or one gang's) held room.
type admission struct {
	key string
	req Request // a copy
	// group is the group resolved for the application when it had no
	// running or admitted pod; "" for none.
	group string
	// gang is the gang reservation a pod drew drawn from (gang.go): given
	// back if the pod goes without running while the reservation stands.
	gang  string
	drawn resources.Vector
	// drawers, on a gang's reservation: its pods that drew on it and do
	// not run yet.
	drawers int
	// h is the pod's handle (handle.go), resolved when it was admitted
	// if its application ran then; its Decide and Commit use it.
	h Handle
}

// admittedApp is an application with admissions.
type admittedApp struct {
	user, queue, group string
	count              int
	// counted: the application holds one of the apps of its path's
	// places, because it does not run (not in Manager.apps).
	counted bool
}

// admissions is the Manager's book of held room. The Manager locks.
type admissions struct {
	byKey map[string]*admission
	// gangs are the gang reservations by key (gang.go); their room is in
	// the maps below as a pod's is.
	gangs map[string]*admission
	apps  map[AppKey]*admittedApp
	// Held room by user (then queue path), by group (then queue path) and
	// by queue path (the queue's subtree).
	users  map[string]map[string]*held
	groups map[string]map[string]*held
	queues map[string]*held
	// trees is the room held on each quota tree node (its subtree's).
	trees map[treeKey]*held
	// spare are places and per-name maps emptied by a step, kept for the
	// next to fill: a pod's room is held at a dozen places (user, group
	// and queue at each level) and taken back at its commit, so without
	// them every admission made them all again, about 1.6 KB a pod
	// (BenchmarkPodPath's allocations).
	spare     []*held
	spareMaps []map[string]*held
}

// maxSpare bounds each spare list: more than a burst's worth of places is
// memory kept for nothing.
const maxSpare = 1024

func newAdmissions() admissions {
	return admissions{
		byKey:  map[string]*admission{},
		gangs:  map[string]*admission{},
		apps:   map[AppKey]*admittedApp{},
		users:  map[string]map[string]*held{},
		groups: map[string]map[string]*held{},
		queues: map[string]*held{},
		trees:  map[treeKey]*held{},
	}
}

// none reports whether nothing is held: the check then skips every
// lookup.
func (a *admissions) none() bool { return len(a.byKey) == 0 && len(a.gangs) == 0 }

// onPath reports whether the queue at path is leaf or one of its
// ancestors.
func onPath(leaf, path string) bool {
	return leaf == path || strings.HasPrefix(leaf, path+".")
}

// paths calls fn with every queue path from leaf up to root.
func paths(leaf string, fn func(string)) {
	for p := leaf; p != ""; p = queueconfig.ParentPath(p) {
		fn(p)
	}
}

// add adds (sign 1) or takes back (sign -1) req's resources, and apps
// applications, at every place of its path. It touches the places of the
// path only: a group's map holds every queue its members hold room in,
// and a scan of it per admission grew with the queues.
func (a *admissions) add(req *Request, group string, sign, apps int) {
	a.stepNamed(a.users, req.User, req, sign, apps)
	if group != "" {
		a.stepNamed(a.groups, group, req, sign, apps)
	}
	a.stepPath(a.queues, req, sign, apps)
	if req.Trees != nil && len(req.Trees.Nodes) > 0 {
		a.addHeld(req.Trees.Nodes, req.Resources, sign)
	}
}

// stepNamed steps the places of name (a user or a group) in byName, and
// drops its map when it is left empty.
func (a *admissions) stepNamed(byName map[string]map[string]*held, name string, req *Request, sign, apps int) {
	m := byName[name]
	if m == nil {
		if n := len(a.spareMaps); n > 0 {
			m = a.spareMaps[n-1]
			a.spareMaps = a.spareMaps[:n-1]
		} else {
			m = map[string]*held{}
		}
		byName[name] = m
	}
	a.stepPath(m, req, sign, apps)
	if len(m) == 0 {
		delete(byName, name)
		if len(a.spareMaps) < maxSpare {
			a.spareMaps = append(a.spareMaps, m)
		}
	}
}

// stepPath changes the room held at every queue of req's path in m by
// sign times req's resources and apps, and drops the places left empty.
func (a *admissions) stepPath(m map[string]*held, req *Request, sign, apps int) {
	for p := req.Queue; p != ""; p = queueconfig.ParentPath(p) {
		if h := a.stepHeld(m[p], req.Resources, sign, apps); h.empty() {
			delete(m, p)
			a.free(h)
		} else {
			m[p] = h
		}
	}
}

// stepHeld changes h (nil: empty, a spare one is filled) by sign times res
// and apps.
func (a *admissions) stepHeld(h *held, res resources.Vector, sign, apps int) *held {
	if h == nil {
		if n := len(a.spare); n > 0 {
			h = a.spare[n-1]
			a.spare = a.spare[:n-1]
		} else {
			h = &held{}
		}
	}
	if sign > 0 {
		h.res.AddUnchecked(res)
	} else {
		h.res.SubClamped(res)
	}
	h.apps += sign * apps
	return h
}

// free keeps h, empty and dropped from its map, for a later step.
func (a *admissions) free(h *held) {
	if len(a.spare) < maxSpare {
		a.spare = append(a.spare, h)
	}
}

// count makes the admitted application hold (or stop holding) one of the
// apps of its path's places.
func (a *admissions) count(aa *admittedApp, on bool) {
	if aa.counted == on {
		return
	}
	aa.counted = on
	sign := -1
	if on {
		sign = 1
	}
	a.add(&Request{User: aa.user, Queue: aa.queue}, aa.group, sign, 1)
}

// Admit holds room for the request of the pod key: from now on checks of
// other pods count it as usage, until Commit, ForceCommit or Unadmit. It
// is refused, holding nothing, when the request does not fit every limit
// with the room already held for others (the refusal names it); a key
// that holds room already is admitted again with req. Pods that run are
// never admitted: their charge is their usage.
func (m *Manager) Admit(key string, req *Request) error {
	if err := validate(req); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	own := m.adm.byKey[key]
	var h Handle
	if own != nil {
		h = own.h
	}
	if _, _, _, err := m.checkFor(req, own, nil, &h); err != nil {
		return err
	}
	// Re-admitted, a pod keeps what it drew from a gang as its own: given
	// back as well, it would be held twice beyond what was checked.
	m.unadmit(key, false)
	ad := m.hold(key, req)
	ad.h = h
	m.adm.byKey[key] = ad
	return nil
}

// hold records room for req under key (a pod's or a gang's admission,
// which the caller files) after a check: the held maps and the
// application's count. Callers hold m.mu for writing.
func (m *Manager) hold(key string, req *Request) *admission {
	ad := &admission{key: key, req: *req}
	ad.req.Groups = append([]string(nil), req.Groups...)
	ad.req.Resources = req.Resources.Clone()
	// The tree nodes it holds room on, taken back on these same nodes.
	ad.req.Trees = m.heldRefs(req, nil)
	aa := m.adm.apps[req.App]
	if aa == nil {
		group := ""
		if run := m.apps[req.App]; run != nil {
			if run.group != nil {
				group = run.group.name
			}
		} else {
			from := m.queues.byPath[req.Queue]
			if from == nil {
				from = m.queues.deepest(req.Queue)
			}
			group = m.resolveGroup(from, req.Groups)
		}
		aa = &admittedApp{user: req.User, queue: req.Queue, group: group}
		m.adm.apps[req.App] = aa
		m.adm.count(aa, m.apps[req.App] == nil)
	}
	aa.count++
	ad.group = aa.group
	m.adm.add(&ad.req, ad.group, 1, 0)
	return ad
}

// Unadmit drops the room the pod key holds and returns what it held;
// false when it holds none.
func (m *Manager) Unadmit(key string) (Request, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var req Request
	if ad := m.adm.byKey[key]; ad != nil {
		req = ad.req
	}
	return req, m.unadmit(key, true)
}

// DropRunning drops the room the pod key holds when the pod runs already
// (a decision on a stale copy of a pod whose charge came first): its
// charge is its usage, and what it drew from a gang stays drawn, as at a
// commit. False when it holds none.
func (m *Manager) DropRunning(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.unadmit(key, false)
}

// Admitted reports whether the pod key holds room.
func (m *Manager) Admitted(key string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.adm.byKey[key]
	return ok
}

// AdmittedCount is the number of pods holding room.
func (m *Manager) AdmittedCount() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.adm.byKey)
}

// unadmit is Unadmit for a caller holding m.mu for writing. giveBack:
// the pod goes without running, so what it drew from a gang reservation
// that still stands goes back to it; false when the pod's room becomes its
// charge.
func (m *Manager) unadmit(key string, giveBack bool) bool {
	ad := m.adm.byKey[key]
	if ad == nil {
		return false
	}
	delete(m.adm.byKey, key)
	m.drop(ad)
	if g := m.adm.gangs[ad.gang]; g != nil {
		g.drawers--
		if giveBack {
			m.giveBack(g, ad.drawn)
		} else if g.drawers <= 0 && g.req.Resources.IsZero() {
			// Its whole minimum runs: the reservation is done.
			delete(m.adm.gangs, ad.gang)
			m.drop(g)
		}
	}
	return true
}

// drop takes ad's room out of the held maps and its application's count.
func (m *Manager) drop(ad *admission) {
	m.adm.add(&ad.req, ad.group, -1, 0)
	if aa := m.adm.apps[ad.req.App]; aa != nil {
		if aa.count--; aa.count <= 0 {
			m.adm.count(aa, false)
			delete(m.adm.apps, ad.req.App)
		}
	}
}

// appStarted tells the admissions that app runs now (its first charge):
// it no longer holds an app of its own.
func (m *Manager) appStarted(app AppKey) {
	if aa := m.adm.apps[app]; aa != nil {
		m.adm.count(aa, false)
	}
}

// appEnded tells the admissions that app stopped running (its last
// release): while it has admissions it holds an app again.
func (m *Manager) appEnded(app AppKey) {
	if aa := m.adm.apps[app]; aa != nil {
		m.adm.count(aa, true)
	}
}

// admittedConflict refuses req when its application is admitted (and not
// running) for another user or queue, own's admission aside.
func (m *Manager) admittedConflict(req *Request, own *admission) error {
	aa := m.adm.apps[req.App]
	if aa == nil || aa.user == req.User && aa.queue == req.Queue {
		return nil
	}
	if own != nil && own.req.App == req.App && aa.count == 1 {
		return nil
	}
	return &AppConflict{App: req.App, User: req.User, Queue: req.Queue, HeldUser: aa.user, HeldQueue: aa.queue}
}

// appAdmitted reports whether req's application has admissions (own's
// included): it then holds one of the apps of its path already, so it is
// not new for maxapplications.
func (m *Manager) appAdmitted(req *Request) bool { return m.adm.apps[req.App] != nil }

// String is for debugging and test failures.
func (a *admission) String() string {
	return fmt.Sprintf("%s: %s in %s %s", a.key, a.req.User, a.req.Queue, a.req.Resources)
}

// AppShare is how much a running application uses, as the dominant share
// of the limits on its queue's path: for each resource some queue max on
// the path names, its usage over the nearest such max, the largest. On a
// path that limits nothing, over the root queue's usage of each resource
// instead. 0 for an application that does not run. Fair ordering lets in
// the application using least first.
func (m *Manager) AppShare(key AppKey) float64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	a := m.apps[key]
	if a == nil {
		return 0
	}
	limited, unlimited := 0.0, 0.0
	for i, x := range a.usage {
		if x <= 0 {
			continue
		}
		id := resources.ID(i)
		if max, ok := nearestMax(a.leaf, id); ok {
			if max > 0 {
				limited = math.Max(limited, float64(x)/float64(max))
			}
		} else if root := m.queues.root.usage.Get(id); root > 0 {
			unlimited = math.Max(unlimited, float64(x)/float64(root))
		}
	}
	if limited > 0 {
		return limited
	}
	return unlimited
}

// nearestMax is the max of id of the nearest queue from q up that names it.
func nearestMax(q *queue, id resources.ID) (int64, bool) {
	for ; q != nil; q = q.parent {
		if q.limits != nil {
			if max, ok := q.limits.max.Get(id); ok {
				return max, true
			}
		}
	}
	return 0, false
}

// AdmittedKeys lists the pods holding room.
func (m *Manager) AdmittedKeys() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.adm.byKey))
	for k := range m.adm.byKey {
		out = append(out, k)
	}
	return out
}

// UnadmitAll drops every admission: room held under one config would
// otherwise keep older pods out under a stricter one (the pods go through
// their scheduling cycle without room, where PreFilter decides).
func (m *Manager) UnadmitAll() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.adm.byKey)
	m.adm = newAdmissions()
	return n
}
