package userquota

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"

	"github.com/userquota/userquota/pkg/plugins/userquota/reclaim"
	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

var nodeResourcesFit = frameworkruntime.FactoryAdapter(feature.Features{}, noderesources.NewFit)

// TestSelectVictimsOnNode runs UserQuota's victim selection on one node
// through the framework, as DefaultPreemption's own test does: the node's
// pods taken off and given back with NodeResourcesFit deciding fit, the
// quota deciding who may go. b holds the whole 8-cpu node; a's two pending
// pods (2 cpu each, one of them the preemptor) give a a share of 4
// (elasticConfig), so b is over its share by 4.
func TestSelectVictimsOnNode(t *testing.T) {
	for _, tc := range []struct {
		name string
		// b's pods on the node: name -> cpu and priority.
		b       []bPod
		pdbs    []*policy.PodDisruptionBudget
		memory  bool // the preemptor asks for memory the node has none of
		want    string
		wantPDB int
		status  string
	}{
		{
			name: "the most important are given back while the preemptor still fits",
			b:    []bPod{{"b-low", "2", 0}, {"b-mid", "2", 5}, {"b-high", "4", 10}},
			want: "b-low",
		},
		{
			name: "a budget's pod is given back before the others",
			b:    []bPod{{"b-low", "2", 0}, {"b-mid", "2", 5}, {"b-high", "4", 10}},
			pdbs: []*policy.PodDisruptionBudget{pdbFor("b-low", 0)},
			want: "b-mid",
		},
		{
			name:    "a budget's pod goes when nothing else makes room, and is counted",
			b:       []bPod{{"b-low", "2", 0}, {"b-big", "6", 10}},
			pdbs:    []*policy.PodDisruptionBudget{pdbFor("b-low", 0)},
			want:    "b-low",
			wantPDB: 1,
		},
		{
			name:   "no pod of a queue within its share is taken",
			b:      []bPod{{"b-low", "2", 0}, {"b-mid", "2", 5}},
			status: "UnschedulableAndUnresolvable: " + reclaim.NoneEligible,
		},
		{
			name:   "the node's filters refuse even with every eligible pod off",
			b:      []bPod{{"b-low", "2", 0}, {"b-mid", "2", 5}, {"b-high", "4", 10}},
			memory: true,
			status: "UnschedulableAndUnresolvable: Insufficient memory", // the filter's own status
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := readyNode(testNode, "8")
			e := newEnv(t, envOptions{config: elasticConfig, objects: []runtime.Object{node},
				plugins: []tf.RegisterPluginFunc{tf.RegisterPluginAsExtensions(noderesources.Name, nodeResourcesFit, "PreFilter", "Filter")}})
			var onNode []*v1.Pod
			for _, b := range tc.b {
				p := userPod(b.name, "bob", "", "root.b", b.cpu)
				p.Spec.Priority = &b.priority
				p.Labels["app"] = b.name
				onNode = append(onNode, e.bind(p))
			}
			preemptor := userPod("a-1", "ann", "", "root.a", "2")
			if tc.memory {
				preemptor.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("1Gi")
			}
			e.create(preemptor)
			e.create(userPod("a-2", "ann", "", "root.a", "2"))
			e.waitFor("a's share of 4", func() bool { return runtimeCPU(e.pl, "root.a") == 4000 })

			state, s := e.preFilter(preemptor)
			if !s.IsSuccess() {
				t.Fatalf("PreFilter = %v", s)
			}
			pfs, err := getPreFilterState(state)
			if err != nil {
				t.Fatal(err)
			}
			_, victims, numPDB, got := e.selectVictims(state, pfs, preemptor, node, onNode, tc.pdbs)
			if diff := cmp.Diff(tc.status, got); diff != "" {
				t.Fatalf("status (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, podNames(victims)); diff != "" {
				t.Errorf("victims (-want,+got):\n%s", diff)
			}
			if numPDB != tc.wantPDB {
				t.Errorf("%d victims against a budget, want %d", numPDB, tc.wantPDB)
			}
			// The node is the dry run's copy: nothing was evicted.
			for _, p := range onNode {
				if !e.pl.isCharged(p.UID) {
					t.Errorf("%s lost its charge in a dry run", p.Name)
				}
			}
		})
	}
}

// bPod is a pod of queue b on the node.
type bPod struct {
	name, cpu string
	priority  int32
}

// pdbFor is a budget over the pods labelled app=name in ns1.
func pdbFor(name string, allowed int32) *policy.PodDisruptionBudget {
	return &policy.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: name},
		Spec:       policy.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
		Status:     policy.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

// TestVictimPreemptibleAsCharged: whether a running pod may be reclaimed
// is what its label said when it was charged; setting
// userquota.io/preemptible=false afterwards (which the webhook refuses
// too) does not shield a pod that borrowed.
func TestVictimPreemptibleAsCharged(t *testing.T) {
	e := newEnv(t, envOptions{config: queueconfigtest.Gangs})
	p := userPod("borrower", "sue", "", "root.g", "1")
	e.mustSchedule(p)
	bound := e.bind(p)
	e.barrier()
	relabelled := bound.DeepCopy()
	relabelled.Labels[podmeta.LabelPreemptible] = "false"
	pi, err := framework.NewPodInfo(relabelled)
	if err != nil {
		t.Fatal(err)
	}
	if v := e.pl.victimOf(pi); v == nil || !v.Preemptible {
		t.Fatalf("victimOf(a charged preemptible pod relabelled preemptible=false) = %v: want a preemptible victim, as charged", v != nil && v.Preemptible)
	}
}

// selectVictims runs the reclaim PostFilter's victim choice for preemptor
// on node, whose pods are onNode, from the cycle state PreFilter left
// (pfs in state): the reclaim state it made, the victims, how many of
// them a budget protects, and the status ("" when successful).
func (e *env) selectVictims(state fwk.CycleState, pfs *preFilterState, preemptor *v1.Pod, node *v1.Node, onNode []*v1.Pod, pdbs []*policy.PodDisruptionBudget) (*reclaim.State, []*v1.Pod, int, string) {
	e.t.Helper()
	rs, why := e.pl.newReclaimState(preemptor, pfs, e.pl.ugm.InForce())
	if why != "" {
		e.t.Fatalf("not eligible: %s", why)
	}
	state.Write(reclaimKey, reclaimState{rs})
	ni := framework.NewNodeInfo(onNode...)
	ni.SetNode(node)
	victims, numPDB, status := (&reclaimer{pl: e.pl}).SelectVictimsOnNode(e.ctx, state, preemptor, ni, pdbs)
	got := ""
	if !status.IsSuccess() {
		got = status.Code().String() + ": " + strings.Join(status.Reasons(), "; ")
	}
	return rs, victims, numPDB, got
}

// podNames is the pods' names, space separated.
func podNames(pods []*v1.Pod) string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	return strings.Join(names, " ")
}
