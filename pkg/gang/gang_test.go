package gang

import (
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1alpha1 "k8s.io/api/scheduling/v1alpha1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/userquota/userquota/pkg/resources"
)

func vec(t *testing.T, m map[string]string) resources.Vector {
	t.Helper()
	v, err := resources.Parse(m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func pod(labels, annotations map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: labels, Annotations: annotations}}
}

// sparkGroups is a Spark job's task groups as YuniKorn's docs write them:
// one driver, executors of 2 cpu each.
const sparkGroups = `[{"name":"spark-driver","minMember":1,"minResource":{"cpu":"1","memory":"2Gi"},"nodeSelector":{"zone":"a"}},
 {"name":"spark-executor","minMember":4,"minResource":{"cpu":"2","memory":"4Gi"},"tolerations":[{"key":"gpu","operator":"Exists"}]}]`

func TestOf(t *testing.T) {
	wl := pod(nil, nil)
	wl.Spec.WorkloadRef = &v1.WorkloadReference{Name: "train", PodGroup: "workers", PodGroupReplicaKey: "r0"}
	both := pod(map[string]string{LabelPodGroup: "pg"}, map[string]string{AnnotationTaskGroupName: "x"})
	both.Spec.WorkloadRef = &v1.WorkloadReference{Name: "w", PodGroup: "g"}
	tests := []struct {
		name    string
		pod     *v1.Pod
		app     string
		want    *Member
		wantErr string
		// objectApp: ObjectApp's application ("": none).
		objectApp string
	}{
		{name: "plain pod", pod: pod(nil, nil), app: "a"},
		{name: "workload", pod: wl, want: &Member{ID: ID{Namespace: "ns", Form: FormWorkload, Name: "train", PodGroup: "workers", Replica: "r0"}}, objectApp: "Workload/train/workers/r0"},
		{name: "workload first", pod: both, want: &Member{ID: ID{Namespace: "ns", Form: FormWorkload, Name: "w", PodGroup: "g"}}, objectApp: "Workload/w/g"},
		{name: "pod group", pod: pod(map[string]string{LabelPodGroup: "pg"}, nil), want: &Member{ID: ID{Namespace: "ns", Form: FormPodGroup, Name: "pg"}}, objectApp: "PodGroup/pg"},
		{name: "empty pod group label is no gang", pod: pod(map[string]string{LabelPodGroup: ""}, nil), app: "a"},
		{name: "executor names its group only", pod: pod(nil, map[string]string{AnnotationTaskGroupName: "spark-executor"}), app: "spark-1",
			want: &Member{ID: ID{Namespace: "ns", Form: FormTaskGroups, Name: "spark-1"}, TaskGroup: "spark-executor"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Of(tc.pod, tc.app)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Of = %v, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if form, ok := FormOf(tc.pod); ok != (tc.want != nil) || ok && form != tc.want.ID.Form {
				t.Errorf("FormOf = %v, %v; want %+v", form, ok, tc.want)
			}
			if (got == nil) != (tc.want == nil) || got != nil && (got.ID != tc.want.ID || got.TaskGroup != tc.want.TaskGroup || got.Min != nil) {
				t.Fatalf("Of = %+v, want %+v", got, tc.want)
			}
			if app, ok := ObjectApp(tc.pod); app != tc.objectApp || ok != (tc.objectApp != "") {
				t.Errorf("ObjectApp = %q, %v; want %q", app, ok, tc.objectApp)
			}
		})
	}
}

