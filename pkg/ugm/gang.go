package ugm

import (
	"errors"
	"fmt"

	"github.com/userquota/userquota/pkg/resources"
)

// Gang reservations hold a gang's minimum at once: ReserveGang holds all
// of it, checked against every limit like one pod's admission, or nothing.
// The gang counts as one application (it is one). Its pods then draw on
// it (DrawGang): the part of a pod's request the reservation still holds
// moves to the pod's own admission without a check, and only the rest is
// checked. A drawn pod that goes without running (Unadmit) gives its part
// back while the reservation stands, so a replacement pod can draw it; its
// commit makes it a charge, and the reservation ends when all of it runs.
// ReleaseGang drops what is left (the gang timed out or went).

// GangConflict refuses a pod that draws on a gang reserved for another
// user, queue or application.
type GangConflict struct {
	Gang                string
	User, Queue         string
	App                 AppKey
	HeldUser, HeldQueue string
	HeldApp             AppKey
}

func (e *GangConflict) Error() string {
	return fmt.Sprintf("gang %s is reserved for user %s in queue %s (application %s), not user %s in queue %s (application %s)",
		e.Gang, e.HeldUser, e.HeldQueue, e.HeldApp, e.User, e.Queue, e.App)
}

// ErrGangReserved refuses to reserve a gang that holds a reservation
// (two of its pods raced to reserve it: the second draws instead), and
// ErrNoGang to draw on one that holds none.
// ErrGangRuns: the gang's application runs its minimum already (a restart
// found it running, or it ran before its reservation timed out); its pods
// are ordinary pods.
var (
	ErrGangReserved = errors.New("gang is reserved already")
	ErrNoGang       = errors.New("gang holds no reservation")
	ErrGangRuns     = errors.New("gang runs its minimum already")
)

// ReserveGang holds room for the gang key's minimum req less what its
// application (req.App) runs already: it fits every limit with the room
// already held for others and all of it is held, or the refusal names the
// limit and nothing changes. Nothing left to hold is ErrGangRuns.
func (m *Manager) ReserveGang(key string, req *Request) error {
	if err := validate(req); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.adm.gangs[key] != nil {
		return fmt.Errorf("%s: %w", key, ErrGangReserved)
	}
	rest := *req
	if a := m.apps[req.App]; a != nil {
		rest.Resources = req.Resources.Clone()
		rest.Resources.SubClamped(a.usage)
		if rest.Resources.IsZero() {
			return fmt.Errorf("%s: %w", key, ErrGangRuns)
		}
	}
	if _, _, _, err := m.checkFor(&rest, nil, nil, nil); err != nil {
		return err
	}
	m.adm.gangs[key] = m.hold(key, &rest)
	return nil
}

// DrawGang admits the pod podKey (as Admit does) on the gang key's
// reservation: what the reservation still holds of req moves to the pod,
// and only the rest is checked. It returns the part drawn; on a refusal
// (of the rest, or a GangConflict) nothing changes. A pod admitted
// already keeps its admission and draws nothing.
func (m *Manager) DrawGang(key, podKey string, req *Request) (resources.Vector, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.adm.gangs[key]
	if g == nil {
		return nil, fmt.Errorf("%s: %w", key, ErrNoGang)
	}
	if g.req.User != req.User || g.req.Queue != req.Queue || g.req.App != req.App {
		return nil, &GangConflict{Gang: key, User: req.User, Queue: req.Queue, App: req.App, HeldUser: g.req.User, HeldQueue: g.req.Queue, HeldApp: g.req.App}
	}
	if _, ok := m.adm.byKey[podKey]; ok {
		return nil, nil
	}
	drawn := minimum(req.Resources, g.req.Resources)
	// The drawn part is held by the gang already: the check counts it as
	// the pod's own.
	own := &admission{key: key, req: g.req, group: g.group}
	own.req.Resources = drawn
	if _, _, _, err := m.checkFor(req, own, nil, nil); err != nil {
		return nil, err
	}
	part := g.req
	part.Resources = drawn
	m.adm.add(&part, g.group, -1, 0)
	g.req.Resources.SubClamped(drawn)
	ad := m.hold(podKey, req)
	ad.gang, ad.drawn = key, drawn
	g.drawers++
	m.adm.byKey[podKey] = ad
	return drawn, nil
}

// giveBack returns drawn to the gang reservation g.
func (m *Manager) giveBack(g *admission, drawn resources.Vector) {
	part := g.req
	part.Resources = drawn
	m.adm.add(&part, g.group, 1, 0)
	g.req.Resources.AddUnchecked(drawn)
}

// ReleaseGang drops the room the gang key still holds and returns it
// (the gang's request with what was left); false when it holds no
// reservation. Pods that drew on it keep theirs.
func (m *Manager) ReleaseGang(key string) (Request, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.adm.gangs[key]
	if g == nil {
		return Request{}, false
	}
	delete(m.adm.gangs, key)
	m.drop(g)
	return g.req, true
}

// TrimGang lowers the gang key's reservation to what its minimum min
// still needs: min less what its application runs and what its pods
// admitted and not running drew. It never raises it. A pod of the gang
// found running that drew nothing (a replica that never saw it pending:
// its informer relisted) covers part of the minimum as if it had drawn
// and run; ReserveGang counted only what ran when it reserved. It
// returns the room let go (false: none), for others to use, and ends the
// reservation when nothing is left and no pod draws on it. Its cost is
// the admissions held (it finds the gang's drawn pods among them): it is
// for pods found running, not the scheduling path.
func (m *Manager) TrimGang(key string, min resources.Vector) (Request, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.adm.gangs[key]
	if g == nil {
		return Request{}, false
	}
	need := min.Clone()
	if a := m.apps[g.req.App]; a != nil {
		need.SubClamped(a.usage)
	}
	for _, ad := range m.adm.byKey {
		if ad.gang == key {
			need.SubClamped(ad.drawn)
		}
	}
	cut := g.req.Resources.Clone()
	cut.SubClamped(need)
	if cut.IsZero() {
		return Request{}, false
	}
	part := g.req
	part.Resources = cut
	m.adm.add(&part, g.group, -1, 0)
	g.req.Resources.SubClamped(cut)
	if g.drawers <= 0 && g.req.Resources.IsZero() {
		delete(m.adm.gangs, key)
		m.drop(g)
	}
	return part, true
}

// GangHeld is what the gang key's reservation still holds; false when it
// has none.
func (m *Manager) GangHeld(key string) (resources.Vector, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.adm.gangs[key]
	if g == nil {
		return nil, false
	}
	return g.req.Resources.Clone(), true
}

// minimum is the smaller of a and b for each resource.
func minimum(a, b resources.Vector) resources.Vector {
	out := make(resources.Vector, len(a))
	for i, x := range a {
		out[i] = min(x, b.Get(resources.ID(i)))
	}
	return out
}
