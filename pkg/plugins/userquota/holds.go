package userquota

import (
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/ugm"
)

// activateFunc sends pods (by namespace/name) back to the active queue:
// the framework handle's Activate. It must not keep the map (send reuses
// it); kube-scheduler's queue reads it under its lock.
type activateFunc func(logger klog.Logger, pods map[string]*v1.Pod)

// holds is the book of the pods this plugin holds: refused at the queue's
// door (PreEnqueue) or in a scheduling cycle (PreFilter), with why, so
// that a release, a config change or a share change lets in exactly the
// pods it may admit, in order. Its lock guards the book alone: it is never
// held while calling ugm or the framework.
type holds struct {
	clock    clock.WithDelayedExecution
	activate activateFunc

	// frees counts releases, config changes and share changes. A decision
	// reads it before deciding: if it moved by the time a refusal is
	// recorded, the let-in that followed the free may have run before the
	// pod was recorded, so the pod is let in again at once.
	frees atomic.Uint64
	// config holds every pod while no valid queue config is in force and
	// the ConfigMap's does not load (configmap.go); nil otherwise.
	config atomic.Pointer[hold.ConfigError]

	mu   sync.Mutex
	book *hold.Book
	// inCycle holds the pods refused in a scheduling cycle that PreEnqueue
	// has not seen since (they may be in flight); true: let in since, an
	// echo is owed at the next PreEnqueue.
	inCycle map[string]bool
	// ready: the running pods are accounted; until then pods wait
	// (start-up) in arrived, in the order they were first seen (by the
	// pod handler, or by PreEnqueue when it gave up waiting), and waiting
	// has each one's index there, by namespace/name. queued: the pods
	// among them PreEnqueue held (kind Starting), which the scheduling
	// queue keeps among its unschedulable pods until activated.
	ready   bool
	waiting map[string]int
	arrived []*v1.Pod
	queued  map[string]bool

	// decided is closed once the start-up let-in has decided the pods
	// that waited (startUpDecided); PreEnqueue waits for it, for at most
	// wait from the first time it waits (deadline), so that a pod the
	// let-in admits goes to the active queue at its first PreEnqueue
	// instead of through the queue's unschedulable pods (awaitStartUp).
	decided     chan struct{}
	decidedOnce sync.Once
	wait        time.Duration
	deadline    time.Time
	// onLetIn, when set, is told the key of each pod let in, under mu
	// (waits.letIn: the estimate given for it meets the actual wait).
	onLetIn func(key string)
}

func newHolds(c clock.WithDelayedExecution, activate activateFunc, starvation time.Duration) *holds {
	return &holds{clock: c, activate: activate, book: hold.NewBook(starvation), inCycle: map[string]bool{},
		waiting: map[string]int{}, queued: map[string]bool{}, decided: make(chan struct{})}
}

// starting keeps pod waiting and reports true while the running pods are
// not accounted yet (no decision on partial usage): PreEnqueue then holds
// it (kind Starting).
func (h *holds) starting(pod *v1.Pod) bool { return h.keepWaiting(pod, true) }

// seenPending keeps pod, one of ours waiting for a node that the pod
// handler saw before the running pods were accounted, for the start-up
// let-in to decide; after start-up it does nothing.
func (h *holds) seenPending(pod *v1.Pod) { h.keepWaiting(pod, false) }

// keepWaiting records pod in arrived before start-up (an update keeps its
// first place) and reports whether it did; queued: PreEnqueue holds it.
func (h *holds) keepWaiting(pod *v1.Pod, queued bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ready {
		return false
	}
	key := pod.Namespace + "/" + pod.Name
	if i, ok := h.waiting[key]; ok {
		h.arrived[i] = pod // an update: the pod keeps its place
	} else {
		h.waiting[key] = len(h.arrived)
		h.arrived = append(h.arrived, pod)
	}
	if queued {
		h.queued[key] = true
	}
	return true
}

