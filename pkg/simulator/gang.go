package simulator

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// Gangs (docs/simulator.md, "Gangs"), admitted as the scheduler plugin
// admits them (docs/design.md, "Gangs"; pkg/plugins/userquota/gangadmit.go
// and gangs.go), so that a trace predicts what the plugin does: a gang's
// first pod reserves the gang's whole minimum (ugm.ReserveGang) or is
// refused with the limit the minimum meets (held under Options.Requeue,
// and let in again when room frees); its pods draw on the reservation
// (ugm.DrawGang) and are charged at once; at the gang's timeout, on the
// clock of time (and wait) lines, what is left is released
// (ugm.ReleaseGang), and a Hard gang short of its minimum fails.

// podsID is the pods resource: a minimum's pods are its members, and a
// reservation with pods left at its timeout is short of its minimum (for
// a minimum that counts no pods, one with anything left; simGang.short).
var podsID = resources.Intern(resources.Pods)

// simGang is a gang a gang line declared.
type simGang struct {
	name string
	// line is the trace line that declared it.
	line int
	// app is its application, which its pods belong to.
	app ugm.AppKey
	// id names it in reasons, key is its reservation's key in ugm: as the
	// plugin names the YuniKorn task-group gang of app (a task-group gang
	// is its application, as a trace's gang is).
	id  gang.ID
	key string
	min gang.Min

	phase gang.Phase
	// deadline is a reserved gang's timeout; seq is the order gangs were
	// reserved in, which orders timeouts at one instant.
	deadline time.Time
	seq      int
	// pods are its pods that are live or held, by name: once none is
	// left, the gang waits anew (the plugin forgets a gang with no pod).
	pods map[string]bool
	// shown: this wait's refusal printed its gang line (a wait is
	// reported once, as the plugin counts it once).
	shown bool
}

// gangs is the simulator's book of gangs: by name, by application (an
// application is one gang), and the gang of each pod that is live or held.
// opened are gangs that got a reservation (or settled) in the current
// line, whose held pods are then let in to draw, as the plugin's
// letInGang; seq counts reservations.
type gangs struct {
	byName map[string]*simGang
	byApp  map[ugm.AppKey]*simGang
	of     map[string]*simGang
	opened []*simGang
	seq    int
}

func newGangs() gangs {
	return gangs{byName: map[string]*simGang{}, byApp: map[ugm.AppKey]*simGang{}, of: map[string]*simGang{}}
}

// declareGang is the gang op: it declares a gang, or repeats a
// declaration exactly (which changes nothing). A bad field, another
// declaration of the gang that differs, or a second gang of one
// application is a line error and changes nothing.
func (s *sim) declareGang(n int, l *traceLine) any {
	g, err := parseGang(n, l)
	if err != nil {
		return lineError{Line: n, Error: "gang: " + err.Error()}
	}
	if old := s.gangs.byName[g.name]; old != nil {
		if what := old.differs(g); what != "" {
			return lineError{Line: n, Error: fmt.Sprintf("gang: gang %q is declared already (line %d) with another %s", g.name, old.line, what)}
		}
		return gangDeclared{Gang: g.name, Declared: true}
	}
	if other := s.gangs.byApp[g.app]; other != nil {
		return lineError{Line: n, Error: fmt.Sprintf("gang: application %s is gang %q's already (line %d): an application is one gang", g.app, other.name, other.line)}
	}
	s.gangs.byName[g.name] = g
	s.gangs.byApp[g.app] = g
	return gangDeclared{Gang: g.name, Declared: true}
}

