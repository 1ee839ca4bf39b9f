package userquota

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	"github.com/userquota/userquota/pkg/resources"
)

// podRequests sums a pod's requests as kube-scheduler does (the larger of
// init and regular containers, plus overhead, honouring pod-level
// resources and in-place resize), under the feature gates read once when
// the plugin is made, as the in-tree plugins keep feature.Features: a
// gate's Enabled resolves its spec at the emulation version, and three of
// them cost about 2 µs of each pod's admission and bind update, cold
// (BenchmarkPodPath).
type podRequests struct {
	opts resourcehelper.PodResourcesOptions
}

func newPodRequests(fts feature.Features) podRequests {
	return podRequests{opts: resourcehelper.PodResourcesOptions{
		UseStatusResources: fts.EnableInPlacePodVerticalScaling,
		InPlacePodLevelResourcesVerticalScalingEnabled: fts.EnableInPlacePodLevelResourcesVerticalScaling,
		SkipPodLevelResources:                          !fts.EnablePodLevelResources,
	}}
}

// podRequestLists are maps for PodRequests to sum a pod's requests in
// (its Reuse option), cleared and refilled: a new one, grown entry by
// entry, was two or three allocations per pod.
var podRequestLists = sync.Pool{New: func() any { return v1.ResourceList{} }}

// podsID is the pods resource, which every pod's charge counts one of.
var podsID = resources.Intern(resources.Pods)

// of is the pod's request, plus one pod.
func (r podRequests) of(pod *v1.Pod) (resources.Vector, error) {
	// PodRequests adds and compares quantities as decimals: a hostile
	// exponent ("1e2000000000" beside "1Gi") would build a number of that
	// many digits. Every quantity it reads is checked first.
	if err := resources.CheckPodRequests(pod); err != nil {
		return nil, fmt.Errorf("pod %s/%s request: %w", pod.Namespace, pod.Name, err)
	}
	var v resources.Vector
	var err error
	if reqs, ok := r.alone(pod); ok {
		v, err = resources.FromResourceListWith(reqs, podsID, 1)
	} else {
		opts := r.opts
		opts.Reuse = podRequestLists.Get().(v1.ResourceList)
		v, err = resources.FromResourceListWith(resourcehelper.PodRequests(pod, opts), podsID, 1)
		podRequestLists.Put(opts.Reuse)
	}
	if err != nil {
		return nil, fmt.Errorf("pod request: %w", err)
	}
	return v, nil
}

// alone is the requests of a pod whose request is its one container's:
// no init container, overhead or pod-level requests, and no status
// resources for the options to read. PodRequests would copy that list
// quantity by quantity into a map of its own, and read the statuses into
// another; the pod's resources are the list's, as TestPodResourcesAlone
// checks against PodRequests.
func (r podRequests) alone(pod *v1.Pod) (v1.ResourceList, bool) {
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.InitContainers) != 0 || len(pod.Spec.Overhead) != 0 {
		return nil, false
	}
	if !r.opts.SkipPodLevelResources && resourcehelper.IsPodLevelRequestsSet(pod) {
		return nil, false
	}
	if r.opts.UseStatusResources {
		for _, statuses := range [2][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
			for i := range statuses {
				if statuses[i].Resources != nil {
					return nil, false
				}
			}
		}
	}
	return pod.Spec.Containers[0].Resources.Requests, true
}
