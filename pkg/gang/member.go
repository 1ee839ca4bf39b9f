package gang

import (
	v1 "k8s.io/api/core/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// LabelPodGroup is scheduler-plugins coscheduling's label: the pod's
// PodGroup in its namespace.
const LabelPodGroup = schedv1alpha1.PodGroupLabel

// Member is what a pod says of its gang.
type Member struct {
	ID ID
	// TaskGroup is the pod's YuniKorn task group ("" in other forms).
	TaskGroup string
	// Min is the gang's minimum when the pod itself defines it (YuniKorn
	// task groups written on it); nil when it comes from the gang's object
	// (WorkloadMin, PodGroupMin) or from another pod of the application.
	Min *Min
}

// Marked reports whether pod carries any form of gang: a cheap test
// before Of, which needs the pod's application.
func Marked(pod *v1.Pod) bool {
	if pod.Spec.WorkloadRef != nil || pod.Labels[LabelPodGroup] != "" {
		return true
	}
	_, named := pod.Annotations[AnnotationTaskGroupName]
	_, defined := pod.Annotations[AnnotationTaskGroups]
	return named || defined
}

// Of reads the gang pod belongs to, in the first form it carries:
// spec.workloadRef, then the coscheduling label, then the YuniKorn
// annotations. app is the pod's application ID (a YuniKorn gang is its
// application). nil, nil: not in a gang.
func Of(pod *v1.Pod, app string) (*Member, error) {
	if ref := pod.Spec.WorkloadRef; ref != nil {
		return &Member{ID: ID{Namespace: pod.Namespace, Form: FormWorkload, Name: ref.Name, PodGroup: ref.PodGroup, Replica: ref.PodGroupReplicaKey}}, nil
	}
	// An empty label is no pod group, as coscheduling reads it.
	if name := pod.Labels[LabelPodGroup]; name != "" {
		return &Member{ID: ID{Namespace: pod.Namespace, Form: FormPodGroup, Name: name}}, nil
	}
	return TaskGroupsMember(pod, app)
}