func TestTaskGroupsMember(t *testing.T) {
	driver := map[string]string{AnnotationTaskGroupName: "spark-driver", AnnotationTaskGroups: sparkGroups}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range driver {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name        string
		annotations map[string]string
		app         string
		want        Min
		wantErr     string // the annotation named, then the reason
	}{
		{name: "spark driver", annotations: driver, app: "spark-1",
			want: Min{Members: 5, Resources: vec(t, map[string]string{"cpu": "9", "memory": "18Gi", "pods": "5"}), Timeout: DefaultTimeout, Style: Soft}},
		{name: "hard with a timeout", annotations: with(map[string]string{AnnotationPolicyParameters: "placeholderTimeoutInSeconds=30 gangSchedulingStyle=Hard"}), app: "spark-1",
			want: Min{Members: 5, Resources: vec(t, map[string]string{"cpu": "9", "memory": "18Gi", "pods": "5"}), Timeout: 30 * time.Second, Style: Hard}},
		{name: "timeout 0 is the default, unknown keys skipped", annotations: with(map[string]string{AnnotationPolicyParameters: " placeholderTimeoutInSeconds=0  foo=bar "}), app: "a",
			want: Min{Members: 5, Resources: vec(t, map[string]string{"cpu": "9", "memory": "18Gi", "pods": "5"}), Timeout: DefaultTimeout, Style: Soft}},
		{name: "definitions without a group name", annotations: map[string]string{AnnotationTaskGroups: `[{"name":"g","minMember":2,"minResource":{"cpu":"500m"}}]`}, app: "a",
			want: Min{Members: 2, Resources: vec(t, map[string]string{"cpu": "1", "pods": "2"}), Timeout: DefaultTimeout, Style: Soft}},

		{name: "no application", annotations: driver, wantErr: AnnotationTaskGroupName + ": the pod names no application"},
		{name: "empty group name", annotations: map[string]string{AnnotationTaskGroupName: ""}, app: "a", wantErr: AnnotationTaskGroupName + ": empty"},
		{name: "group not in the list", annotations: with(map[string]string{AnnotationTaskGroupName: "spark-exec"}), app: "a", wantErr: AnnotationTaskGroupName + `: task group "spark-exec" is not in annotation`},
		{name: "malformed JSON", annotations: with(map[string]string{AnnotationTaskGroups: `[{"name":"g",`}), app: "a", wantErr: AnnotationTaskGroups + ": not a JSON list"},
		{name: "trailing data", annotations: with(map[string]string{AnnotationTaskGroups: `[] []`}), app: "a", wantErr: AnnotationTaskGroups + ": "},
		{name: "empty list", annotations: with(map[string]string{AnnotationTaskGroups: `[]`}), app: "a", wantErr: AnnotationTaskGroups + ": no task groups"},
		{name: "no name", annotations: with(map[string]string{AnnotationTaskGroups: `[{"minMember":1}]`}), app: "a", wantErr: "task group 0 has no name"},
		{name: "duplicate", annotations: with(map[string]string{AnnotationTaskGroups: `[{"name":"spark-driver","minMember":1},{"name":"spark-driver","minMember":1}]`}), app: "a", wantErr: `"spark-driver" is named twice`},
		{name: "zero members", annotations: with(map[string]string{AnnotationTaskGroups: `[{"name":"spark-driver","minMember":0}]`}), app: "a", wantErr: "minMember 0, want at least 1"},
		{name: "negative members", annotations: with(map[string]string{AnnotationTaskGroups: `[{"name":"spark-driver","minMember":-3}]`}), app: "a", wantErr: "minMember -3"},
		{name: "bad quantity", annotations: with(map[string]string{AnnotationTaskGroups: `[{"name":"spark-driver","minMember":1,"minResource":{"cpu":"lots"}}]`}), app: "a", wantErr: `task group "spark-driver": minResource: cpu: invalid quantity "lots"`},
		{name: "hostile quantity", annotations: with(map[string]string{AnnotationTaskGroups: `[{"name":"spark-driver","minMember":1,"minResource":{"cpu":"1e-1000000000"}}]`}), app: "a", wantErr: "minResource: cpu: invalid quantity"},
		{name: "overflowing minimum", annotations: with(map[string]string{AnnotationTaskGroups: `[{"name":"spark-driver","minMember":2000000000,"minResource":{"memory":"8Ei"}}]`}), app: "a", wantErr: "value out of range"},
		{name: "too many groups", annotations: with(map[string]string{AnnotationTaskGroups: "[" + strings.Repeat(`{"name":"x","minMember":1},`, 64) + `{"name":"y","minMember":1}]`}), app: "a", wantErr: "65 task groups, at most 64"},
		{name: "malformed parameter", annotations: with(map[string]string{AnnotationPolicyParameters: "placeholderTimeoutInSeconds"}), app: "a", wantErr: AnnotationPolicyParameters + `: "placeholderTimeoutInSeconds" is not key=value`},
		{name: "bad timeout", annotations: with(map[string]string{AnnotationPolicyParameters: "placeholderTimeoutInSeconds=soon"}), app: "a", wantErr: `placeholderTimeoutInSeconds="soon": want whole seconds`},
		{name: "negative timeout", annotations: with(map[string]string{AnnotationPolicyParameters: "placeholderTimeoutInSeconds=-5"}), app: "a", wantErr: `placeholderTimeoutInSeconds="-5"`},
		{name: "unknown style", annotations: with(map[string]string{AnnotationPolicyParameters: "gangSchedulingStyle=hard"}), app: "a", wantErr: `gangSchedulingStyle="hard": want Soft or Hard`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := TaskGroupsMember(pod(nil, tc.annotations), tc.app)
			if tc.wantErr != "" {
				var ge *Error
				if !errors.As(err, &ge) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("TaskGroupsMember = %+v, %v; want a gang error containing %q", m, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Min == nil || m.Min.Members != tc.want.Members || !m.Min.Resources.Equal(tc.want.Resources) || m.Min.Timeout != tc.want.Timeout || m.Min.Style != tc.want.Style {
				t.Fatalf("Min = %+v, want %+v", m.Min, tc.want)
			}
		})
	}
}

func TestWorkloadMin(t *testing.T) {
	w := &schedulingv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train"}, Spec: schedulingv1alpha1.WorkloadSpec{PodGroups: []schedulingv1alpha1.PodGroup{
		{Name: "workers", Policy: schedulingv1alpha1.PodGroupPolicy{Gang: &schedulingv1alpha1.GangSchedulingPolicy{MinCount: 8}}},
		{Name: "ps", Policy: schedulingv1alpha1.PodGroupPolicy{Basic: &schedulingv1alpha1.BasicSchedulingPolicy{}}},
		{Name: "zero", Policy: schedulingv1alpha1.PodGroupPolicy{Gang: &schedulingv1alpha1.GangSchedulingPolicy{MinCount: 0}}},
	}}}
	member := vec(t, map[string]string{"cpu": "1", "pods": "1"})
	id := func(g string) ID { return ID{Namespace: "ns", Form: FormWorkload, Name: "train", PodGroup: g} }
	min, ok, err := WorkloadMin(w, id("workers"), member)
	if err != nil || !ok || min.Members != 8 || !min.Resources.Equal(vec(t, map[string]string{"cpu": "8", "pods": "8"})) || min.Timeout != DefaultTimeout {
		t.Fatalf("workers: %+v, %v, %v", min, ok, err)
	}
	if _, ok, err := WorkloadMin(w, id("ps"), member); ok || err != nil {
		t.Fatalf("basic policy: ok %v, %v; want an ordinary pod", ok, err)
	}
	for g, want := range map[string]string{"zero": `pod group "zero": gang minCount 0`, "nope": `Workload ns/train: has no pod group "nope"`} {
		if _, _, err := WorkloadMin(w, id(g), member); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("pod group %s: %v, want %q", g, err, want)
		}
	}
}