// parseGang reads a gang line, with the defaults: application the gang's
// name, namespace "default", style Soft, timeout gang.DefaultTimeout.
func parseGang(n int, l *traceLine) (*simGang, error) {
	if l.Gang == nil || *l.Gang == "" {
		return nil, errors.New(`missing "gang" (the gang's id, which its pods' allocate lines name)`)
	}
	if l.Min == nil {
		return nil, errors.New(`missing "min" (the gang's whole minimum, e.g. {"cpu":"8"}, or {"cpu":"8","pods":"4"} to count its pods)`)
	}
	vec, err := resources.Parse(l.Min)
	if err != nil {
		return nil, fmt.Errorf("min: %w", err)
	}
	if vec.IsZero() {
		return nil, errors.New(`"min" reserves nothing (give at least one resource above 0, e.g. {"cpu":"8"})`)
	}
	// "pods", when given, counts the minimum's pods, as the plugin's
	// minimum always does: a held reason quotes it, and it tells at the
	// timeout whether the gang ran its minimum. The contract's gang line
	// gives none: such a minimum counts no pods (Members 0).
	pods := vec.Get(podsID)
	_, counted := l.Min[resources.Pods]
	switch {
	case counted && pods < 1:
		return nil, fmt.Errorf(`"min": "pods" %q is no number of pods (at least 1; leave "pods" out for a minimum that counts none)`, l.Min[resources.Pods])
	case pods > math.MaxInt32:
		return nil, fmt.Errorf(`"min": "pods" %d is more than a gang can have`, pods)
	}
	min := gang.Min{Members: int32(pods), Resources: vec, Timeout: gang.DefaultTimeout, Style: gang.Soft}
	if l.Style != nil {
		switch st := gang.Style(*l.Style); st {
		case gang.Soft, gang.Hard:
			min.Style = st
		default:
			return nil, fmt.Errorf(`bad "style" %q (want %s or %s)`, *l.Style, gang.Soft, gang.Hard)
		}
	}
	if l.Timeout != nil {
		d, err := time.ParseDuration(*l.Timeout)
		if err != nil {
			return nil, fmt.Errorf(`bad "timeout" %q (a Go duration, e.g. "60s" or "15m")`, *l.Timeout)
		}
		if d <= 0 {
			return nil, fmt.Errorf(`"timeout" %q is not positive (leave it out for the default, %s)`, *l.Timeout, gang.DefaultTimeout)
		}
		min.Timeout = d
	}
	app := ugm.AppKey{Namespace: l.Namespace, ID: l.App}
	if app.Namespace == "" {
		app.Namespace = defaultNamespace
	}
	if app.ID == "" {
		app.ID = *l.Gang
	}
	id := gangID(app)
	return &simGang{name: *l.Gang, line: n, app: app, id: id, key: id.String(), min: min, pods: map[string]bool{}}, nil
}

// gangID names the gang of app as the plugin names the YuniKorn
// task-group gang of an application: "TaskGroups namespace/app".
func gangID(app ugm.AppKey) gang.ID {
	return gang.ID{Namespace: app.Namespace, Form: gang.FormTaskGroups, Name: app.ID}
}

// differs names what of g's declaration differs from this one's; "" when
// nothing does.
func (g *simGang) differs(o *simGang) string {
	switch {
	case g.app != o.app:
		return "application"
	case !g.min.Resources.Equal(o.min.Resources):
		return "minimum"
	case g.min.Style != o.min.Style:
		return "style"
	case g.min.Timeout != o.min.Timeout:
		return "timeout"
	}
	return ""
}

// lineGang returns the declared gang an allocate line names (nil when it
// names none), and gives the pod the gang's application when the line
// names none; a pod of another application is an error.
func (s *sim) lineGang(l *traceLine, req *ugm.Request) (*simGang, error) {
	if l.Gang == nil {
		return nil, nil
	}
	if *l.Gang == "" {
		return nil, errors.New(`"gang" is empty (leave it out for a pod of no gang)`)
	}
	g := s.gangs.byName[*l.Gang]
	if g == nil {
		return nil, fmt.Errorf("gang %q is not declared (a gang line declares it before its pods)", *l.Gang)
	}
	if l.App == "" {
		req.App.ID = g.app.ID
	}
	if l.Namespace == "" {
		req.App.Namespace = g.app.Namespace
	}
	if req.App != g.app {
		return nil, fmt.Errorf(`gang %q is application %s, not %s (leave "app" and "namespace" out for its own)`, g.name, g.app, req.App)
	}
	return g, nil
}

// admitMember decides a gang's pod placed as req, as the plugin's
// admitMember: an application conflict is the pod's own refusal; then by
// the gang's phase it is charged as an ordinary pod, refused as failed,
// drawn on the reservation, or the gang's minimum is reserved first.
func (s *sim) admitMember(p *pendingPod, req *ugm.Request) error {
	g := p.gang
	var conflict *ugm.AppConflict
	if err := s.ledger.Check(req); errors.As(err, &conflict) {
		return err
	}
	switch g.phase {
	case gang.Settled:
		return s.ledger.Allocate(p.name, *req)
	case gang.Failed:
		return &gang.FailedError{Gang: g.id, Timeout: g.min.Timeout}
	case gang.Reserved:
		err := s.draw(g, p.name, req)
		if !errors.Is(err, ugm.ErrNoGang) {
			return err
		}
		// A config line dropped the reservation: reserve again.
		g.phase = gang.Waiting
	}
	return s.reserveGang(g, p.name, req)
}

