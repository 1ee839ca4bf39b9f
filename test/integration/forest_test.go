package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/describe"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/test/internal/controlplane"
)

// Issue 23 (forests, docs/forests.md): the worked example, examples/forest.yaml
// with examples/gpu-model.tree.json in the queue-config ConfigMap, on the
// real API server with the webhooks of manifests/webhook-config.yaml.

// gpuLabel names a pod's node of the example's GPU-model tree.
var gpuLabel = podmeta.TreeLabel("gpu-model")

// setForestConfig writes the example's queue config and GPU-model tree
// into the ConfigMap the scheduler reads (through the config webhook).
func (c *cluster) setForestConfig() {
	c.t.Helper()
	root := queueconfigtest.RepoRoot(c.t)
	data := map[string]string{}
	for key, file := range map[string]string{controlplane.QueueConfigKey: "forest.yaml", "gpu-model.tree.json": "gpu-model.tree.json"} {
		b, err := os.ReadFile(filepath.Join(root, "examples", file))
		if err != nil {
			c.t.Fatal(err)
		}
		data[key] = string(b)
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: controlplane.QueueConfigMap, Namespace: c.ns}, Data: data}
	if _, err := c.client.CoreV1().ConfigMaps(c.ns).Create(c.ctx, cm, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// gpuPod is ps asking for gpus nvidia.com/gpu on the GPU-model tree's
// node.
func (c *cluster) gpuPod(ps podSpec, gpus, node string) *v1.Pod {
	p := c.makePod(ps)
	p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse(gpus)
	p.Spec.Containers[0].Resources.Limits = v1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)}
	p.Labels[gpuLabel] = node
	return p
}

// TestForestH100Full: org-a's h100 node of the GPU-model tree holds 4
// GPUs across its teams. sue (team vision) runs 4 of them; bob's pod of
// team nlp asking for 1 h100 fits his queue (8 GPUs, none used) but not
// the tree: it is held, its status naming the tree, the node, the usage,
// the request and the quota, while his a100 pod runs. sue may not move
// her running pod to the a100 node (the webhook freezes the tree label
// of a bound pod). When her pod ends, bob's runs. Before the forest,
// bob's h100 pod bound at once (nothing limits a model across teams).
func TestForestH100Full(t *testing.T) {
	c := webhookCluster(t, 0)
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-0"},
		Status: v1.NodeStatus{
			Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("512Gi"), v1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("16")},
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("512Gi"), v1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("16")},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
	if _, err := c.client.CoreV1().Nodes().Create(c.ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.setForestConfig()
	c.startScheduler()
	sue, bob := c.clientAs("sue-token"), c.clientAs("bob-token")
	mk := func(as string, p *v1.Pod) {
		t.Helper()
		client := sue
		if as == "bob" {
			client = bob
		}
		if _, err := client.CoreV1().Pods(c.ns).Create(c.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", p.Name, err)
		}
	}
	mk("sue", c.gpuPod(podSpec{name: "sue-train", queue: "root.org-a.vision", cpu: "8"}, "4", "org-a-h100"))
	c.waitBound("sue-train", bindTimeout)
	mk("bob", c.gpuPod(podSpec{name: "bob-h100", queue: "root.org-a.nlp", cpu: "2"}, "1", "org-a-h100"))
	mk("bob", c.gpuPod(podSpec{name: "bob-a100", queue: "root.org-a.nlp", cpu: "2"}, "1", "org-a-a100"))
	c.waitBound("bob-a100", bindTimeout)
	msg := c.waitHeldFor("bob-h100", "Tree", "quota tree gpu-model node org-a-h100 would exceed its quota: nvidia.com/gpu 4+1 > 4")
	t.Logf("bob-h100 held: %s", msg)

	// What kubectl describe pod prints (its describer, as kubectl runs it).
	c.eventually("the QuotaHeld event of bob-h100", bindTimeout, func() (bool, error) { return c.hasEventFor("bob-h100", "QuotaHeld"), nil })
	out, err := (&describe.PodDescriber{Interface: c.client}).Describe(c.ns, "bob-h100", describe.DescriberSettings{ShowEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl describe pod bob-h100:\n%s", out)
	// kubectl describe pod shows the conditions' types and statuses only;
	// the reason is in the event.
	for _, w := range []string{
		"tree.userquota.io/gpu-model=org-a-h100",
		"userquota.io/QuotaAdmitted   False",
		"Warning  QuotaHeld",
		"Held by quota (Tree limit): quota tree gpu-model node org-a-h100 would exceed its quota: nvidia.com/gpu 4+1 > 4",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("kubectl describe pod bob-h100 lacks %q", w)
		}
	}
	// The conditions as kubectl get pod bob-h100 -o jsonpath='{range
	// .status.conditions[*]}{.type}{"\t"}{.reason}{"\t"}{.message}{"\n"}{end}'
	// prints them.
	var conds strings.Builder
	for _, cond := range c.getPod("bob-h100").Status.Conditions {
		fmt.Fprintf(&conds, "%s\t%s\t%s\n", cond.Type, cond.Reason, cond.Message)
	}
	t.Logf("the conditions of bob-h100:\n%s", conds.String())
	for _, w := range []string{
		"PodScheduled\tQuotaHeld\theld by quota: quota tree gpu-model node org-a-h100 would exceed its quota: nvidia.com/gpu 4+1 > 4\n",
		"userquota.io/QuotaAdmitted\tTreeLimit\tquota tree gpu-model node org-a-h100 would exceed its quota: nvidia.com/gpu 4+1 > 4\n",
	} {
		if !strings.Contains(conds.String(), w) {
			t.Errorf("the conditions of bob-h100 lack %q", w)
		}
	}

	// The tree label of a bound pod is read-only, to its owner and to the
	// admin alike.
	for _, as := range []struct {
		who    string
		labels map[string]any
		want   string
	}{
		{"sue", map[string]any{gpuLabel: "org-a-a100"}, `label tree.userquota.io/gpu-model from "org-a-h100" to "org-a-a100"`},
		{"admin", map[string]any{gpuLabel: nil}, `label tree.userquota.io/gpu-model from "org-a-h100" to (absent)`},
	} {
		client := c.client
		if as.who == "sue" {
			client = sue
		}
		err := c.relabel(client, "sue-train", as.labels)
		if err == nil {
			t.Fatalf("%s relabelling the bound pod sue-train: allowed, want refused", as.who)
		}
		t.Logf("%s relabelling sue-train: %v", as.who, err)
		for _, w := range []string{"Pod " + c.ns + "/sue-train is bound to node gpu-0", "quota tree labels", as.want} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s relabelling: %v, want it to contain %q", as.who, err, w)
			}
		}
	}

	// sue's pod ends: bob's h100 pod runs.
	c.deletePod("sue-train")
	c.waitBound("bob-h100", bindTimeout)
}

// hasEventFor reports whether pod name has an event with reason.
func (c *cluster) hasEventFor(name, reason string) bool {
	c.t.Helper()
	list, err := c.client.CoreV1().Events(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			return true
		}
	}
	return false
}
