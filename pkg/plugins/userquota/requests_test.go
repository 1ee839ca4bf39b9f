package userquota

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/resources/resourcestest"
)

// testRequests reads requests under the feature gates of the test binary,
// as New does.
var testRequests = newPodRequests(feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))

func TestPodResources(t *testing.T) {
	const gi = 1 << 30
	tests := []struct {
		name string
		pod  *v1.Pod
		want map[string]int64
	}{
		{name: "no requests: one pod", pod: podOf("p").Container("img").Obj(), want: map[string]int64{"pods": 1}},
		{
			name: "one container",
			pod:  podOf("p").Req(map[v1.ResourceName]string{"cpu": "500m", "memory": "1Gi"}).Obj(),
			want: map[string]int64{"cpu": 500, "memory": gi, "pods": 1},
		},
		{
			name: "containers are summed",
			pod:  podOf("p").Req(cpu("1")).Req(map[v1.ResourceName]string{"cpu": "2", "memory": "1Gi"}).Obj(),
			want: map[string]int64{"cpu": 3000, "memory": gi, "pods": 1},
		},
		{
			name: "init container smaller than the sum: the sum",
			pod:  podOf("p").InitReq(cpu("2")).Req(cpu("1")).Req(cpu("2")).Obj(),
			want: map[string]int64{"cpu": 3000, "pods": 1},
		},
		{
			name: "init container larger than the sum: the init container",
			pod:  podOf("p").InitReq(map[v1.ResourceName]string{"cpu": "4", "memory": "512Mi"}).Req(map[v1.ResourceName]string{"cpu": "1", "memory": "1Gi"}).Req(cpu("2")).Obj(),
			want: map[string]int64{"cpu": 4000, "memory": gi, "pods": 1},
		},
		{
			name: "overhead is added",
			pod:  podOf("p").Req(map[v1.ResourceName]string{"cpu": "1", "memory": "1Gi"}).Overhead(rl("cpu", "250m", "memory", "128Mi")).Obj(),
			want: map[string]int64{"cpu": 1250, "memory": gi + 128<<20, "pods": 1},
		},
		{
			name: "overhead is added to the init container maximum",
			pod:  podOf("p").InitReq(cpu("3")).Req(cpu("1")).Overhead(rl("cpu", "100m")).Obj(),
			want: map[string]int64{"cpu": 3100, "pods": 1},
		},
		{
			name: "extended resources count",
			pod:  podOf("p").Req(map[v1.ResourceName]string{"cpu": "1", "nvidia.com/gpu": "2"}).Obj(),
			want: map[string]int64{"cpu": 1000, "nvidia.com/gpu": 2, "pods": 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := testRequests.of(tc.pod)
			if err != nil {
				t.Fatalf("podRequests.of: %v", err)
			}
			if diff := cmp.Diff(tc.want, v.Map()); diff != "" {
				t.Errorf("request (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestPodResourcesHostile: a pod whose requests kube-scheduler's sum
// (PodRequests) would add or compare across a hostile exponent is refused
// in bounded time and memory, naming the pod, the container and the
// resource. Before the check, "1e2000000000" beside "1Gi" built a number
// of two billion digits (Quantity.Add and Cmp line the scales up digit by
// digit): minutes and gigabytes, on the path of every event of the pod,
// and of every running pod of another scheduler (capacity.go).
func TestPodResourcesHostile(t *testing.T) {
	// As the API server may hand them over: 1e2000000000 decodes to its
	// mantissa and exponent in microseconds; the tiny and zero forms
	// only come from Go code (the API server rounds up to 1n and writes
	// zero as "0").
	huge := *resource.NewScaledQuantity(1, 2_000_000_000)
	// What the pinned API server's own validation (a Cmp with zero)
	// finishes in about a second and may store: today's sum of it with
	// 1Gi takes longer still, and allocates about 30 MB.
	large := resource.MustParse("1e10000000")
	tiny := *resource.NewScaledQuantity(1, -2_000_000_000)
	zero := *resource.NewScaledQuantity(0, 2_000_000_000)
	set := func(pod *v1.Pod, set func(*v1.Pod)) *v1.Pod { set(pod); return pod }
	gi := resource.MustParse("1Gi")
	tests := []struct {
		name    string
		pod     *v1.Pod
		wantErr string
	}{
		{
			name:    "two containers, one of 1e2000000000 memory",
			pod:     set(podOf("p").Req(map[v1.ResourceName]string{"memory": "1Gi"}).Req(map[v1.ResourceName]string{"memory": "1"}).Obj(), func(p *v1.Pod) { p.Spec.Containers[1].Resources.Requests["memory"] = huge }),
			wantErr: `pod ns1/p request: container "con1": memory: quantity of about 1e2000000000: value out of range`,
		},
		{
			name:    "two containers, one of 1e10000000 memory",
			pod:     set(podOf("p").Req(map[v1.ResourceName]string{"memory": "1Gi"}).Req(map[v1.ResourceName]string{"memory": "1"}).Obj(), func(p *v1.Pod) { p.Spec.Containers[1].Resources.Requests["memory"] = large }),
			wantErr: `pod ns1/p request: container "con1": memory: quantity of about 1e10000000: value out of range`,
		},
		{
			name:    "cpu beside an init container",
			pod:     set(podOf("p").InitReq(cpu("1")).Req(cpu("1")).Obj(), func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests["cpu"] = huge }),
			wantErr: `container "con0": cpu: quantity of about 1e2000000000`,
		},
		{
			name:    "overhead",
			pod:     podOf("p").Req(map[v1.ResourceName]string{"memory": "1Gi"}).Overhead(v1.ResourceList{"memory": huge}).Obj(),
			wantErr: `overhead: memory`,
		},
		{
			name: "resize status beside the spec",
			pod: set(podOf("p").Req(map[v1.ResourceName]string{"memory": "1Gi"}).Obj(), func(p *v1.Pod) {
				p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "con0", Resources: &v1.ResourceRequirements{Requests: v1.ResourceList{"memory": huge}}, AllocatedResources: v1.ResourceList{"memory": gi}}}
			}),
			wantErr: `status of container "con0": memory`,
		},
		{
			name:    "tiny beside 1Gi",
			pod:     set(podOf("p").Req(map[v1.ResourceName]string{"memory": "1Gi"}).Req(map[v1.ResourceName]string{"memory": "1"}).Obj(), func(p *v1.Pod) { p.Spec.Containers[1].Resources.Requests["memory"] = tiny }),
			wantErr: `container "con1": memory: quantity of about 1e-2000000000: below 1n`,
		},
		{
			name:    "zero at a huge scale beside an init container",
			pod:     set(podOf("p").InitReq(map[v1.ResourceName]string{"memory": "1Gi"}).Req(map[v1.ResourceName]string{"memory": "1"}).Obj(), func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests["memory"] = zero }),
			wantErr: `container "con0": memory: quantity "0": zero with a decimal exponent`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			resourcestest.Within(t, resourcestest.Default, "podRequests.of", func() { _, err = testRequests.of(tc.pod) })
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("podRequests.of error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestPodResourcesAlone: a pod's resources read through the one-container
// shortcut (podRequests.alone) are what kube-scheduler's PodRequests sums,
// under every feature gate the request reading follows (the other cases
// set, larger than the container's request, what PodRequests may read
// besides it), and the shortcut is taken for a plain one-container pod.
func TestPodResourcesAlone(t *testing.T) {
	set := func(pod *v1.Pod, set func(*v1.Pod)) *v1.Pod { set(pod); return pod }
	plain := func() *v1.Pod {
		return podOf("p").Req(map[v1.ResourceName]string{"cpu": "500m", "memory": "1Gi"}).Obj()
	}
	// Status amounts larger than the spec: where PodRequests reads them,
	// the sum is larger than the container's request.
	larger := rl("cpu", "2", "memory", "2Gi")
	tests := []struct {
		name  string
		pod   *v1.Pod
		alone bool // the shortcut is taken under every gate
	}{
		{name: "one container", pod: plain(), alone: true},
		{name: "one container, a status without resources", pod: set(plain(), func(p *v1.Pod) {
			p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "con0", AllocatedResources: larger}}
			p.Status.AllocatedResources = larger
		}), alone: true},
		{name: "one container, no requests", pod: podOf("p").Container("img").Obj(), alone: true},
		{name: "a resize status", pod: set(plain(), func(p *v1.Pod) {
			p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "con0", Resources: &v1.ResourceRequirements{Requests: larger}, AllocatedResources: larger}}
		})},
		{name: "an init container's resize status", pod: set(plain(), func(p *v1.Pod) {
			p.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "con0", Resources: &v1.ResourceRequirements{Requests: larger}, AllocatedResources: larger}}
		})},
		{name: "pod-level requests", pod: set(plain(), func(p *v1.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Requests: larger}
		})},
		{name: "pod-level requests and status", pod: set(plain(), func(p *v1.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi")}
			p.Status.Resources = &v1.ResourceRequirements{Requests: larger}
			p.Status.AllocatedResources = larger
		})},
		{name: "overhead", pod: set(plain(), func(p *v1.Pod) { p.Spec.Overhead = rl("cpu", "100m") })},
		{name: "an init container", pod: podOf("p").InitReq(cpu("3")).Req(cpu("1")).Obj()},
		{name: "two containers", pod: podOf("p").Req(cpu("1")).Req(cpu("2")).Obj()},
	}
	for _, tc := range tests {
		for gates := range 8 {
			r := newPodRequests(feature.Features{
				EnableInPlacePodVerticalScaling:               gates&1 != 0,
				EnableInPlacePodLevelResourcesVerticalScaling: gates&2 != 0,
				EnablePodLevelResources:                       gates&4 != 0,
			})
			t.Run(fmt.Sprintf("%s/gates=%03b", tc.name, gates), func(t *testing.T) {
				got, err := r.of(tc.pod)
				if err != nil {
					t.Fatal(err)
				}
				want, err := resources.FromResourceListWith(resourcehelper.PodRequests(tc.pod, r.opts), podsID, 1)
				if err != nil {
					t.Fatal(err)
				}
				if !got.Equal(want) {
					t.Errorf("resources %v, PodRequests sums %v", got.Map(), want.Map())
				}
				if _, alone := r.alone(tc.pod); tc.alone && !alone {
					t.Error("not read through the one-container shortcut")
				}
			})
		}
	}
}