// reserveGang reserves g's minimum for the user, queue and application of
// the pod placed as req, and draws the pod on it. A reservation prints
// {"gang":...,"reserved":true} and opens the gang to its held pods; a
// minimum that does not fit refuses the pod with a *gang.HeldError (the
// first refusal of a wait prints the gang's held line); an application
// that runs its minimum already settles the gang.
func (s *sim) reserveGang(g *simGang, pod string, req *ugm.Request) error {
	whole := *req
	whole.Resources = g.min.Resources
	switch err := s.ledger.Manager().ReserveGang(g.key, &whole); {
	case err == nil:
		s.gangs.seq++
		g.phase, g.deadline, g.seq, g.shown = gang.Reserved, s.now.Add(g.min.Timeout), s.gangs.seq, false
		s.emit(gangReserve{Gang: g.name, Reserved: true})
		s.gangs.opened = append(s.gangs.opened, g)
	case errors.Is(err, ugm.ErrGangReserved):
		// Reserved already (the plugin's race of two pods): draw.
	case errors.Is(err, ugm.ErrGangRuns):
		g.phase = gang.Settled
		s.gangs.opened = append(s.gangs.opened, g)
		return s.ledger.Allocate(pod, *req)
	default:
		held := &gang.HeldError{Gang: g.id, Min: g.min, Err: err, Never: ugm.NeverFits(err, g.min.Resources)}
		if !g.shown {
			g.shown = true
			s.emit(gangReserve{Gang: g.name, Reserved: false, Reason: held.Error(), Never: held.Never})
		}
		return held
	}
	return s.draw(g, pod, req)
}

// draw admits pod on g's reservation and charges it at once (the
// simulator commits when it admits); a charge refused gives the drawn
// part back.
func (s *sim) draw(g *simGang, pod string, req *ugm.Request) error {
	m := s.ledger.Manager()
	if _, err := m.DrawGang(g.key, pod, req); err != nil {
		return err
	}
	if err := s.ledger.Allocate(pod, *req); err != nil {
		m.Unadmit(pod)
		return err
	}
	return nil
}

// join records p as a pod of its gang (admitted or held).
func (s *sim) join(p *pendingPod) {
	if p.gang != nil {
		s.gangs.of[p.name] = p.gang
		p.gang.pods[p.name] = true
	}
}

// leave drops the pod from its gang (released or withdrawn) and returns
// the gang when it was the last pod of a reserved gang: its reservation
// is left to no one (gangGone).
func (s *sim) leave(pod string) *simGang {
	g := s.gangs.of[pod]
	if g == nil {
		return nil
	}
	delete(s.gangs.of, pod)
	delete(g.pods, pod)
	if len(g.pods) == 0 && g.phase == gang.Reserved {
		return g
	}
	g.tidy()
	return nil
}

// tidy sets a gang with no pod left back to waiting, unless it is
// reserved (its timeout or its last pod's release ends it): the plugin
// forgets such a gang, and its next pod starts it anew.
func (g *simGang) tidy() {
	if len(g.pods) == 0 && g.phase != gang.Reserved {
		g.phase, g.shown = gang.Waiting, false
	}
}

// gangGone ends the reservation of a reserved gang whose last pod went,
// as the plugin's gangPodGone: what it held is released, printed as
// {"gang":...,"released":true}, and let in to others.
func (s *sim) gangGone(g *simGang) {
	if g.phase != gang.Reserved || len(g.pods) > 0 {
		return
	}
	before := s.sharesBeforeRelease()
	g.phase = gang.Settled
	g.tidy()
	rel, ok := s.ledger.Manager().ReleaseGang(g.key)
	if !ok || rel.Resources.IsZero() {
		return
	}
	s.emit(gangReleased{Gang: g.name, Released: true})
	if s.opts.Requeue {
		s.letInAfter(&freed{released: &rel, sharesBefore: before})
	}
}

