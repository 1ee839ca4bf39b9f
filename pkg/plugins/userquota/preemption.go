package userquota

import (
	"context"
	"fmt"
	"math/rand"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"github.com/userquota/userquota/pkg/plugins/userquota/reclaim"
)

// Defaults of kube-scheduler's DefaultPreemptionArgs: how many nodes a
// preemption dry-runs at least, in percent of the nodes and absolute.
const (
	minCandidateNodesPercentage = 10
	minCandidateNodesAbsolute   = 100
)

// reclaimer is UserQuota's preemption.Interface.
type reclaimer struct{ pl *Plugin }

var _ preemption.Interface = &reclaimer{}

// newEvaluator builds the preemption machinery with our victim choice and
// our PreemptPod (which says why a victim goes). Synchronous: the pod is
// nominated after its victims were deleted, and no PreEnqueue plugin has to
// hold it back meanwhile.
func (pl *Plugin) newEvaluator() *preemption.Evaluator {
	ev := preemption.NewEvaluator(Name, pl.handle, &reclaimer{pl: pl}, false)
	ev.PreemptPod = pl.preemptPod
	return ev
}

// victimOf returns the pod as a possible victim: ours and charged, or
// ours and terminating already (leaving: its room is about to be free, as
// kube-scheduler counts it); nil otherwise.
func (pl *Plugin) victimOf(pi fwk.PodInfo) *reclaim.Victim {
	pod := pi.GetPod()
	if !pl.ours(pod) {
		return nil
	}
	c, live := pl.ledger.Get(string(pod.UID))
	v := &reclaim.Victim{
		PodInfo:  pi,
		Pod:      pod,
		Key:      pod.Namespace + "/" + pod.Name,
		Queue:    c.Request.Queue,
		Priority: corev1helpers.PodPriority(pod),
		Start:    pod.CreationTimestamp.Time,
	}
	if pod.Status.StartTime != nil {
		v.Start = pod.Status.StartTime.Time
	}
	// A pod we preempted is leaving even while the scheduler's snapshot
	// does not show its deletion yet (informer lag under load): it must not
	// be chosen, deleted and counted a second time.
	if pod.DeletionTimestamp != nil || pl.reclaim.isLeaving(pod.UID) {
		v.Leaving = true
		return v
	}
	if !live {
		return nil
	}
	v.Res = c.Request.Resources
	v.Trees = c.Request.Trees
	// As charged: the label is read once, at admission (a later change is
	// refused by the webhook; without it, still not read here).
	v.Preemptible = !c.Request.NonPreemptible
	return v
}

// GetOffsetAndNumCandidates: a random first node and DefaultPreemption's
// default number of candidates.
func (r *reclaimer) GetOffsetAndNumCandidates(numNodes int32) (int32, int32) {
	n := numNodes * minCandidateNodesPercentage / 100
	if n < minCandidateNodesAbsolute {
		n = minCandidateNodesAbsolute
	}
	if n > numNodes {
		n = numNodes
	}
	return rand.Int31n(numNodes), n
}

// CandidatesToVictimsMap maps each candidate node to its victims.
func (r *reclaimer) CandidatesToVictimsMap(candidates []preemption.Candidate) map[string]*extenderv1.Victims {
	m := make(map[string]*extenderv1.Victims, len(candidates))
	for _, c := range candidates {
		m[c.Name()] = c.Victims()
	}
	return m
}

// PodEligibleToPreemptOthers: not a pod with preemptionPolicy Never, nor
// one whose earlier victims are still terminating on its nominated node
// (unless that node no longer suits it), as DefaultPreemption decides.
// Queue policy and delay are decided before (PostFilter).
func (r *reclaimer) PodEligibleToPreemptOthers(_ context.Context, pod *v1.Pod, nominatedNodeStatus *fwk.Status) (bool, string) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return false, "not eligible due to preemptionPolicy=Never."
	}
	nom := pod.Status.NominatedNodeName
	if nom == "" || nominatedNodeStatus.Code() == fwk.UnschedulableAndUnresolvable {
		return true, ""
	}
	if ni, _ := r.pl.handle.SnapshotSharedLister().NodeInfos().Get(nom); ni != nil {
		for _, p := range ni.GetPods() {
			if podTerminatingByPreemption(p.GetPod()) {
				return false, "not eligible due to a terminating pod on the nominated node."
			}
		}
	}
	return true, ""
}

