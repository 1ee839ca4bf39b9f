package userquota

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

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
	rp := pl.requeue.refusal(pod.UID)
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
