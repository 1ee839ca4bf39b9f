package gang

import (
	"fmt"
	"time"

	schedulingv1alpha1 "k8s.io/api/scheduling/v1alpha1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/userquota/userquota/pkg/resources"
)

// WorkloadMin is the minimum of the gang id in w (the Workload id names):
// minCount members of member's request (the request of the pod being
// decided; a gang's pods share one template). ok false: the pod group's
// policy is not a gang (basic), so its pods are ordinary pods. The
// Workload API has no timeout field: DefaultTimeout, Soft.
func WorkloadMin(w *schedulingv1alpha1.Workload, id ID, member resources.Vector) (min Min, ok bool, err error) {
	what := "Workload " + w.Namespace + "/" + w.Name
	for _, pg := range w.Spec.PodGroups {
		if pg.Name != id.PodGroup {
			continue
		}
		g := pg.Policy.Gang
		if g == nil {
			return Min{}, false, nil
		}
		if g.MinCount <= 0 {
			return Min{}, false, &Error{Gang: id, What: what, Reason: fmt.Sprintf("pod group %q: gang minCount %d, want at least 1", pg.Name, g.MinCount)}
		}
		all, err := member.Times(int64(g.MinCount))
		if err != nil {
			return Min{}, false, &Error{Gang: id, What: what, Reason: fmt.Sprintf("pod group %q: %d members: %v", pg.Name, g.MinCount, err)}
		}
		return Min{Members: g.MinCount, Resources: all, Timeout: DefaultTimeout, Style: Soft}, true, nil
	}
	return Min{}, false, &Error{Gang: id, What: what, Reason: fmt.Sprintf("has no pod group %q", id.PodGroup)}
}

// PodGroupMin is the minimum of the coscheduling PodGroup pg:
// minResources for the whole group when given (pods: minMember), else
// minMember members of member's request. Its timeout is
// scheduleTimeoutSeconds, else DefaultTimeout; Soft, as coscheduling lets
// the group's pods retry after a timeout.
func PodGroupMin(pg *schedv1alpha1.PodGroup, member resources.Vector) (Min, error) {
	id := ID{Namespace: pg.Namespace, Form: FormPodGroup, Name: pg.Name}
	what := "PodGroup " + pg.Namespace + "/" + pg.Name
	n := pg.Spec.MinMember
	if n <= 0 {
		return Min{}, &Error{Gang: id, What: what, Reason: fmt.Sprintf("minMember %d, want at least 1", n)}
	}
	min := Min{Members: n, Timeout: DefaultTimeout, Style: Soft}
	if t := pg.Spec.ScheduleTimeoutSeconds; t != nil {
		if *t <= 0 {
			return Min{}, &Error{Gang: id, What: what, Reason: fmt.Sprintf("scheduleTimeoutSeconds %d, want at least 1", *t)}
		}
		min.Timeout = time.Duration(*t) * time.Second
	}
	var err error
	if len(pg.Spec.MinResources) > 0 {
		min.Resources, err = resources.FromResourceList(pg.Spec.MinResources)
		if err == nil {
			min.Resources.Set(resources.Intern(resources.Pods), int64(n))
		}
	} else {
		min.Resources, err = member.Times(int64(n))
	}
	if err != nil {
		return Min{}, &Error{Gang: id, What: what, Reason: err.Error()}
	}
	return min, nil
}