// waitAtStartUp makes PreEnqueue wait up to d, from the first time it
// waits, for the start-up let-in's decisions (0: it never waits). New
// sets it before any PreEnqueue.
func (h *holds) waitAtStartUp(d time.Duration) { h.wait = d }

// awaitStartUp returns once the start-up let-in has decided the pods that
// waited, or once the wait is over. PreEnqueue calls it under the
// scheduling queue's lock: the let-in releases it before it activates
// anything (Activate takes that lock), and the wait is bounded, once per
// process, for a replica whose start-up stalls. Why wait: a pod PreEnqueue
// holds goes into the queue's map of unschedulable pods, which keeps its
// size for the process's life; every binding walks that map
// (docs/throughput.md, "The refused case against a parked floor").
func (h *holds) awaitStartUp() {
	if h.wait <= 0 {
		return
	}
	select {
	case <-h.decided:
		return
	default:
	}
	h.mu.Lock()
	if h.deadline.IsZero() {
		h.deadline = h.clock.Now().Add(h.wait)
	}
	left := h.deadline.Sub(h.clock.Now())
	h.mu.Unlock()
	if left <= 0 {
		return
	}
	t := h.clock.NewTimer(left)
	defer t.Stop()
	select {
	case <-h.decided:
	case <-t.C():
	}
}

// startUpDecided releases PreEnqueue's wait (awaitStartUp): the pods that
// waited for start-up are decided. Idempotent.
func (h *holds) startUpDecided() { h.decidedOnce.Do(func() { close(h.decided) }) }

// isReady reports whether the running pods were accounted (started).
func (h *holds) isReady() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ready
}

// started marks the running pods accounted and returns the pods that
// waited for it, in the order they were first seen, and which of them
// (by namespace/name) PreEnqueue holds.
func (h *holds) started() (pods []*v1.Pod, queued map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ready = true
	pods, queued = h.arrived, h.queued
	h.waiting, h.arrived, h.queued = nil, nil, nil
	return pods, queued
}

// configError returns why every pod is held for the config (fail closed),
// or nil when pods are decided.
func (h *holds) configError() *hold.ConfigError { return h.config.Load() }

// setConfigError holds every pod for err (nil: decide pods again; the
// caller lets the held ones in).
func (h *holds) setConfigError(err *hold.ConfigError) { h.config.Store(err) }

// freed returns the free counter, to compare after a decision.
func (h *holds) freed() uint64 { return h.frees.Load() }

// freedNow counts a free.
func (h *holds) freedNow() { h.frees.Add(1) }

// hold records p as held; inCycle says it was refused in a scheduling
// cycle. It returns the earlier entry (nil when it was not held).
func (h *holds) hold(p *hold.Pod, inCycle bool) *hold.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	if inCycle {
		h.inCycle[p.Key] = false
	}
	return h.book.Hold(p, h.clock.Now())
}

// letIn takes a pod let in off the book, records how long it waited
// (userquota_held_wait_seconds, by the kind that held it last) and returns
// its entry (nil when it was not held). Every let-in comes here: the
// plugin's (letin.go) and PreEnqueue's. When it was refused in a cycle
// PreEnqueue has not seen it leave, an echo is owed (see enqueued).
func (h *holds) letIn(uid types.UID) *hold.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.book.Remove(string(uid))
	if p != nil {
		metrics.ObserveHeldWait(string(hold.KindOf(p.Reason)), h.clock.Since(p.Since))
	}
	if _, ok := h.inCycle[string(uid)]; ok && p != nil {
		h.inCycle[string(uid)] = true
	}
	if p != nil && h.onLetIn != nil {
		h.onLetIn(p.Key)
	}
	return p
}

// forget drops a pod that went away (deleted or bound) and returns its
// entry (nil when it was not held).
func (h *holds) forget(uid types.UID) *hold.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.inCycle, string(uid))
	return h.book.Remove(string(uid))
}

// enqueued notes that PreEnqueue saw the pod (so it is not in a cycle),
// and reports whether an echo is owed: it was let in while it may have
// been in its cycle, and the queue may have put it in the backoff queue.
func (h *holds) enqueued(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	owed, ok := h.inCycle[string(uid)]
	if ok {
		delete(h.inCycle, string(uid))
	}
	return owed
}

