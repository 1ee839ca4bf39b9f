package userquota

import (
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/ugm"
)

// Reservations live in memory. A replica that starts (a restart; the
// replica a failover makes leader started as a follower, whose
// scheduling queue runs PreEnqueue as the leader's does) rebuilds them
// from what the API server shows before it decides a pod
// (docs/gangs.md, "Restarts and failover"): a gang with pods running but
// fewer than its minimum, within its timeout counted from its first pod's
// binding, is reserved its minimum less what runs (ugm.ReserveGang), so
// that the members still to come (a Spark driver's executors) find the
// room the old leader held for them. Its pods still pending are then
// decided by PreEnqueue as before: they draw on it, or reserve it
// themselves if they come first. Pods that ended are not seen (the
// scheduler's informer leaves them out), so what they drew is reserved
// again: a gang whose members end before the rest come holds more than
// the old leader did, until its pods come or its timeout.

// A replica may also first see a gang's pod when it is bound already,
// after start-up: its informer relisted after a dropped watch, and the
// pod was created and bound meanwhile by the leader of the time. A
// follower that then leads would know neither the gang's definitions (a
// Spark driver carries its task groups) nor its running member, and the
// executors, which carry only their task group's name, would stay held.
// The pod handler hands each such pod (charged, and unknown to the gang
// book) to foundRunning, which does for its gang what the rebuild would.

// gangFinder orders the two ways pods found running teach the gang book
// their gangs: the start-up rebuild, all at once, and foundRunning, one
// pod at a time after it. Its lock is held across each (they call the
// ledger, ugm and the gang book, each alone). live: the rebuild has
// begun; before it, foundRunning leaves the pods it may list to it.
type gangFinder struct {
	mu   sync.Mutex
	live bool
}

// foundGang is what the running pods of one gang show.
type foundGang struct {
	member *gang.Member
	// req is a running pod's charge: the gang's user, queue and
	// application.
	req   ugm.Request
	first time.Time // its first pod's binding
	uids  []types.UID
	// leaving: a pod of it is being deleted, the gang is going.
	leaving bool
}

// rebuildGangs reserves again what the gangs found part-running still
// need.
func (pl *Plugin) rebuildGangs(logger klog.Logger) {
	if pl.args.IgnoreGangs {
		return
	}
	pl.finder.mu.Lock()
	defer pl.finder.mu.Unlock()
	// From now on the pod handler finds the pods this list misses.
	pl.finder.live = true
	pods, err := pl.pods.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing pods to rebuild gang reservations")
		return
	}
	found := map[string]*foundGang{}
	for _, pod := range pods {
		if !pl.ours(pod) || pod.Spec.NodeName == "" || !pl.enforcesGang(pod) {
			continue
		}
		pl.foundMember(found, pod)
	}
	now := pl.gangs.clock.Now()
	n := 0
	for key, f := range found {
		if pl.rebuildGang(logger, key, f, now) {
			n++
		}
	}
	if n > 0 {
		logger.V(2).Info("Gang reservations rebuilt", "gangs", n)
	}
}

// foundMember adds the running pod to its gang in found.
func (pl *Plugin) foundMember(found map[string]*foundGang, pod *v1.Pod) {
	c, running := pl.ledger.Get(string(pod.UID))
	if !running {
		return
	}
	m, err := pl.gangMember(pod, ugm.Decision{Request: c.Request, Placed: true})
	if err != nil || m == nil {
		return
	}
	key := m.ID.String()
	f := found[key]
	if f == nil {
		f = &foundGang{member: m, req: c.Request}
		found[key] = f
	}
	if m.Min != nil && f.member.Min == nil {
		f.member = m
	}
	f.uids = append(f.uids, pod.UID)
	f.leaving = f.leaving || pod.DeletionTimestamp != nil
	if at := scheduledAt(pod); !at.IsZero() && (f.first.IsZero() || at.Before(f.first)) {
		f.first = at
	}
}

