package userquota

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/plugins/userquota/reclaim"
	"github.com/userquota/userquota/pkg/ugm"
)

// reclaimBook is the plugin's preemption bookkeeping. Its lock is taken
// alone: never while calling the ledger, ugm or the framework.
type reclaimBook struct {
	clock    clock.WithDelayedExecution
	activate activateFunc

	mu sync.Mutex
	// leaving: pods preempted or terminating that are still charged; their
	// usage is on its way out and is not counted when deciding how much a
	// queue may lose, so two preemptions in a row do not take the same
	// room twice.
	leaving map[types.UID]ugm.Request
	// waiters: pods of elastic queues that found no victims; a share
	// recompute that changes any share sends them back to the active queue.
	waiters map[types.UID]*v1.Pod
	// blocked: pods PreFilter refused only because queues above theirs
	// lent their room out (not held: the PostFilter may take it back),
	// each with the free counter read before its decision. The delete of
	// a pod of ours queues them (hints.go), but the scheduler's handler
	// may see the delete before this plugin's handler released the pod's
	// charge (two handlers, no order between them): a pod decided in that
	// gap would wait for an unrelated event. Each free activates, once,
	// the blocked pods decided before it (activateBlocked).
	blocked map[types.UID]blockedPod
	// refusedSince: when the pod's preemption delay started, when its
	// PodScheduled condition does not say so yet.
	refusedSince map[types.UID]time.Time
	// timers activate a pod when its preemption delay is over.
	timers map[types.UID]clock.Timer
	// runs: the preemptions in progress, by preemptor.
	runs map[types.UID]*preemptRun
}

// preemptRun is one preemption in progress: its state and what it evicted.
type preemptRun struct {
	rs      *reclaim.State
	mu      sync.Mutex
	victims []victimRecord
	// pdbViolations of the candidate that was carried out.
	pdbViolations int64
}

// blockedPod is a pod refused for room lent out, and the free counter
// read before its decision.
type blockedPod struct {
	pod   *v1.Pod
	frees uint64
}

type victimRecord struct {
	key, queue, reason string
}

// evicted records a victim of the candidate carried out (victims are
// evicted in parallel).
func (r *preemptRun) evicted(v victimRecord, pdbViolations int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.victims = append(r.victims, v)
	r.pdbViolations = pdbViolations
}

// outcome returns what the run evicted and how many of them against a
// PodDisruptionBudget.
func (r *preemptRun) outcome() ([]victimRecord, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]victimRecord(nil), r.victims...), r.pdbViolations
}

func newReclaimBook(c clock.WithDelayedExecution, activate activateFunc) *reclaimBook {
	return &reclaimBook{
		clock:        c,
		activate:     activate,
		leaving:      map[types.UID]ugm.Request{},
		waiters:      map[types.UID]*v1.Pod{},
		blocked:      map[types.UID]blockedPod{},
		refusedSince: map[types.UID]time.Time{},
		timers:       map[types.UID]clock.Timer{},
		runs:         map[types.UID]*preemptRun{},
	}
}

func (b *reclaimBook) markLeaving(uid types.UID, req ugm.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leaving[uid] = req
}

// isLeaving reports whether the pod was preempted (or seen terminating)
// and still holds its charge.
func (b *reclaimBook) isLeaving(uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.leaving[uid]
	return ok
}

// released forgets a pod whose charge was released.
func (b *reclaimBook) released(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.leaving, uid)
}

func (b *reclaimBook) leavingRequests() []ugm.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]ugm.Request, 0, len(b.leaving))
	for _, r := range b.leaving {
		out = append(out, r)
	}
	return out
}

// forget drops what is kept about a pod that was bound or went away.
func (b *reclaimBook) forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.waiters, uid)
	delete(b.blocked, uid)
	delete(b.refusedSince, uid)
	if t := b.timers[uid]; t != nil {
		t.Stop()
		delete(b.timers, uid)
	}
}

func (b *reclaimBook) addWaiter(pod *v1.Pod) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiters[pod.UID] = pod
}

func (b *reclaimBook) dropWaiter(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.waiters, uid)
}

// takeWaiters returns and forgets every waiter.
func (b *reclaimBook) takeWaiters() map[string]*v1.Pod {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiters) == 0 {
		return nil
	}
	out := make(map[string]*v1.Pod, len(b.waiters))
	for uid, p := range b.waiters {
		out[p.Namespace+"/"+p.Name] = p
		delete(b.waiters, uid)
	}
	return out
}

// activateWaiters sends the pods that found no victims back to the active
// queue: the shares changed, so a queue may now be over its share.
func (b *reclaimBook) activateWaiters(logger klog.Logger) {
	if pods := b.takeWaiters(); len(pods) > 0 {
		logger.V(4).Info("Activating pods waiting for a queue over its share", "count", len(pods))
		b.activate(logger, pods)
	}
}

// addBlocked records pod, refused for room lent out by a decision that
// read the free counter at frees.
func (b *reclaimBook) addBlocked(pod *v1.Pod, frees uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.blocked[pod.UID] = blockedPod{pod: pod, frees: frees}
}

// activateBlocked sends back to the active queue, and forgets, the blocked
// pods decided before the free counter reached now (a pod still in its
// cycle is noted by the queue and requeued when the cycle ends).
func (b *reclaimBook) activateBlocked(logger klog.Logger, now uint64) {
	b.mu.Lock()
	var pods map[string]*v1.Pod
	for uid, w := range b.blocked {
		if w.frees >= now {
			continue
		}
		if pods == nil {
			pods = map[string]*v1.Pod{}
		}
		pods[w.pod.Namespace+"/"+w.pod.Name] = w.pod
		delete(b.blocked, uid)
	}
	b.mu.Unlock()
	if len(pods) > 0 {
		logger.V(4).Info("Activating pods refused for room lent out, after room was freed", "count", len(pods))
		b.activate(logger, pods)
	}
}

// delayLeft returns how much of its queue's preemption delay the pod has
// still to wait, and makes sure it is activated then. The delay runs from
// the pod's first refusal: its PodScheduled=False condition, or the first
// PostFilter that saw it when the condition is not written yet.
func (b *reclaimBook) delayLeft(logger klog.Logger, pod *v1.Pod, delay time.Duration) time.Duration {
	if delay <= 0 {
		return 0
	}
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	since, ok := b.refusedSince[pod.UID]
	if !ok {
		since = now
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Time.Before(since) {
			since = c.LastTransitionTime.Time
		}
	}
	b.refusedSince[pod.UID] = since
	left := since.Add(delay).Sub(now)
	if left <= 0 {
		return 0
	}
	if b.timers[pod.UID] == nil {
		key := pod.Namespace + "/" + pod.Name
		uid := pod.UID
		b.timers[pod.UID] = b.clock.AfterFunc(left, func() {
			b.mu.Lock()
			delete(b.timers, uid)
			b.mu.Unlock()
			logger.V(4).Info("Preemption delay over: activating the pod", "pod", key)
			b.activate(logger, map[string]*v1.Pod{key: pod})
		})
	}
	return left
}

func (b *reclaimBook) start(uid types.UID, rs *reclaim.State) *preemptRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := &preemptRun{rs: rs}
	b.runs[uid] = r
	return r
}

func (b *reclaimBook) run(uid types.UID) *preemptRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runs[uid]
}

func (b *reclaimBook) done(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.runs, uid)
}