// get returns the pod's entry, or nil when it is not held.
func (h *holds) get(uid types.UID) *hold.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.book.Get(string(uid))
}

// released returns the held pods a release of req may let in, in order.
func (h *holds) released(req *ugm.Request, order hold.Order) []*hold.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.book.Released(req, hold.Window, order)
}

// hasBehind reports whether pods are held behind the pod key.
func (h *holds) hasBehind(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.book.HasBehind(key)
}

// behind returns the pods held behind the pod key, in order.
func (h *holds) behind(key string, order hold.Order) []*hold.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.book.Behind(key, order)
}

// all returns every held pod, in order.
func (h *holds) all(order hold.Order) []*hold.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.book.All(order)
}

// of returns the held pods kind holds.
func (h *holds) of(kind hold.Kind, order hold.Order) []*hold.Pod {
	var out []*hold.Pod
	for _, p := range h.all(order) {
		if hold.KindOf(p.Reason) == kind {
			out = append(out, p)
		}
	}
	return out
}

// barrier returns the held pod whose kept room the pod would take (see
// hold.Book.Barrier; group: the group its application is tracked
// against), or nil.
func (h *holds) barrier(pod *v1.Pod, req *ugm.Request, group string) *hold.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.book.Barrier(string(pod.UID), req, group, podPriority(pod), pod.CreationTimestamp.Time, h.clock.Now())
}

// kinds counts the held pods by kind.
func (h *holds) kinds() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.book.Kinds()))
	for k, n := range h.book.Kinds() {
		out[string(k)] = n
	}
	return out
}

// oldest is, by kind, how long the pod held longest has been held since
// its first hold (kinds that hold no pod are absent).
func (h *holds) oldest() map[string]time.Duration {
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	firsts := h.book.Oldest()
	out := make(map[string]time.Duration, len(firsts))
	for k, first := range firsts {
		out[string(k)] = now.Sub(first)
	}
	return out
}

// send activates pods (let in, their room held) one at a time, in the
// order given. The active queue is a heap that takes each pod at its end:
// pods sent in the order the queue took them in (its sort key after
// priority; letIn sends them so) leave it sorted, and its pops cheap.
// Handed to Activate in one map, they go in in the map's random order,
// and every pop after that walks a scrambled heap: after a start-up
// let-in of 50,000 pods, 7.0-7.7 µs a pop against 5.2-5.4
// (BenchmarkStartUpPop), twice the control's pops in the scale run's
// profiles (docs/throughput.md). One pod a call also lets the scheduler
// pop between them.
func (h *holds) send(logger klog.Logger, pods []*v1.Pod) {
	if len(pods) == 0 {
		return
	}
	logger.V(4).Info("Letting in pods held by quota", "count", len(pods))
	one := make(map[string]*v1.Pod, 1)
	for _, pod := range pods {
		clear(one)
		one[pod.Namespace+"/"+pod.Name] = pod
		h.activate(logger, one)
	}
}

// echo activates a pod let in during its scheduling cycle once more, off
// the scheduling queue's lock (PreEnqueue runs under it; Activate takes
// it). A pod refused in a cycle may still be in that cycle when it is let
// in: the queue then only notes the Activate and, when the cycle ends,
// puts the pod in the backoff queue (1 s, doubling with each attempt up to
// podMaxBackoffSeconds, 10 s by default). The cycle's end runs PreEnqueue
// (on the way to either queue), which calls echo; this moves the pod to
// the active queue at once, however long the cycle took.
func (h *holds) echo(logger klog.Logger, pod *v1.Pod) {
	logger.V(4).Info("Activating a pod let in during its scheduling cycle, again", "pod", klog.KObj(pod))
	h.clock.AfterFunc(0, func() { h.activate(logger, map[string]*v1.Pod{pod.Namespace + "/" + pod.Name: pod}) })
}
