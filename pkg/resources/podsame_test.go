package resources

import (
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/userquota/userquota/pkg/resources/resourcestest"
)

// samePodBase is a pod with every input of PodRequests set: an init
// container, a sidecar, two containers, pod-level requests, overhead,
// and resize statuses.
func samePodBase() *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	return &corev1.Pod{
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "init", Resources: corev1.ResourceRequirements{Requests: rl("2", "1Gi")}},
				{Name: "sidecar", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl("100m", "64Mi")}},
			},
			Containers: []corev1.Container{
				{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("1", "512Mi")}},
				{Name: "b", Resources: corev1.ResourceRequirements{Requests: rl("500m", "256Mi")}},
			},
			Resources: &corev1.ResourceRequirements{Requests: rl("4", "4Gi")},
			Overhead:  rl("250m", "128Mi"),
		},
		Status: corev1.PodStatus{
			Resources:          &corev1.ResourceRequirements{Requests: rl("4", "4Gi")},
			AllocatedResources: rl("4", "4Gi"),
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "a", Resources: &corev1.ResourceRequirements{Requests: rl("1", "512Mi")}, AllocatedResources: rl("1", "512Mi")},
				{Name: "b", Resources: &corev1.ResourceRequirements{Requests: rl("500m", "256Mi")}, AllocatedResources: rl("500m", "256Mi")},
			},
			InitContainerStatuses: []corev1.ContainerStatus{
				{Name: "sidecar", Resources: &corev1.ResourceRequirements{Requests: rl("100m", "64Mi")}, AllocatedResources: rl("100m", "64Mi")},
			},
		},
	}
}

// TestSameRequestInputs: an update that changes any input of the request
// computation is a change, one that changes only other fields is not,
// and a hostile quantity counts as a change in bounded time.
func TestSameRequestInputs(t *testing.T) {
	never := corev1.ContainerRestartPolicyNever
	huge := hostileQ(1, 2_000_000_000)
	tests := []struct {
		name   string
		change func(p *corev1.Pod)
		same   bool
	}{
		{name: "a copy", change: func(*corev1.Pod) {}, same: true},
		{name: "the same amount written otherwise", change: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000m")
		}, same: true},
		{name: "other fields", change: func(p *corev1.Pod) {
			p.Spec.NodeName = "node-1"
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
			p.Status.ContainerStatuses[0].Ready = true
		}, same: true},
		{name: "a container's request", change: func(p *corev1.Pod) {
			p.Spec.Containers[1].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("600m")
		}},
		{name: "a container's resource added", change: func(p *corev1.Pod) {
			p.Spec.Containers[1].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
		}},
		{name: "a container's resource removed", change: func(p *corev1.Pod) {
			delete(p.Spec.Containers[1].Resources.Requests, corev1.ResourceMemory)
		}},
		{name: "a container renamed", change: func(p *corev1.Pod) { p.Spec.Containers[1].Name = "c" }},
		{name: "a container added", change: func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c"})
		}},
		{name: "an init container's request", change: func(p *corev1.Pod) {
			p.Spec.InitContainers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("2Gi")
		}},
		{name: "a sidecar's restart policy", change: func(p *corev1.Pod) { p.Spec.InitContainers[1].RestartPolicy = &never }},
		{name: "a sidecar's restart policy dropped", change: func(p *corev1.Pod) { p.Spec.InitContainers[1].RestartPolicy = nil }},
		{name: "pod-level requests", change: func(p *corev1.Pod) {
			p.Spec.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("5")
		}},
		{name: "pod-level requests dropped", change: func(p *corev1.Pod) { p.Spec.Resources = nil }},
		{name: "overhead", change: func(p *corev1.Pod) { p.Spec.Overhead = nil }},
		{name: "pod-level status", change: func(p *corev1.Pod) {
			p.Status.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
		}},
		{name: "pod-level status dropped", change: func(p *corev1.Pod) { p.Status.Resources = nil }},
		{name: "pod-level allocated", change: func(p *corev1.Pod) {
			p.Status.AllocatedResources[corev1.ResourceMemory] = resource.MustParse("3Gi")
		}},
		{name: "a container's actual resources", change: func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		}},
		{name: "a container's resources not reported", change: func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Resources = nil }},
		{name: "a container's allocated resources", change: func(p *corev1.Pod) {
			p.Status.ContainerStatuses[1].AllocatedResources[corev1.ResourceCPU] = resource.MustParse("1")
		}},
		{name: "a sidecar's status", change: func(p *corev1.Pod) {
			p.Status.InitContainerStatuses[0].AllocatedResources[corev1.ResourceCPU] = resource.MustParse("1")
		}},
		{name: "a status for another container", change: func(p *corev1.Pod) { p.Status.ContainerStatuses[1].Name = "c" }},
		{name: "a resize found infeasible", change: func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible})
		}},
		{name: "a hostile quantity", change: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = huge
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := samePodBase()
			b := a.DeepCopy()
			tc.change(b)
			var got, back bool
			resourcestest.Within(t, resourcestest.Default, "SameRequestInputs", func() {
				got, back = SameRequestInputs(a, b), SameRequestInputs(b, a)
			})
			if got != tc.same || back != tc.same {
				t.Errorf("SameRequestInputs = %v, from b to a %v; want %v", got, back, tc.same)
			}
		})
	}
	// The same hostile quantity on both sides is a change too: it is not
	// compared.
	a := samePodBase()
	a.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = huge
	if SameRequestInputs(a, a.DeepCopy()) {
		t.Error("a hostile quantity on both sides counted as unchanged")
	}
}