func TestPodGroupMin(t *testing.T) {
	member := vec(t, map[string]string{"cpu": "1", "pods": "1"})
	pg := func(n int32, minRes v1.ResourceList, timeout *int32) *schedv1alpha1.PodGroup {
		return &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mpi"},
			Spec: schedv1alpha1.PodGroupSpec{MinMember: n, MinResources: minRes, ScheduleTimeoutSeconds: timeout}}
	}
	tests := []struct {
		name    string
		pg      *schedv1alpha1.PodGroup
		want    Min
		wantErr string
	}{
		{name: "members of the request", pg: pg(4, nil, nil), want: Min{Members: 4, Resources: vec(t, map[string]string{"cpu": "4", "pods": "4"}), Timeout: DefaultTimeout}},
		{name: "minResources for the whole group", pg: pg(4, v1.ResourceList{v1.ResourceCPU: resource.MustParse("10")}, ptr.To[int32](60)),
			want: Min{Members: 4, Resources: vec(t, map[string]string{"cpu": "10", "pods": "4"}), Timeout: time.Minute}},
		{name: "no members", pg: pg(0, nil, nil), wantErr: "PodGroup ns/mpi: minMember 0"},
		{name: "zero timeout", pg: pg(2, nil, ptr.To[int32](0)), wantErr: "scheduleTimeoutSeconds 0"},
		{name: "hostile minResources", pg: pg(2, v1.ResourceList{v1.ResourceMemory: *resource.NewScaledQuantity(1, 1_000_000_000)}, nil), wantErr: "value out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			min, err := PodGroupMin(tc.pg, member)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("PodGroupMin = %+v, %v; want %q", min, err, tc.wantErr)
				}
				return
			}
			if err != nil || min.Members != tc.want.Members || !min.Resources.Equal(tc.want.Resources) || min.Timeout != tc.want.Timeout || min.Style != Soft {
				t.Fatalf("PodGroupMin = %+v, %v; want %+v", min, err, tc.want)
			}
		})
	}
}

func TestIDString(t *testing.T) {
	for id, want := range map[ID]string{
		{Namespace: "ns", Form: FormWorkload, Name: "w", PodGroup: "g", Replica: "r"}: "Workload ns/w/g/r",
		{Namespace: "ns", Form: FormPodGroup, Name: "pg"}:                             "PodGroup ns/pg",
		{Namespace: "ns", Form: FormTaskGroups, Name: "spark-1"}:                      "TaskGroups ns/spark-1",
	} {
		if got := id.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", id, got, want)
		}
	}
}
