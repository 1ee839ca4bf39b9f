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
	opts := r.opts
	opts.Reuse = podRequestLists.Get().(v1.ResourceList)
	reqs := resourcehelper.PodRequests(pod, opts)
	v, err := resources.FromResourceListWith(reqs, podsID, 1)
	podRequestLists.Put(opts.Reuse)
	if err != nil {
		return nil, fmt.Errorf("pod request: %w", err)
	}
	return v, nil
}
