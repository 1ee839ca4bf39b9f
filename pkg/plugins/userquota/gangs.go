package userquota

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/gang"
)

// gangBook is the plugin's book of gangs: each gang's minimum as its pods
// or objects define it, its phase and timeout, and its pods held waiting
// for it (let in together when it reserves). Its lock guards the book
// alone: it is never held while calling ugm or the framework.
type gangBook struct {
	clock clock.WithDelayedExecution

	mu    sync.Mutex
	byKey map[string]*gangEntry
	// of is the gang of each pod seen (until it is deleted).
	of map[types.UID]string
}

type gangEntry struct {
	id    gang.ID
	min   *gang.Min
	phase gang.Phase
	timer clock.Timer
	// pods are the gang's pods seen and not deleted; held those of them
	// held waiting for it.
	pods map[types.UID]bool
	held map[types.UID]bool
	// waitCounted: this wait for room was counted (metrics GangHeld).
	waitCounted bool
	// first is the earliest binding of its pods found running (by the
	// rebuild or after it), zero when unknown.
	first time.Time
}

func newGangBook(c clock.WithDelayedExecution) *gangBook {
	return &gangBook{clock: c, byKey: map[string]*gangEntry{}, of: map[types.UID]string{}}
}

// note records the pod uid as member's (and the gang's minimum: the
// first one its pods define, or its object's as read now while it waits)
// and returns the gang's phase and minimum.
func (b *gangBook) note(m *gang.Member, uid types.UID) (gang.Phase, *gang.Min) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.noteWithoutLock(m, uid)
	return e.phase, e.min
}

func (b *gangBook) noteWithoutLock(m *gang.Member, uid types.UID) *gangEntry {
	e := b.entry(m.ID)
	fromObject := m.ID.Form != gang.FormTaskGroups && e.phase == gang.Waiting
	if m.Min != nil && (e.min == nil || fromObject) {
		min := *m.Min
		e.min = &min
	}
	e.pods[uid] = true
	b.of[uid] = m.ID.String()
	return e
}

// found is note for a pod found running, bound at (zero: unknown), unless
// the book knows the pod already: fresh says it did not. It returns the
// gang's phase and minimum and the earliest binding of its pods found.
func (b *gangBook) found(m *gang.Member, uid types.UID, at time.Time) (fresh bool, phase gang.Phase, min *gang.Min, first time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, known := b.of[uid]; known {
		return false, 0, nil, time.Time{}
	}
	e := b.noteWithoutLock(m, uid)
	e.boundAt(at)
	return true, e.phase, e.min, e.first
}

// bound records that a pod of the gang id was found running, bound at
// (the rebuild's pods: found's later count from the earliest).
func (b *gangBook) bound(id gang.ID, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.entry(id).boundAt(at)
}

func (e *gangEntry) boundAt(at time.Time) {
	if !at.IsZero() && (e.first.IsZero() || at.Before(e.first)) {
		e.first = at
	}
}

func (b *gangBook) entry(id gang.ID) *gangEntry {
	key := id.String()
	e := b.byKey[key]
	if e == nil {
		e = &gangEntry{id: id, pods: map[types.UID]bool{}, held: map[types.UID]bool{}}
		b.byKey[key] = e
	}
	return e
}

// reserved marks the gang reserved and starts its timeout: fire runs
// once it passes.
func (b *gangBook) reserved(id gang.ID, timeout time.Duration, fire func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entry(id)
	e.phase, e.waitCounted = gang.Reserved, false
	if e.timer != nil {
		e.timer.Stop()
	}
	e.timer = b.clock.AfterFunc(timeout, fire)
}

// lost sets a gang back to waiting: its reservation is gone (a config
// change drops all room held).
func (b *gangBook) lost(id gang.ID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entry(id)
	if e.phase == gang.Reserved {
		e.phase = gang.Waiting
		if e.timer != nil {
			e.timer.Stop()
			e.timer = nil
		}
	}
}

// keysOf lists the gangs of form defined by the object ns/name (a
// Workload's pod groups and replicas are gangs of their own).
func (b *gangBook) keysOf(form gang.Form, ns, name string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for key, e := range b.byKey {
		if e.id.Form == form && e.id.Namespace == ns && e.id.Name == name {
			out = append(out, key)
		}
	}
	return out
}

// reset sets the gang key back to waiting, its minimum unknown: the
// object that defined it went, and one created again defines it anew.
func (b *gangBook) reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.byKey[key]
	if e == nil {
		return
	}
	if e.timer != nil {
		e.timer.Stop()
	}
	e.phase, e.timer, e.min, e.waitCounted, e.first = gang.Waiting, nil, nil, false, time.Time{}
	b.tidy(key, e)
}

// end ends the gang's reservation: the gang fails when it was short of
// its minimum and its style is Hard (failed then says why), else it
// settles. It returns the gang's held pods.
func (b *gangBook) end(key string, short bool) (held []types.UID, failed *gang.FailedError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.byKey[key]
	if e == nil {
		return nil, nil
	}
	if e.timer != nil {
		e.timer.Stop()
	}
	e.phase, e.timer = gang.Settled, nil
	if short && e.min != nil && e.min.Style == gang.Hard {
		e.phase = gang.Failed
		failed = &gang.FailedError{Gang: e.id, Timeout: e.min.Timeout}
	}
	held = e.heldPods()
	b.tidy(key, e)
	return held, failed
}

// tidy drops a gang with no pod left, unless it is reserved (its timer or
// its last pod's deletion ends it): the book holds no more gangs than
// live pods.
func (b *gangBook) tidy(key string, e *gangEntry) {
	if len(e.pods) == 0 && e.phase != gang.Reserved {
		delete(b.byKey, key)
	}
}

// heldPods lists the pods held waiting for the gang key.
func (b *gangBook) heldPods(key string) []types.UID {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.byKey[key]; e != nil {
		return e.heldPods()
	}
	return nil
}

func (e *gangEntry) heldPods() []types.UID {
	out := make([]types.UID, 0, len(e.held))
	for uid := range e.held {
		out = append(out, uid)
	}
	return out
}

// holding records uid as held waiting for its gang (true) or not.
func (b *gangBook) holding(id gang.ID, uid types.UID, held bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entry(id)
	if held {
		e.held[uid] = true
		return
	}
	delete(e.held, uid)
}

// waits marks the gang waiting for room and reports whether this wait is
// new (not counted yet).
func (b *gangBook) waits(id gang.ID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entry(id)
	first := !e.waitCounted
	e.waitCounted = true
	return first
}

// forget drops a pod that is gone or bound from its gang's held pods.
func (b *gangBook) forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.byKey[b.of[uid]]; e != nil {
		delete(e.held, uid)
	}
}

// gone drops a deleted pod from its gang and returns the gang's key when
// it was the last pod of a reserved gang (its reservation is left to no
// one).
func (b *gangBook) gone(uid types.UID) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	key, ok := b.of[uid]
	if !ok {
		return "", false
	}
	delete(b.of, uid)
	e := b.byKey[key]
	if e == nil {
		return "", false
	}
	delete(e.pods, uid)
	delete(e.held, uid)
	last := len(e.pods) == 0 && e.phase == gang.Reserved
	b.tidy(key, e)
	return key, last
}

// size is how many gangs and pods the book keeps.
func (b *gangBook) size() (gangs, pods int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.byKey), len(b.of)
}
