package userquota

import (
	"cmp"
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/userquota/userquota/pkg/podmeta"
)

// initialList holds the pods of the pod informer's initial list and hands
// them to the handler in one pass once the list is in, ordered so that an
// application's pods, and a user's, come one after another. The informer
// replays its list in its map's order, in which each pod's user, queues
// and histories are cold in memory: at a restart with 100,000 pods of
// 10,000 users, charging them in order takes a third off the rebuild and
// half its CPU (docs/throughput.md, "Recovery").
//
// Order is kept: any event that is not of the initial list (an update, a
// delete, a pod created since) hands the held pods over first, in the
// handler's own goroutine, so the handler sees a pod's events in the
// order the informer gave them. Until the pass has run, synced is false:
// everything that waits for the running pods to be accounted (PreFilter,
// the start-up let-in, the audit, the stores) waits for it.
type initialList struct {
	// listed reports whether the informer gave the handler its whole
	// initial list (the registration's HasSynced).
	listed func() bool
	// handle is the handler's add: every add after the list goes to it,
	// and the pass hands it each held pod unless pass is set.
	handle func(obj interface{})
	// pass, when set, hands the held objects over in their order in
	// handle's stead (the plugin's reads each pod ahead: readAhead).
	pass func(objs []heldObject)

	// seed hashes the order's keys.
	seed maphash.Seed

	done atomic.Bool
	// syncedCh is closed once the pass has run (done): what waits for it
	// is woken at once, not at a poll's next tick.
	syncedCh chan struct{}
	mu       sync.Mutex
	// chunk collects the initial list's objects as they come; each full
	// chunk goes to chunks and is placed in the order by a goroutine of
	// its own (placing), off the informer's: reading each pod's user and
	// application there, from memory the informer's list left cold, was
	// the longest part of the handler's share of the list.
	chunk   []heldObject
	chunks  [][]heldObject
	placing sync.WaitGroup
}

// newInitialList is an initial list that hands objects to handle.
func newInitialList(handle func(obj interface{})) *initialList {
	return &initialList{handle: handle, seed: maphash.MakeSeed(), syncedCh: make(chan struct{})}
}

// placeChunk is how many held objects one goroutine places.
const placeChunk = 1024

// heldObject is an initial list's object and its place in the order:
// hashes of its user (namespace and user-info annotation) and of its
// application's label.
type heldObject struct {
	user, app uint64
	obj       interface{}
}

// hold keeps obj, an initial list's object, for the pass; false when the
// pass has run (the object is then handled at once).
func (l *initialList) hold(obj interface{}) bool {
	if l.done.Load() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done.Load() {
		return false
	}
	if l.chunk == nil {
		l.chunk = make([]heldObject, 0, placeChunk)
	}
	l.chunk = append(l.chunk, heldObject{obj: obj})
	if len(l.chunk) == placeChunk {
		c := l.chunk
		l.chunks, l.chunk = append(l.chunks, c), nil
		l.placing.Add(1)
		go func() {
			defer l.placing.Done()
			l.placeAll(c)
		}()
	}
	return true
}

// placeAll works out the place in the order of each of held.
func (l *initialList) placeAll(held []heldObject) {
	for i := range held {
		l.place(&held[i])
	}
}

// place works out h's place in the order: pods of one user, and within it
// of one application, are adjacent. Only memory locality depends on it (a
// collision of hashes merely interleaves two groups): the charges of
// running pods do not depend on their order.
func (l *initialList) place(h *heldObject) {
	pod, ok := h.obj.(*v1.Pod)
	if !ok {
		return
	}
	var u maphash.Hash
	u.SetSeed(l.seed)
	u.WriteString(pod.Namespace)
	u.WriteByte(0)
	u.WriteString(pod.Annotations[podmeta.AnnotationUserInfo])
	h.user = u.Sum64()
	h.app = maphash.String(l.seed, podmeta.ExplicitAppID(pod.Labels, pod.Annotations))
}

// flush hands every held object to the handler, in order (place),
// once. Callers that come while it runs wait for it: no event overtakes
// the initial list.
func (l *initialList) flush() {
	if l.done.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done.Load() {
		return
	}
	l.placeAll(l.chunk)
	l.placing.Wait()
	pods := slices.Concat(append(l.chunks, l.chunk)...)
	l.chunks, l.chunk = nil, nil
	sortHeld(pods)
	if l.pass != nil {
		l.pass(pods)
	} else {
		for _, h := range pods {
			l.handle(h.obj)
		}
	}
	l.done.Store(true)
	close(l.syncedCh)
}

// handler is the pod handler: an initial list's add is held, every
// other event hands the held ones over first; adds go to handle.
func (l *initialList) handler(update func(old, obj interface{}), del func(obj interface{})) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, isInInitialList bool) {
			if isInInitialList && l.hold(obj) {
				return
			}
			l.flush()
			l.handle(obj)
		},
		UpdateFunc: func(old, obj interface{}) {
			l.flush()
			update(old, obj)
		},
		DeleteFunc: func(obj interface{}) {
			l.flush()
			del(obj)
		},
	}
}

// synced reports whether the initial list has been handed over.
func (l *initialList) synced() bool { return l.done.Load() }

// syncedChan is closed once the initial list has been handed over.
func (l *initialList) syncedChan() <-chan struct{} { return l.syncedCh }

// initialPoll is how often run looks whether the initial list is in.
const initialPoll = 10 * time.Millisecond

// run hands the initial list over as soon as the informer has given all
// of it (an event after it may have done so already).
func (l *initialList) run(ctx context.Context) {
	if err := wait.PollUntilContextCancel(ctx, initialPoll, true, func(context.Context) (bool, error) {
		return l.listed(), nil
	}); err != nil {
		return
	}
	l.flush()
}

// sortHeld orders pods by user, then application.
func sortHeld(pods []heldObject) {
	slices.SortFunc(pods, func(a, b heldObject) int {
		if c := cmp.Compare(a.user, b.user); c != 0 {
			return c
		}
		return cmp.Compare(a.app, b.app)
	})
}
