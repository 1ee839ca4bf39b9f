package resources

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// SameRequestInputs reports whether a and b agree on everything
// kube-scheduler's request computation (PodRequests) may read, under any
// of its options: the quantities CheckPodRequests checks, the containers'
// names (a status is matched to its container by name), the init
// containers' restart policies (a sidecar's request is summed, another
// init container's is a maximum), whether a container status carries
// resources (the pod's own, or a container's), and the resize-infeasible
// condition. When it does, the two
// pods' requests are the same, and an update from a to b need not sum
// them again.
//
// It runs in bounded time and allocates nothing: a quantity that
// CheckPodRequests would refuse counts as a change, so Quantity.Cmp only
// compares quantities it passes. Keep the fields it reads the ones
// CheckPodRequests checks.
func SameRequestInputs(a, b *corev1.Pod) bool {
	return sameContainers(a.Spec.InitContainers, b.Spec.InitContainers) &&
		sameContainers(a.Spec.Containers, b.Spec.Containers) &&
		sameList(podLevelRequests(&a.Spec), podLevelRequests(&b.Spec)) &&
		sameList(a.Spec.Overhead, b.Spec.Overhead) &&
		(a.Status.Resources == nil) == (b.Status.Resources == nil) &&
		sameList(statusRequests(&a.Status), statusRequests(&b.Status)) &&
		sameList(a.Status.AllocatedResources, b.Status.AllocatedResources) &&
		sameStatuses(a.Status.InitContainerStatuses, b.Status.InitContainerStatuses) &&
		sameStatuses(a.Status.ContainerStatuses, b.Status.ContainerStatuses) &&
		resourcehelper.IsPodResizeInfeasible(a) == resourcehelper.IsPodResizeInfeasible(b)
}

func sameContainers(a, b []corev1.Container) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !sameRestartPolicy(a[i].RestartPolicy, b[i].RestartPolicy) ||
			!sameList(a[i].Resources.Requests, b[i].Resources.Requests) {
			return false
		}
	}
	return true
}

func sameRestartPolicy(a, b *corev1.ContainerRestartPolicy) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func sameStatuses(a, b []corev1.ContainerStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || (a[i].Resources == nil) != (b[i].Resources == nil) ||
			a[i].Resources != nil && !sameList(a[i].Resources.Requests, b[i].Resources.Requests) ||
			!sameList(a[i].AllocatedResources, b[i].AllocatedResources) {
			return false
		}
	}
	return true
}

// podLevelRequests is the pod-level requests (nil: none).
func podLevelRequests(s *corev1.PodSpec) corev1.ResourceList {
	if s.Resources == nil {
		return nil
	}
	return s.Resources.Requests
}

// statusRequests is the pod-level requests the status reports (nil: none).
func statusRequests(s *corev1.PodStatus) corev1.ResourceList {
	if s.Resources == nil {
		return nil
	}
	return s.Resources.Requests
}

// sameList reports whether a and b name the same resources in the same
// amounts, each amount one CheckPodRequests passes.
func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || !sameQuantity(string(name), &qa, &qb) {
			return false
		}
	}
	return true
}

func sameQuantity(name string, a, b *resource.Quantity) bool {
	return checkQuantity(name, a) == nil && checkQuantity(name, b) == nil && a.Cmp(*b) == 0
}
