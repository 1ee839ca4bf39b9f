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

// FormOf is the form of gang pod carries, the first of spec.workloadRef,
// the coscheduling label and the YuniKorn annotations (Of reads them in
// that order); false for none. It only looks: a cheap test before Of,
// which needs the pod's application.
func FormOf(pod *v1.Pod) (Form, bool) {
	switch {
	case pod.Spec.WorkloadRef != nil:
		return FormWorkload, true
	case pod.Labels[LabelPodGroup] != "": // empty: no pod group, as coscheduling reads it
		return FormPodGroup, true
	}
	_, named := pod.Annotations[AnnotationTaskGroupName]
	_, defined := pod.Annotations[AnnotationTaskGroups]
	return FormTaskGroups, named || defined
}

// Of reads the gang pod belongs to, in the first form it carries:
// spec.workloadRef, then the coscheduling label, then the YuniKorn
// annotations. app is the pod's application ID (a YuniKorn gang is its
// application). nil, nil: not in a gang.
func Of(pod *v1.Pod, app string) (*Member, error) {
	form, ok := FormOf(pod)
	switch {
	case !ok:
		return nil, nil
	case form == FormWorkload:
		ref := pod.Spec.WorkloadRef
		return &Member{ID: ID{Namespace: pod.Namespace, Form: FormWorkload, Name: ref.Name, PodGroup: ref.PodGroup, Replica: ref.PodGroupReplicaKey}}, nil
	case form == FormPodGroup:
		return &Member{ID: ID{Namespace: pod.Namespace, Form: FormPodGroup, Name: pod.Labels[LabelPodGroup]}}, nil
	}
	return TaskGroupsMember(pod, app)
}

// ObjectApp is the application of a pod of a gang object (a PodGroup, a
// Workload's pod group and replica) when nothing else names it: the gang,
// so that its pods are one application, as the gang is. false: the pod
// names no gang object.
func ObjectApp(pod *v1.Pod) (string, bool) {
	switch form, _ := FormOf(pod); form {
	case FormWorkload:
		ref := pod.Spec.WorkloadRef
		id := string(FormWorkload) + "/" + ref.Name + "/" + ref.PodGroup
		if ref.PodGroupReplicaKey != "" {
			id += "/" + ref.PodGroupReplicaKey
		}
		return id, true
	case FormPodGroup:
		return string(FormPodGroup) + "/" + pod.Labels[LabelPodGroup], true
	}
	return "", false
}
