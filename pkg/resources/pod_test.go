package resources

import (
	"errors"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/userquota/userquota/pkg/resources/resourcestest"
)

// TestParseQuantityHostile: every hostile string is refused or read in
// bounded time and memory (resources.ParseQuantity guards apimachinery's
// parser, which takes minutes over "1e-2000000000"), and an error names
// the resource and the quantity as written.
func TestParseQuantityHostile(t *testing.T) {
	for _, s := range resourcestest.Hostile {
		for _, name := range []string{"memory", "cpu"} {
			t.Run(name+"="+s, func(t *testing.T) {
				var err error
				resourcestest.Within(t, resourcestest.Default, "ParseQuantity", func() { _, err = ParseQuantity(name, s) })
				if err != nil && !strings.HasPrefix(err.Error(), name+": ") {
					t.Errorf("error %q does not start with the resource name", err)
				}
				if err != nil && !strings.Contains(err.Error(), s[:min(len(s), maxQuantityLen)]) {
					t.Errorf("error %q does not quote the quantity", err)
				}
			})
		}
	}
}

// hostileQ is a Quantity as a decoded pod carries it, built without the
// parser (which takes minutes over the negative exponents).
func hostileQ(v int64, scale int32) resource.Quantity {
	return *resource.NewScaledQuantity(v, resource.Scale(scale))
}

func TestCheckPodRequests(t *testing.T) {
	huge := hostileQ(1, 2_000_000_000)
	gi := resource.MustParse("1Gi")
	container := func(name string, rl corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: rl}}
	}
	tests := []struct {
		name    string
		pod     corev1.Pod
		wantErr string // "" for none
	}{
		{name: "usual", pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			container("a", corev1.ResourceList{"cpu": resource.MustParse("100m"), "memory": gi, "nvidia.com/gpu": resource.MustParse("1")}),
			container("b", corev1.ResourceList{"cpu": resource.MustParse("1.5"), "memory": resource.MustParse("1n"), "ephemeral-storage": resource.MustParse("0")}),
		}}}},
		{name: "largest in range", pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			container("a", corev1.ResourceList{"memory": *resource.NewQuantity(math.MaxInt64, resource.DecimalSI), "cpu": *resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)}),
		}}}},
		{name: "huge memory in a container", pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			container("a", corev1.ResourceList{"memory": gi}), container("b", corev1.ResourceList{"memory": huge}),
		}}}, wantErr: `container "b": memory: quantity of about 1e2000000000: value out of range`},
		{name: "huge cpu in an init container", pod: corev1.Pod{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{container("init", corev1.ResourceList{"cpu": hostileQ(10, 15)})},
		}}, wantErr: `init container "init": cpu: quantity "10P": value out of range`},
		{name: "huge overhead", pod: corev1.Pod{Spec: corev1.PodSpec{Overhead: corev1.ResourceList{"memory": huge}}}, wantErr: `overhead: memory: quantity`},
		{name: "huge pod-level request", pod: corev1.Pod{Spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{"memory": huge}}}}, wantErr: `pod-level resources: memory`},
		{name: "huge resize status", pod: corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "a", Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{"memory": huge}}},
		}}}, wantErr: `status of container "a": memory`},
		{name: "huge allocated", pod: corev1.Pod{Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{
			{Name: "s", AllocatedResources: corev1.ResourceList{"memory": huge}},
		}}}, wantErr: `status of container "s" (allocated): memory`},
		{name: "huge pod allocated", pod: corev1.Pod{Status: corev1.PodStatus{AllocatedResources: corev1.ResourceList{"cpu": huge}}}, wantErr: `status.allocatedResources: cpu`},
		{name: "negative", pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			container("a", corev1.ResourceList{"memory": resource.MustParse("-1")}),
		}}}, wantErr: `container "a": memory: quantity "-1": negative value`},
		{name: "tiny with a huge negative exponent", pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			container("a", corev1.ResourceList{"memory": hostileQ(1, -2_000_000_000)}),
		}}}, wantErr: `container "a": memory: quantity of about 1e-2000000000: below 1n`},
		{name: "zero with a huge exponent", pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			container("a", corev1.ResourceList{"memory": hostileQ(0, 2_000_000_000)}),
		}}}, wantErr: `container "a": memory: quantity "0": zero with a decimal exponent beyond ±99`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			resourcestest.Within(t, resourcestest.Default, "CheckPodRequests", func() { err = CheckPodRequests(&tc.pod) })
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("CheckPodRequests: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("CheckPodRequests error = %v, want one containing %q", err, tc.wantErr)
			case tc.wantErr != "" && !errors.Is(err, ErrOverflow) && !errors.Is(err, ErrNegative):
				t.Fatalf("CheckPodRequests error = %v, want ErrOverflow or ErrNegative", err)
			}
		})
	}
}

// The check is on the scheduling path of every pod: it allocates nothing
// for usual quantities.
func TestCheckPodRequestsAllocs(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("250m")}}}},
		Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			"cpu": resource.MustParse("1500m"), "memory": resource.MustParse("4Gi"), "nvidia.com/gpu": resource.MustParse("1"),
		}}}},
		Overhead: corev1.ResourceList{"memory": resource.MustParse("128M")},
	}}
	if n := testing.AllocsPerRun(100, func() {
		if err := CheckPodRequests(pod); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("CheckPodRequests allocates %v times per pod, want 0", n)
	}
}
