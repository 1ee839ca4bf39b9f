package userquota

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/ugm"
)

// refusedPod is a pod this plugin turned away, with why.
type refusedPod struct {
	pod    *v1.Pod
	req    *ugm.Request // nil when the pod itself was malformed
	reason error
	at     time.Time // when refused
}

// A pod refused less than inFlightWindow ago may still be in its scheduling
// cycle when room frees. The scheduling queue then only notes an Activate
// and, when the cycle ends, puts the pod in the backoff queue (1 s, doubling
// with each attempt up to podMaxBackoffSeconds, 10 s by default) instead of
// the active queue. So such a pod is activated a second time
// reactivateAfter later, when the cycle has ended: that moves it from the
// backoff queue to the active queue at once.
const (
	inFlightWindow  = time.Second
	reactivateAfter = 100 * time.Millisecond
)

// activateFunc sends pods (by namespace/name) back to the active queue:
// the framework handle's Activate.
type activateFunc func(logger klog.Logger, pods map[string]*v1.Pod)

// requeue is the book of the pods this plugin refused, so that a release
// or a config change sends exactly the pods it may admit back to the
// active queue. Its lock guards the book alone: it is never held while
// calling the framework.
type requeue struct {
	clock    clock.WithDelayedExecution
	activate activateFunc

	// frees counts releases, config changes and share changes. A decision
	// reads it before deciding: if it moved by the time a refusal is
	// recorded, the activation that followed the free may have run before
	// the pod was recorded, so the refusal activates the pod itself.
	frees atomic.Uint64

	mu      sync.Mutex
	refused map[string]*refusedPod // by pod UID
}

func newRequeue(c clock.WithDelayedExecution, activate activateFunc) *requeue {
	return &requeue{clock: c, activate: activate, refused: map[string]*refusedPod{}}
}

// freed returns the free counter, to compare after a decision.
func (r *requeue) freed() uint64 { return r.frees.Load() }

// refuse records a refusal (replacing an older one for the pod). frees is
// the counter read before the decision: when room was freed since, the pod
// is activated at once.
func (r *requeue) refuse(logger klog.Logger, pod *v1.Pod, req *ugm.Request, reason error, frees uint64) {
	r.mu.Lock()
	r.refused[string(pod.UID)] = &refusedPod{pod: pod, req: req, reason: reason, at: r.clock.Now()}
	r.mu.Unlock()
	if r.frees.Load() != frees {
		r.activateMatching(logger, func(rp *refusedPod) bool { return rp.pod.UID == pod.UID })
	}
}

// forget drops a pod that was admitted or went away.
func (r *requeue) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.refused, string(uid))
}

// refusal returns what a refused pod was refused for, if it was.
func (r *requeue) refusal(uid types.UID) *refusedPod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused[string(uid)]
}

// mayAdmit reports whether releasing released can make room for a pod
// refused for reason: same user, a group of the releasing user, a queue in
// whose subtree the release happened, or the application that blocked it.
func mayAdmit(reason error, released ugm.Request) bool {
	var r *ugm.Refusal
	var conflict *ugm.AppConflict
	switch {
	case errors.As(reason, &r):
		switch r.Who {
		case ugm.WhoUser:
			return released.User == r.Name
		case ugm.WhoGroup:
			if r.Name == "*" {
				return len(released.Groups) > 0
			}
			for _, g := range released.Groups {
				if g == r.Name {
					return true
				}
			}
			return false
		default:
			return released.Queue == r.Queue || strings.HasPrefix(released.Queue, r.Queue+".")
		}
	case errors.As(reason, &conflict):
		return released.App == conflict.App
	}
	// Unknown queues and malformed pods wait for a config change or an
	// update of the pod itself.
	return false
}

// released activates the refused pods that the release of released may
// admit. Call it after the release is done.
func (r *requeue) released(logger klog.Logger, released ugm.Request) {
	r.frees.Add(1)
	r.activateMatching(logger, func(rp *refusedPod) bool { return mayAdmit(rp.reason, released) })
}

// configChanged activates every refused pod: a new config may admit any.
func (r *requeue) configChanged(logger klog.Logger) {
	r.frees.Add(1)
	r.activateMatching(logger, func(*refusedPod) bool { return true })
}

// sharesChanged activates the pods refused by a runtime share.
func (r *requeue) sharesChanged(logger klog.Logger) {
	r.frees.Add(1)
	r.activateMatching(logger, func(rp *refusedPod) bool {
		var ref *ugm.Refusal
		return errors.As(rp.reason, &ref) && ref.Limit == ugm.LimitShare
	})
}

// activateMatching takes the refused pods match selects out of the book
// and activates them; those refused moments ago are activated again once
// their cycle is surely over.
func (r *requeue) activateMatching(logger klog.Logger, match func(*refusedPod) bool) {
	r.mu.Lock()
	pods := map[string]*v1.Pod{}
	var recent map[string]*v1.Pod
	now := r.clock.Now()
	for uid, rp := range r.refused {
		if match(rp) {
			key := rp.pod.Namespace + "/" + rp.pod.Name
			pods[key] = rp.pod
			delete(r.refused, uid)
			if now.Sub(rp.at) < inFlightWindow {
				if recent == nil {
					recent = map[string]*v1.Pod{}
				}
				recent[key] = rp.pod
			}
		}
	}
	r.mu.Unlock()
	if len(pods) == 0 {
		return
	}
	logger.V(4).Info("Activating pods refused by quota", "count", len(pods))
	r.activate(logger, pods)
	if recent != nil {
		r.clock.AfterFunc(reactivateAfter, func() {
			logger.V(4).Info("Activating pods refused moments before, again", "count", len(recent))
			r.activate(logger, recent)
		})
	}
}
