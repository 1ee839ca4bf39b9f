// Package ledger records what each pod was charged and releases it exactly
// once. The scheduler plugin and the simulator both charge pods through it,
// so the simulator replays exactly what the scheduler does.
//
// Locking: Ledger.mu is taken before the ugm Manager's lock, never after,
// and before its Observer's.
package ledger

import (
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// ErrAlreadyAllocated is returned when a pod that is live is allocated again.
var ErrAlreadyAllocated = errors.New("already allocated")

// Charge is what one pod holds: the request ugm committed for it. Forced
// records a charge taken without a limit check (a pod found running).
type Charge struct {
	Pod     string
	Request ugm.Request
	Forced  bool
	// handle is the charge's place in ugm, resolved when it was made, so
	// its release needs no lookup.
	handle ugm.Handle
	// inline holds the request's resources and group when they fit (four
	// resources, one group: a pod's cpu, memory and pods, a user in one
	// group): the charge is then one object for the collector to walk
	// where it was three, 50,000 of them at issue 24's shape. Never
	// written again: a resize takes a copy of its own.
	inline      [4]int64
	inlineGroup [1]string
}

// Ledger maps live pods (by UID) to their charges. The zero value is not
// usable; call New.
type Ledger struct {
	mu   sync.Mutex
	ugm  *ugm.Manager
	pods map[string]*Charge
	// observers are told every charge and release, in the order added.
	observers []Observer
}

// Observer is told each charge and release of the ledger, after ugm made
// it, under the ledger's lock (so in the order they happened): the usage
// history of fair order (pkg/fairshare), the books of resource-seconds
// (pkg/accounting). A resize is told as the release of the old charge and
// the charge of the new one. It must not call the ledger, nor keep req.
type Observer interface {
	Charged(req *ugm.Request)
	Released(req *ugm.Request)
}

// Syncer is an Observer whose recording depends on the config in force
// (the usage history records nothing while no queue orders its users):
// Enforce calls Sync after each config change with the charges live then,
// under the ledger's lock, so that no charge or release falls between the
// change and the sync. It must not call the ledger, nor keep a request.
type Syncer interface {
	Sync(live iter.Seq[*ugm.Request])
}

// Observe adds an observer, told after those added before it; call it
// before the ledger is used.
func (l *Ledger) Observe(o Observer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observers = append(l.observers, o)
}

func (l *Ledger) charged(req *ugm.Request) {
	for _, o := range l.observers {
		o.Charged(req)
	}
}

func (l *Ledger) released(req *ugm.Request) {
	for _, o := range l.observers {
		o.Released(req)
	}
}

// Enforce puts the partition named partition of cfg in force in ugm
// (ugm.Manager.Enforce) and syncs each observer that is a Syncer with the
// charges live now, in one step under the ledger's lock. An error changes
// nothing.
func (l *Ledger) Enforce(cfg *queueconfig.Config, partition string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ugm.Enforce(cfg, partition); err != nil {
		return err
	}
	for _, o := range l.observers {
		if s, ok := o.(Syncer); ok {
			s.Sync(l.live)
		}
	}
	return nil
}

// live yields the request of each live charge. Callers hold l.mu.
func (l *Ledger) live(yield func(*ugm.Request) bool) {
	for _, c := range l.pods {
		if !yield(&c.Request) {
			return
		}
	}
}

// New returns an empty ledger charging m.
func New(m *ugm.Manager) *Ledger {
	return &Ledger{ugm: m, pods: map[string]*Charge{}}
}

// Manager returns the User Group Manager the ledger charges.
func (l *Ledger) Manager() *ugm.Manager { return l.ugm }

// Check asks whether req would be admitted now, changing nothing.
func (l *Ledger) Check(req *ugm.Request) error { return l.ugm.Check(req) }

// Allocate charges pod with req if every limit allows it. A pod already live
// gets ErrAlreadyAllocated and nothing changes.
func (l *Ledger) Allocate(pod string, req ugm.Request) error {
	_, err := l.allocate(pod, req, false)
	return err
}

// ForceAllocate charges a pod that is already running (found bound after a
// restart or failover) without checking limits. A pod already live is left
// as it is and reported with ErrAlreadyAllocated, so repeated informer events
// never count twice. If the pod's application is held by another user or
// queue, the pod is charged as an application of its own (keyed by the pod)
// so that nothing that runs goes uncounted. over is the limit the charge
// took someone over (ugm.Manager.ForceCommit), nil when it fit; the pod is
// charged either way, and err means it was not.
func (l *Ledger) ForceAllocate(pod string, req ugm.Request) (over *ugm.Refusal, err error) {
	return l.allocate(pod, req, true)
}

func (l *Ledger) allocate(pod string, req ugm.Request, force bool) (*ugm.Refusal, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, live := l.pods[pod]; live {
		return nil, fmt.Errorf("pod %s: %w", pod, ErrAlreadyAllocated)
	}
	// ugm commits the charge's own request (it may set its Trees), kept
	// only if the commit is made: a copy of req taken to commit would
	// escape, an allocation per pod.
	c := &Charge{Pod: pod, Forced: force, Request: req}
	c.Request.Groups = ownCopy(c.inlineGroup[:], req.Groups)
	c.Request.Resources = ownCopy(c.inline[:], req.Resources)
	var over *ugm.Refusal
	var err error
	if force {
		over, err = l.ugm.ForceCommitWith(pod, &c.Request, &c.handle)
		if err != nil && isConflict(err) {
			c.Request.App = ugm.AppKey{Namespace: req.App.Namespace, ID: "pod:" + pod}
			over, err = l.ugm.ForceCommitWith(pod, &c.Request, &c.handle)
		}
	} else {
		err = l.ugm.CommitWith(pod, &c.Request, &c.handle)
	}
	if err != nil {
		return nil, err
	}
	l.pods[pod] = c
	l.charged(&c.Request)
	return over, nil
}

// ownCopy returns a copy of v in buf when it fits there, else a new one
// (nil when v is empty, as a clone of it would be).
func ownCopy[S ~[]E, E any](buf []E, v S) S {
	if len(v) == 0 || len(v) > len(buf) {
		return append(S(nil), v...)
	}
	return append(S(buf[:0:len(buf)]), v...)
}

// isConflict reports whether err is a *ugm.AppConflict (apart: its
// errors.As target escapes).
func isConflict(err error) bool {
	var conflict *ugm.AppConflict
	return errors.As(err, &conflict)
}

// Release gives back everything pod was charged, once: the second release
// of a pod, or the release of a pod never charged, returns false and changes
// nothing. The error reports an inconsistency ugm found (the release still
// happened).
func (l *Ledger) Release(pod string) (Charge, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.pods[pod]
	if !ok {
		return Charge{}, false, nil
	}
	delete(l.pods, pod)
	err := l.ugm.DecreaseWith(&c.Request, &c.handle)
	l.released(&c.Request)
	return *c, true, err
}

// Resize changes a live pod's charge to newResources (an in-place resize).
// It is forced: the scheduler cannot refuse a resize. It reports whether the
// pod is live and, when the new charge takes someone over a limit, the
// refusal a normal increase would have met (the change is made anyway).
func (l *Ledger) Resize(pod string, newResources resources.Vector) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.pods[pod]
	if !ok {
		return false, nil
	}
	if c.Request.Resources.Equal(newResources) {
		return true, nil
	}
	err := l.ugm.Resize(&c.Request, newResources)
	var over *ugm.Refusal
	if err != nil && !errors.As(err, &over) {
		return true, err
	}
	l.released(&c.Request)
	c.Request.Resources = newResources.Clone()
	l.charged(&c.Request)
	return true, err
}

// CheckResize returns what Resize would for pod (the *Refusal its growth
// to newResources meets, or another error), changing nothing; false when
// pod is not live.
func (l *Ledger) CheckResize(pod string, newResources resources.Vector) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.pods[pod]
	if !ok {
		return false, nil
	}
	return true, l.ugm.CheckResize(&c.Request, newResources)
}

// Get returns the charge of a live pod.
func (l *Ledger) Get(pod string) (Charge, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.pods[pod]
	if !ok {
		return Charge{}, false
	}
	return *c, true
}

// Group is the group the charge's application is tracked against ("" for
// none): a group's limit counts only that group's charges
// (ugm.Refusal.CountsFor).
func (c *Charge) Group() string { return c.handle.Group() }

// Len returns the number of live pods.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pods)
}

// Pods returns the UIDs of all live pods.
func (l *Ledger) Pods() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.pods))
	for p := range l.pods {
		out = append(out, p)
	}
	return out
}
