package userquota

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// EventsToRegister declares what can let in a pod this plugin refused: a
// pod of this scheduler going away or finishing (the scheduler sees both
// as Pod/Delete), a running pod scaled down, or the pod's own labels
// changing (its queue). A held pod is let in by the plugin's own handler,
// which releases usage first and then activates exactly the held pods the
// room may admit (letin.go), so for a held pod every hint is QueueSkip, in
// O(1), except its own update; the hints serve the pods refused in a
// cycle without being held (those reclaim may help). Config changes come
// from the plugin's own namespaced ConfigMap informer, not from here (a
// ConfigMap event would make the scheduler watch ConfigMaps cluster-wide).
//
// It is one event, not one per action: the scheduling queue matches every
// event (a bound pod's add, each binding) against each held pod's gating
// plugin's events as it walks its unschedulable pods, so each event
// registered costs a comparison per held pod per binding (measured with
// 40,000 held pods: docs/throughput.md), where the SchedulingGates plugin
// registers one.
func (pl *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete | fwk.UpdatePodScaleDown | fwk.UpdatePodLabel}, QueueingHintFn: pl.hintPod},
	}, nil
}

// hintPod dispatches on the event: a delete has no new object.
func (pl *Plugin) hintPod(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	if newObj == nil {
		return pl.hintPodReleased(logger, pod, oldObj, nil)
	}
	return pl.hintPodUpdated(logger, pod, oldObj, newObj)
}

// hintPodReleased: a pod of ours that held a charge went away.
func (pl *Plugin) hintPodReleased(logger klog.Logger, pod *v1.Pod, oldObj, _ interface{}) (fwk.QueueingHint, error) {
	gone, ok := podFromObj(oldObj)
	if !ok || !pl.ours(gone) || gone.Spec.NodeName == "" || pl.held.get(pod.UID) != nil {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
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
	if !pl.ours(updated) || updated.Spec.NodeName == "" || pl.held.get(pod.UID) != nil {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
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