// TestSameRequestInputsAgrees: over random pods and random changes, two
// pods SameRequestInputs calls the same have the same request under every
// option the scheduler may set, and a change it is told apart from is one
// of PodRequests' inputs (the property TestSameRequestInputs' table shows
// case by case).
func TestSameRequestInputsAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var same, changed int
	for range 20000 {
		a := randomRequestPod(rng)
		b := a.DeepCopy()
		for range rng.IntN(3) {
			mutateRequestPod(rng, b)
		}
		if !SameRequestInputs(a, b) {
			changed++
			continue
		}
		same++
		for _, opts := range requestOptions() {
			ra, rb := resourcehelper.PodRequests(a, opts), resourcehelper.PodRequests(b, opts)
			if !sameList(ra, rb) {
				t.Fatalf("pods called the same differ under %+v: %v against %v\n%+v\n%+v", opts, ra, rb, a, b)
			}
		}
	}
	if same < 1000 || changed < 1000 {
		t.Fatalf("%d pairs the same, %d changed: the generator does not exercise both", same, changed)
	}
}

// requestOptions are the option sets the plugin's feature gates may give.
func requestOptions() []resourcehelper.PodResourcesOptions {
	var all []resourcehelper.PodResourcesOptions
	for i := range 8 {
		all = append(all, resourcehelper.PodResourcesOptions{
			UseStatusResources: i&1 != 0,
			InPlacePodLevelResourcesVerticalScalingEnabled: i&2 != 0,
			SkipPodLevelResources:                          i&4 != 0,
		})
	}
	return all
}

var randomAmounts = []string{"0", "100m", "250m", "1", "2", "64Mi", "1Gi"}

func randomList(rng *rand.Rand) corev1.ResourceList {
	if rng.IntN(4) == 0 {
		return nil
	}
	rl := corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if rng.IntN(3) != 0 {
			rl[name] = resource.MustParse(randomAmounts[rng.IntN(len(randomAmounts))])
		}
	}
	return rl
}

var containerNames = []string{"a", "b", "c"}

// randomRequestPod is a pod with a random choice of PodRequests' inputs.
func randomRequestPod(rng *rand.Rand) *corev1.Pod {
	p := &corev1.Pod{}
	for i := range rng.IntN(3) {
		c := corev1.Container{Name: "init-" + containerNames[i], Resources: corev1.ResourceRequirements{Requests: randomList(rng)}}
		if rng.IntN(2) == 0 {
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
	for i := range 1 + rng.IntN(2) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: containerNames[i], Resources: corev1.ResourceRequirements{Requests: randomList(rng)}})
	}
	if rng.IntN(3) == 0 {
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: randomList(rng)}
	}
	p.Spec.Overhead = randomList(rng)
	if rng.IntN(2) == 0 {
		p.Status.Resources = &corev1.ResourceRequirements{Requests: randomList(rng)}
	}
	p.Status.AllocatedResources = randomList(rng)
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, randomStatus(rng, c.Name))
	}
	for _, c := range p.Spec.InitContainers {
		p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, randomStatus(rng, c.Name))
	}
	if rng.IntN(4) == 0 {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}}
	}
	return p
}

func randomStatus(rng *rand.Rand, name string) corev1.ContainerStatus {
	s := corev1.ContainerStatus{Name: name, AllocatedResources: randomList(rng)}
	if rng.IntN(2) == 0 {
		s.Resources = &corev1.ResourceRequirements{Requests: randomList(rng)}
	}
	return s
}

// mutateRequestPod changes one of the pod's fields, an input of
// PodRequests or not.
func mutateRequestPod(rng *rand.Rand, p *corev1.Pod) {
	pick := func(cs []corev1.Container) *corev1.Container {
		if len(cs) == 0 {
			return nil
		}
		return &cs[rng.IntN(len(cs))]
	}
	switch rng.IntN(9) {
	case 0:
		if c := pick(p.Spec.Containers); c != nil {
			c.Resources.Requests = randomList(rng)
		}
	case 1:
		if c := pick(p.Spec.InitContainers); c != nil {
			c.Resources.Requests = randomList(rng)
		}
	case 2:
		if c := pick(p.Spec.InitContainers); c != nil && c.RestartPolicy != nil {
			c.RestartPolicy = nil
		}
	case 3:
		p.Spec.Overhead = randomList(rng)
	case 4:
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: randomList(rng)}
	case 5:
		if len(p.Status.ContainerStatuses) > 0 {
			p.Status.ContainerStatuses[0] = randomStatus(rng, p.Status.ContainerStatuses[0].Name)
		}
	case 6:
		p.Status.Resources = nil
		p.Status.AllocatedResources = randomList(rng)
	case 7:
		p.Status.Conditions = nil
	default:
		// Not an input: a binding, a phase.
		p.Spec.NodeName = "node-1"
		p.Status.Phase = corev1.PodRunning
	}
}