// rebuildGang reserves the gang key what its minimum still needs, if it
// runs part of it within its timeout; true when it reserved.
func (pl *Plugin) rebuildGang(logger klog.Logger, key string, f *foundGang, now time.Time) bool {
	// Its pods are in the book, so that their deletion is followed.
	for _, uid := range f.uids {
		pl.gangs.note(f.member, uid)
	}
	pl.gangs.bound(f.member.ID, f.first)
	min := f.member.Min
	if min == nil || f.leaving {
		// Its minimum is unknown (no running pod defines it), or it is
		// going.
		return false
	}
	left := min.Timeout - now.Sub(f.first)
	if f.first.IsZero() {
		left = min.Timeout
	}
	if left <= 0 {
		// Its reservation would have timed out: a Hard gang short of its
		// minimum failed, a Soft one's pods are ordinary pods.
		pl.gangs.end(key, true)
		return false
	}
	g := f.req
	g.Resources = min.Resources
	switch err := pl.ugm.ReserveGang(key, &g); {
	case err == nil:
		pl.gangs.reserved(f.member.ID, left, func() { go pl.gangTimeout(key) })
		metrics.RecordGang(metrics.GangReserved)
		go pl.letInGang(key)
		return true
	case errors.Is(err, ugm.ErrGangRuns):
		pl.gangs.end(key, false)
	case errors.Is(err, ugm.ErrGangReserved):
		// A pod of it got there first.
	default:
		// Others took the room while no replica led: its pods to come
		// wait for it, as a gang's pods do.
		logger.Info("A gang found part-running could not be reserved what it still needs", "gang", key, "err", err)
	}
	return false
}

// foundRunning does for the gang of pod, bound and just charged by the
// pod handler after start-up without the gang book knowing it (this
// replica never saw it pending), what the rebuild would: the gang's
// definitions and its running member are noted; a gang waiting, its
// minimum known, is reserved what the minimum still needs for what is
// left of its timeout from the earliest binding found (or failed, or
// settled, past it), and the pods held for want of it are let in (to
// draw, or to be told why not); a gang reserved already is trimmed to
// what its minimum still needs, the pod covering its part of it
// (ugm.TrimGang), and the room let go goes to others.
func (pl *Plugin) foundRunning(logger klog.Logger, pod *v1.Pod) {
	if !pl.enforcesGang(pod) {
		return
	}
	key, letIn, freed := pl.learnFound(logger, pod)
	if freed != nil {
		pl.onRelease(logger, *freed)
	}
	if letIn {
		pl.letInGang(key)
	}
}

// learnFound is foundRunning's part under the finder's lock: it returns
// the pod's gang, whether its held pods are to be let in, and the room
// let go (nil: none).
func (pl *Plugin) learnFound(logger klog.Logger, pod *v1.Pod) (key string, letIn bool, freed *ugm.Request) {
	pl.finder.mu.Lock()
	defer pl.finder.mu.Unlock()
	if !pl.finder.live {
		// The rebuild, still to come, lists it.
		return "", false, nil
	}
	c, running := pl.ledger.Get(string(pod.UID))
	if !running {
		return "", false, nil
	}
	m, err := pl.gangMember(pod, ugm.Decision{Request: c.Request, Placed: true})
	if err != nil || m == nil {
		return "", false, nil
	}
	fresh, phase, min, first := pl.gangs.found(m, pod.UID, scheduledAt(pod))
	if !fresh || min == nil {
		// Known (this replica decided it, or found it before), or its
		// gang's minimum is still unknown (a driver to come defines it).
		return "", false, nil
	}
	key = m.ID.String()
	switch phase {
	case gang.Waiting:
		member := *m
		member.Min = min
		f := &foundGang{member: &member, req: c.Request, first: first, leaving: pod.DeletionTimestamp != nil}
		// A reservation lets the gang's held pods in itself.
		return key, !pl.rebuildGang(logger, key, f, pl.gangs.clock.Now()), nil
	case gang.Reserved:
		rel, ok := pl.ugm.TrimGang(key, min.Resources)
		if !ok {
			return key, false, nil
		}
		_, stands := pl.ugm.GangHeld(key)
		if !stands {
			// Its whole minimum runs: its pods are ordinary pods.
			pl.gangs.end(key, false)
		}
		return key, !stands, &rel
	}
	return key, false, nil
}

// scheduledAt is when the pod was bound: its PodScheduled condition's
// transition (zero when it has none).
func scheduledAt(pod *v1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
