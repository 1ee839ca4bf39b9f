package userquota

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"

	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/ugm"
)

// cpuSoftTree: org (hard root, 4 cpu) with team-a and team-b, soft, 2
// cpu each.
const cpuSoftTree = `{"kind":"QuotaTree","metadata":{"name":"teams"},"spec":{"resourceNames":["cpu"],"nodes":{
 "org":{"parent":"nil","hard":"true","quota":{"cpu":"4"}},
 "team-a":{"parent":"org","hard":"false","quota":{"cpu":"2"}},
 "team-b":{"parent":"org","hard":"false","quota":{"cpu":"2"}}}}}`

// teamPod is user's pod of cpu in queue on node of tree teams.
func teamPod(name, user, queue, node, cpu string, priority int32) *v1.Pod {
	p := userPod(name, user, "", queue, cpu)
	p.Labels[podmeta.TreeLabel("teams")] = node
	p.Spec.Priority = &priority
	return p
}

// TestTreeBorrowerPreempted: team-b's pods (queue root.open) fill team-b
// and borrow the rest of org; the preemptors are of root.default (no
// queue reason to preempt). A pod of team-a, which has room, is refused by org at
// PreFilter as Unschedulable (not held) with org's need in the cycle
// state; the reclaim machinery picks, on the node, the borrower at org
// (not team-b's pod allocated at its own node, not a non-preemptible
// borrower), whatever its priority, and says why. A pod of team-b itself
// (which would be allocated at org) takes only a lower-priority borrower.
func TestTreeBorrowerPreempted(t *testing.T) {
	for _, tc := range []struct {
		name      string
		preemptor *v1.Pod
		lendNP    bool // b-lend non-preemptible
		wantPre   statusOf
		needs     []ugm.TreeNeed
		victims   string
		status    string
	}{
		{name: "fits below org", preemptor: teamPod("a-1", "ann", "root.default", "team-a", "1", 0),
			wantPre: statusOf{fwk.Unschedulable, "quota tree teams node org (above team-a) would exceed its quota: cpu 4+1 > 4"},
			victims: "b-lend"},
		{name: "non-preemptible borrower", preemptor: teamPod("a-1", "ann", "root.default", "team-a", "1", 0), lendNP: true,
			wantPre: statusOf{fwk.UnschedulableAndUnresolvable, "quota tree teams node org (above team-a) would exceed its quota: cpu 4+1 > 4"}},
		{name: "allocated at org itself, higher priority", preemptor: teamPod("b-3", "bob", "root.default", "team-b", "1", 20),
			wantPre: statusOf{fwk.Unschedulable, "quota tree teams node org (above team-b) would exceed its quota: cpu 4+1 > 4"},
			victims: "b-lend"},
		{name: "allocated at org itself, not higher priority", preemptor: teamPod("b-3", "bob", "root.default", "team-b", "1", 10),
			wantPre: statusOf{fwk.Unschedulable, "quota tree teams node org (above team-b) would exceed its quota: cpu 4+1 > 4"},
			status:  "UnschedulableAndUnresolvable: " + "no pod on the node may be preempted for this pod (only pods of queues over their share, or of lower priority in its own queue)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := readyNode(testNode, "8")
			cm := forestConfigMap(sandboxConfig, map[string]string{"teams.tree.json": cpuSoftTree})
			e := newEnv(t, envOptions{objects: []runtime.Object{cm, node},
				plugins: []tf.RegisterPluginFunc{tf.RegisterPluginAsExtensions(noderesources.Name, nodeResourcesFit, "PreFilter", "Filter")}})
			lend := teamPod("b-lend", "bob", "root.open", "team-b", "2", 10)
			if tc.lendNP {
				lend.Labels[podmeta.LabelPreemptible] = "false"
			}
			var onNode []*v1.Pod
			for _, p := range []*v1.Pod{teamPod("b-home", "bob", "root.open", "team-b", "2", 0), lend} {
				onNode = append(onNode, e.bind(p))
				e.waitFor(p.Name+"'s charge", func() bool { return e.pl.isCharged(onNode[len(onNode)-1].UID) })
			}
			if c, _ := e.pl.ledger.Get(string(onNode[1].UID)); c.Request.Trees == nil || c.Request.Trees.Nodes[0].ANode != "org" {
				t.Fatalf("b-lend charged %+v, want allocated at org", c.Request.Trees)
			}
			e.pending(tc.preemptor)
			state, s := e.preFilter(tc.preemptor)
			if got := summary(s); got != tc.wantPre {
				t.Fatalf("PreFilter = %+v, want %+v", got, tc.wantPre)
			}
			if tc.wantPre.Code != fwk.Unschedulable {
				return
			}
			pfs, err := getPreFilterState(state)
			if err != nil || len(pfs.treeNeedsOf()) != 1 || pfs.treeNeedsOf()[0].Node != "org" {
				t.Fatalf("cycle state %+v, %v: want org's need", pfs, err)
			}
			rs, victims, _, got := e.selectVictims(state, pfs, tc.preemptor, node, onNode, nil)
			if diff := cmp.Diff(tc.status, got); diff != "" {
				t.Fatalf("status (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.victims, podNames(victims)); diff != "" {
				t.Errorf("victims (-want,+got):\n%s", diff)
			}
			if len(victims) > 0 {
				c, _ := e.pl.ledger.Get(string(victims[0].UID))
				why, reason := rs.WhyCharge(c.Request, *victims[0].Spec.Priority)
				if reason != metrics.ReasonTree || !strings.HasPrefix(why, "quota tree teams: allocated at node org above its node team-b") {
					t.Errorf("why %q (%s)", why, reason)
				}
			}
		})
	}
}