// podTerminatingByPreemption: the pod is being deleted by a scheduler's
// preemption.
func podTerminatingByPreemption(p *v1.Pod) bool {
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			return c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler
		}
	}
	return false
}

// OrderedScoreFuncs: nil, so candidate nodes are compared as kube-scheduler
// does (fewest PDB violations, lowest highest victim priority, ...).
func (r *reclaimer) OrderedScoreFuncs(context.Context, map[string]*extenderv1.Victims) []func(string) int64 {
	return nil
}

// SelectVictimsOnNode finds the victims on one node (nodeInfo and state
// are copies) with the quota's choice (reclaim.State.SelectOnNode), the
// node's dry run done by the framework's filters as DefaultPreemption's.
func (r *reclaimer) SelectVictimsOnNode(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo, pdbs []*policy.PodDisruptionBudget) ([]*v1.Pod, int, *fwk.Status) {
	logger := klog.FromContext(ctx)
	c, err := state.Read(reclaimKey)
	if err != nil {
		return nil, 0, fwk.AsStatus(err)
	}
	rs, ok := c.(reclaimState)
	if !ok {
		return nil, 0, fwk.AsStatus(fmt.Errorf("%+v cannot be converted to reclaimState", c))
	}
	var pods []*reclaim.Victim
	for _, pi := range nodeInfo.GetPods() {
		if v := r.pl.victimOf(pi); v != nil {
			pods = append(pods, v)
		}
	}
	node := &dryRun{ctx: ctx, logger: logger, fh: r.pl.handle, state: state, pod: pod, nodeInfo: nodeInfo}
	res, err := rs.SelectOnNode(pods, pdbs, node)
	switch {
	case err != nil:
		return nil, 0, fwk.AsStatus(err)
	case res.Unresolvable != "":
		return nil, 0, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, res.Unresolvable)
	case res.NotFit:
		return nil, 0, node.status
	}
	out := make([]*v1.Pod, len(res.Victims))
	for i, v := range res.Victims {
		out[i] = v.Pod
		logger.V(5).Info("Preemption victim on node", "pod", klog.KObj(v.Pod), "node", nodeInfo.Node().Name, "queue", v.Queue, "reason", v.Reason())
	}
	return out, res.NumViolating, nil
}

// dryRun is one node's copy as reclaim.Node: pods come off and back with
// the PreFilter extensions told, and the preemptor is run through the
// Filter plugins with the pods nominated to the node.
type dryRun struct {
	ctx      context.Context
	logger   klog.Logger
	fh       fwk.Handle
	state    fwk.CycleState
	pod      *v1.Pod
	nodeInfo fwk.NodeInfo
	// status is the filters' last answer.
	status *fwk.Status
}

func (d *dryRun) Remove(v *reclaim.Victim) error {
	if err := d.nodeInfo.RemovePod(d.logger, v.Pod); err != nil {
		return err
	}
	return d.fh.RunPreFilterExtensionRemovePod(d.ctx, d.state, d.pod, v.PodInfo, d.nodeInfo).AsError()
}

func (d *dryRun) Add(v *reclaim.Victim) error {
	d.nodeInfo.AddPodInfo(v.PodInfo)
	return d.fh.RunPreFilterExtensionAddPod(d.ctx, d.state, d.pod, v.PodInfo, d.nodeInfo).AsError()
}

func (d *dryRun) Fits() bool {
	d.status = d.fh.RunFilterPluginsWithNominatedPods(d.ctx, d.state, d.pod, d.nodeInfo)
	return d.status.IsSuccess()
}
