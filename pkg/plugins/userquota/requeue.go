package userquota

import (
	"context"
	"errors"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/userquota/userquota/pkg/ugm"
)

// refusedPod is a pod this plugin turned away, with why, so that a release
// or a config change can send exactly the pods it may admit back to the
// active queue.
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

// remember records a refusal (replacing an older one for the pod).
func (pl *Plugin) remember(pod *v1.Pod, req *ugm.Request, reason error) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.refused[string(pod.UID)] = &refusedPod{pod: pod, req: req, reason: reason, at: time.Now()}
}

// forget drops a pod that was admitted or went away.
func (pl *Plugin) forget(uid string) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	delete(pl.refused, uid)
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

// activateFor moves the refused pods that the release of released may
// admit back to the active queue. Call it after the release is done.
func (pl *Plugin) activateFor(logger klog.Logger, released ugm.Request) {
	pl.frees.Add(1)
	pl.activate(logger, func(rp *refusedPod) bool { return mayAdmit(rp.reason, released) })
}

// activateAll moves every refused pod back (a new config may admit any).
func (pl *Plugin) activateAll(logger klog.Logger) {
	pl.frees.Add(1)
	pl.activate(logger, func(*refusedPod) bool { return true })
}

func (pl *Plugin) activate(logger klog.Logger, match func(*refusedPod) bool) {
	pl.mu.Lock()
	pods := map[string]*v1.Pod{}
	var recent map[string]*v1.Pod
	now := time.Now()
	for uid, rp := range pl.refused {
		if match(rp) {
			key := rp.pod.Namespace + "/" + rp.pod.Name
			pods[key] = rp.pod
			delete(pl.refused, uid)
			if now.Sub(rp.at) < inFlightWindow {
				if recent == nil {
					recent = map[string]*v1.Pod{}
				}
				recent[key] = rp.pod
			}
		}
	}
	pl.mu.Unlock()
	if len(pods) == 0 {
		return
	}
	logger.V(4).Info("Activating pods refused by quota", "count", len(pods))
	pl.handle.Activate(logger, pods)
	if recent != nil {
		time.AfterFunc(reactivateAfter, func() {
			logger.V(4).Info("Activating pods refused moments before, again", "count", len(recent))
			pl.handle.Activate(logger, recent)
		})
	}
}

// refusal returns what a refused pod was refused for, if it was.
func (pl *Plugin) refusal(uid types.UID) *refusedPod {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.refused[string(uid)]
}

// EventsToRegister declares what can admit a pod this plugin refused: a pod
// of this scheduler going away or finishing (the scheduler sees both as
// Pod/Delete), a running pod scaled down, or the refused pod's own labels
// changing (its queue). The plugin's own handler releases usage first and
// then activates the pods it may admit; these hints keep the framework's
// view consistent and skip events that cannot help. Config changes come
// from the plugin's own namespaced ConfigMap informer, not from here (a
// ConfigMap event would make the scheduler watch ConfigMaps cluster-wide).
func (pl *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: pl.hintPodReleased},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.UpdatePodScaleDown | fwk.UpdatePodLabel}, QueueingHintFn: pl.hintPodUpdated},
	}, nil
}

// hintPodReleased: a pod of ours that held a charge related to the refused
// pod's reason went away.
func (pl *Plugin) hintPodReleased(logger klog.Logger, pod *v1.Pod, oldObj, _ interface{}) (fwk.QueueingHint, error) {
	gone, ok := podFromObj(oldObj)
	if !ok || gone.Spec.SchedulerName != pl.profile || gone.Spec.NodeName == "" {
		return fwk.QueueSkip, nil
	}
	return pl.hintRelated(pod, gone), nil
}

// hintPodUpdated: the refused pod itself changed labels, or a running pod
// of ours shrank.
func (pl *Plugin) hintPodUpdated(logger klog.Logger, pod *v1.Pod, _, newObj interface{}) (fwk.QueueingHint, error) {
	updated, ok := podFromObj(newObj)
	if !ok {
		return fwk.QueueSkip, nil
	}
	if updated.UID == pod.UID {
		return fwk.Queue, nil
	}
	if updated.Spec.SchedulerName != pl.profile || updated.Spec.NodeName == "" {
		return fwk.QueueSkip, nil
	}
	return pl.hintRelated(pod, updated), nil
}

func (pl *Plugin) hintRelated(pod, other *v1.Pod) fwk.QueueingHint {
	rp := pl.refusal(pod.UID)
	if rp == nil {
		// Not refused by us (or already activated): nothing for us to say.
		return fwk.QueueSkip
	}
	req, err := pl.podRequest(other, pl.partition(), pl.queues())
	if err != nil || !mayAdmit(rp.reason, req) {
		return fwk.QueueSkip
	}
	return fwk.Queue
}

// podFromObj reads a pod from an informer object, tombstones included.
func podFromObj(obj interface{}) (*v1.Pod, bool) {
	switch o := obj.(type) {
	case *v1.Pod:
		return o, true
	case cache.DeletedFinalStateUnknown:
		p, ok := o.Obj.(*v1.Pod)
		return p, ok
	}
	return nil, false
}
