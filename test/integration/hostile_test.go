package integration

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/podmeta"
)

// TestHostileQuantities: an exponent quantity on the real control plane,
// in a version of the queue config and in a pod's request, is refused
// naming it, and changes nothing: the config in force stays (its limits
// still decide), the pod is held with a reason naming its resource, and
// pods after it are decided as before. A config with 8Ei, one past what
// apimachinery holds, read as an unlimited limit before the fix, is
// refused the same way. The end-to-end guard of what
// TestPodResourcesHostile and TestHostileQuantities in pkg/resources
// bound in time and memory: the quantity here is one the API server
// stores (its own validation takes about a second over 1e10000000; it takes minutes over 1e2000000000), and the
// code before the fix refused it too, after building a number of ten
// million digits (1.2 s and 39 MB per decision, beside a second
// container's request).
func TestHostileQuantities(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(teamConfig)
	c.startScheduler()

	c.setQueueConfig(strings.Replace(teamConfig, "maxresources: {vcore: 2}", "maxresources: {vcore: 2, memory: 1e2000000000}", 1))
	c.waitConfigWarning("memory")
	// 8Ei is 2^63 bytes, one more than apimachinery holds: it capped it
	// at MaxInt64, an unlimited limit, before the fix.
	c.setQueueConfig(strings.Replace(teamConfig, "maxresources: {vcore: 2}", "maxresources: {vcore: 2, memory: 8Ei}", 1))
	c.waitConfigWarning(`quantity "8Ei" is too large`)

	// 1e10000000 bytes beside a second container's 1Gi: the request is
	// their sum.
	huge := c.makePod(podSpec{name: "huge", user: "alice", queue: "root.team", cpu: "100m"})
	huge.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("1e10000000")
	huge.Spec.Containers = append(huge.Spec.Containers, v1.Container{Name: "side", Image: "registry.invalid/none:0",
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}})
	c.createPodObject(huge)
	c.waitHeld("huge")
	if msg := c.waitRefused("huge", "memory"); !strings.Contains(msg, "out of range") {
		t.Errorf("held reason %q, want it to name the memory request out of range", msg)
	}

	// The old config still decides: alice runs 2 cpu, no more.
	for _, n := range []string{"a1", "a2"} {
		c.createPod(podSpec{name: n, user: "alice", queue: "root.team", cpu: "1"})
		c.waitBound(n, bindTimeout)
	}
	c.createPod(podSpec{name: "a3", user: "alice", queue: "root.team", cpu: "1"})
	c.waitRefused("a3", "cpu 2+1 > 2")
}

// TestAppIDSquat: an explicit application id cannot name a workload's
// derived one, nor carry control characters. The API server refuses a
// label value with '/'; an annotation with one (or with an escape
// sequence) is not an id, so bob's pod is its own application: before the
// fix it joined alice's Deployment's application (refused as running for
// another user, or, for alice herself, counted as that Deployment).
func TestAppIDSquat(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(teamConfig)
	rs := c.startScheduler()

	web := c.makePod(podSpec{name: "web-abc12-x", user: "alice", queue: "root.team", cpu: "1"})
	web.Labels["pod-template-hash"] = "abc12"
	web.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc12", UID: "0c1b2a39-0000-4000-8000-000000000001", Controller: ptr.To(true)}}
	c.createPodObject(web)
	c.waitBound("web-abc12-x", bindTimeout)

	byLabel := c.makePod(podSpec{name: "by-label", user: "bob", queue: "root.team", cpu: "1"})
	byLabel.Labels[podmeta.LabelAppID] = "Deployment/web"
	if _, err := c.client.CoreV1().Pods(c.ns).Create(c.ctx, byLabel, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a label value with '/': %v, want the API server to refuse it", err)
	}
	for name, id := range map[string]string{"squat": "Deployment/web", "escape": "x\x1b[2Jy"} {
		p := c.makePod(podSpec{name: name, user: "bob", queue: "root.team", cpu: "1"})
		p.Annotations[podmeta.YuniKornAppID] = id
		c.createPodObject(p)
		c.waitBound(name, bindTimeout)
	}
	bob := rs.userRoot("bob")
	if bob == nil || len(bob.RunningApplications) != 2 {
		t.Fatalf("bob's applications: %+v, want two of his own", bob)
	}
	for _, app := range bob.RunningApplications {
		if !strings.HasPrefix(app, c.ns+"/pod/") {
			t.Errorf("bob's application %q, want his pod's own id", app)
		}
	}
	if alice := rs.userRoot("alice"); alice == nil || len(alice.RunningApplications) != 1 || alice.RunningApplications[0] != c.ns+"/Deployment/web" {
		t.Errorf("alice's applications: %+v, want her Deployment alone", alice)
	}
}
