package userquota

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// gpuPod is user's pod in queue asking for gpus nvidia.com/gpu, on the
// gpu tree's node (none: "").
func gpuPod(name, user, queue, gpus, node string) *v1.Pod {
	p := userPod(name, user, "", queue, "100m")
	p.Spec.Containers[0].Resources.Requests[v1.ResourceName("nvidia.com/gpu")] = resource.MustParse(gpus)
	if node != "" {
		p.Labels[podmeta.TreeLabel("gpu")] = node
	}
	return p
}

// treeUsage is the gpu usage of each node of the trees in force,
// "tree/node" -> amount (0 left out).
func treeUsage(pl *Plugin) map[string]int64 {
	out := map[string]int64{}
	var walk func(tree string, u *ugm.TreeUsage)
	walk = func(tree string, u *ugm.TreeUsage) {
		if x := u.Usage.Get(resources.Intern("nvidia.com/gpu")); x != 0 {
			out[tree+"/"+u.Node] = x
		}
		for _, c := range u.Children {
			walk(tree, c)
		}
	}
	for _, t := range pl.ugm.Forest() {
		walk(t.Name, t.Root)
	}
	return out
}

// TestTreeHold: a pod that fits its queue but not its node of the gpu
// tree is held at PreEnqueue, kind Tree, its status naming the tree, the
// node, usage, request and quota; a pod naming an unknown node is held
// saying so; a pod on another node passes; the release of a pod on the
// full node lets the held one in; a pod without the label is not charged
// on the tree. After a restart the tree's usage is rebuilt from the bound
// pods, and holds the same.
func TestTreeHold(t *testing.T) {
	cm := forestConfigMap(sandboxConfig, map[string]string{"gpu.tree.json": gpuTree})
	e := newEnv(t, envOptions{objects: []runtime.Object{cm}})
	p1 := gpuPod("p1", "sue", "open", "2", "h100-org1")
	if s := e.preEnqueue(p1); !s.IsSuccess() {
		t.Fatalf("PreEnqueue(p1) = %v", s)
	}
	e.mustSchedule(p1)
	bound := e.bind(p1)

	p2 := gpuPod("p2", "bob", "open", "1", "h100-org1")
	want := "quota tree gpu node h100-org1 would exceed its quota: nvidia.com/gpu 2+1 > 2"
	if s := e.preEnqueue(p2); s.Code() != fwk.UnschedulableAndUnresolvable || s.Message() != want {
		t.Fatalf("PreEnqueue(p2) = %v, want held with %q", s, want)
	}
	if h := e.pl.held.get(p2.UID); h == nil || hold.KindOf(h.Reason) != hold.KindTree {
		t.Fatalf("p2 held as %v, want kind Tree", h)
	}
	e.waitFor("p2's status to say it is held by the tree", func() bool {
		c := e.condition("p2", ConditionQuotaAdmitted)
		return c != nil && c.Status == v1.ConditionFalse && c.Reason == "TreeLimit" && c.Message == want
	})
	unknown := gpuPod("unknown", "bob", "open", "1", "h200-org1")
	if s := e.preEnqueue(unknown); s.IsSuccess() || !strings.Contains(s.Message(), `label tree.userquota.io/gpu=h200-org1: quota tree gpu has no node "h200-org1" (its leaves: a100-org1, h100-org1)`) {
		t.Errorf("PreEnqueue(unknown) = %v", s)
	}
	other := gpuPod("other", "bob", "open", "1", "a100-org1")
	if s := e.preEnqueue(other); !s.IsSuccess() {
		t.Errorf("PreEnqueue(other) = %v, want a100-org1 to take it", s)
	}
	free := gpuPod("free", "bob", "open", "8", "")
	if s := e.preEnqueue(free); !s.IsSuccess() {
		t.Errorf("PreEnqueue(free) = %v: a pod without the label is not charged on the tree", s)
	}
	if diff := cmp.Diff(map[string]int64{"gpu/org1": 2, "gpu/h100-org1": 2}, treeUsage(e.pl)); diff != "" {
		t.Errorf("tree usage (-want,+got):\n%s", diff)
	}

	// A restart finds p1 bound: the tree is rebuilt from it.
	e2 := newEnv(t, envOptions{objects: []runtime.Object{forestConfigMap(sandboxConfig, map[string]string{"gpu.tree.json": gpuTree}), bound}})
	if diff := cmp.Diff(map[string]int64{"gpu/org1": 2, "gpu/h100-org1": 2}, treeUsage(e2.pl)); diff != "" {
		t.Errorf("tree usage after a restart (-want,+got):\n%s", diff)
	}
	if s := e2.preEnqueue(gpuPod("p2", "bob", "open", "1", "h100-org1")); s.IsSuccess() || s.Message() != want {
		t.Errorf("after a restart PreEnqueue(p2) = %v, want held with %q", s, want)
	}

	// p1 ends: p2 is let in.
	e.activator.reset()
	e.delete(bound)
	e.waitFor("p2 to be let in", func() bool { return contains(e.activator.activated(), "ns1/p2") })
	if !e.pl.ugm.Admitted(string(p2.UID)) {
		t.Error("p2 let in without room")
	}
}