// advance moves the clock on to until, firing the timeouts of reserved
// gangs on the way, each at its own time: by deadline, then in the order
// they were reserved. A deadline the clock reaches exactly fires.
func (s *sim) advance(until time.Time) {
	for {
		// Pods with a runtime complete in time order, before a gang
		// timeout at the same moment.
		if c := s.nextCompletion(until); c != nil {
			var first *simGang
			for _, g := range s.gangs.byName {
				if g.phase == gang.Reserved && g.deadline.Before(c.at) && (first == nil || g.deadline.Before(first.deadline) || g.deadline.Equal(first.deadline) && g.seq < first.seq) {
					first = g
				}
			}
			if first == nil {
				s.now = c.at
				s.complete(c)
				continue
			}
		}
		var next *simGang
		for _, g := range s.gangs.byName {
			if g.phase != gang.Reserved || g.deadline.After(until) {
				continue
			}
			if next == nil || g.deadline.Before(next.deadline) || g.deadline.Equal(next.deadline) && g.seq < next.seq {
				next = g
			}
		}
		if next == nil {
			break
		}
		s.now = next.deadline
		s.timeout(next)
	}
	s.now = until
}

// timeout ends g's reservation at its timeout, as the plugin's
// gangTimeout: what is left is released; a gang short of its minimum
// (short) fails when Hard, else its pods go on as ordinary pods. When a reservation was left it prints {"gang":...,"timedout":true}
// (with "failed" and the reason when it failed). Under Options.Requeue
// the released room is let in to others, then the gang's held pods are
// let in (settled) or held as failed.
func (s *sim) timeout(g *simGang) {
	before := s.sharesBeforeRelease()
	rel, ok := s.ledger.Manager().ReleaseGang(g.key)
	short := ok && g.short(rel.Resources)
	g.phase = gang.Settled
	var failed *gang.FailedError
	if short && g.min.Style == gang.Hard {
		g.phase = gang.Failed
		failed = &gang.FailedError{Gang: g.id, Timeout: g.min.Timeout}
	}
	if ok {
		out := gangTimedOut{Gang: g.name, TimedOut: true}
		if failed != nil {
			out.Failed, out.Reason = true, failed.Error()
		}
		s.emit(out)
	}
	g.tidy()
	if !s.opts.Requeue {
		return
	}
	if ok && !rel.Resources.IsZero() {
		s.letInAfter(&freed{released: &rel, sharesBefore: before})
	}
	held := s.heldOf(g)
	if failed == nil {
		s.letIn(held)
		return
	}
	for _, c := range held {
		if p, _ := c.Obj.(*pendingPod); p != nil {
			s.hold(p, decision{placed: c.Request, reason: failed})
		}
	}
}

// short reports whether left, what g's reservation still held at its
// timeout, leaves g short of its minimum: pods of its minimum that drew
// nothing, as the plugin counts (its minimum always counts its pods); for
// a minimum that counts no pods (a gang line without "pods"), anything
// left.
func (g *simGang) short(left resources.Vector) bool {
	if g.min.Members == 0 {
		return !left.IsZero()
	}
	return left.Get(podsID) > 0
}

// sharesBeforeRelease is the shares table before a release, for the
// let-in after it (freed.sharesBefore); nil when nothing is held.
func (s *sim) sharesBeforeRelease() *shares.Table {
	if s.opts.Requeue && s.book.Len() > 0 {
		return s.computeShares(nil)
	}
	return nil
}

// heldOf lists g's held pods in let-in order.
func (s *sim) heldOf(g *simGang) []*hold.Pod {
	var out []*hold.Pod
	for _, c := range s.book.All(queueOrder{s}) {
		if p, _ := c.Obj.(*pendingPod); p != nil && p.gang == g {
			out = append(out, c)
		}
	}
	return out
}

// letInOpened lets in the held pods of the gangs reserved (or settled)
// since it last ran, as the plugin's letInGang after a reservation: they
// draw on it. Without Options.Requeue nothing is held.
func (s *sim) letInOpened() {
	for len(s.gangs.opened) > 0 {
		g := s.gangs.opened[0]
		s.gangs.opened = s.gangs.opened[1:]
		if s.opts.Requeue {
			s.letIn(s.heldOf(g))
		}
	}
}
