package userquota

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/userquota/userquota/pkg/plugins/userquota/reclaim"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// Reclaim (docs/reclaim.md): the plugin's PostFilter replaces
// DefaultPreemption. It runs the scheduler's own preemption machinery
// (preemption.Evaluator: dry runs on the nodes in parallel, PDB-aware
// candidate choice, nomination, victim deletion; preemption.go) with
// UserQuota's victim choice (package reclaim): pods of queues over their
// runtime share, never below it, and lower-priority pods of the
// preemptor's own queue. Victims are evicted and reported in evict.go.

// reclaimKey is where PostFilter leaves the reclaim state for
// SelectVictimsOnNode.
const reclaimKey fwk.StateKey = "PostFilter" + Name

// reclaimState is the reclaim.State of one PostFilter in the cycle
// state. Immutable: nodes are dry-run in parallel.
type reclaimState struct{ *reclaim.State }

// Clone returns the state itself: it is never modified.
func (s reclaimState) Clone() fwk.StateData { return s }

// PostFilter preempts for a pod that passed the quota check but found no
// node.
func (pl *Plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	defer schedmetrics.PreemptionAttempts.Inc()
	logger := klog.FromContext(ctx)
	s, err := getPreFilterState(state)
	if err != nil {
		// Refused by quota (PreFilter): no room in the quota, none to make
		// on a node.
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: not eligible: the pod is over a quota limit")
	}
	in := pl.ugm.InForce()
	pol := reclaim.PolicyFor(in.Partition, s.req.Queue)
	if pol.DisabledBy != "" {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("preemption: not eligible: preemption.policy of queue %s is disabled", pol.DisabledBy))
	}
	if left := pl.reclaim.delayLeft(logger, pod, pol.Delay); left > 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("preemption: not eligible yet: queue %s sets preemption.delay %s (%s left)",
			pol.DelayFrom, pol.Delay, left.Round(time.Second)))
	}
	rs, why := pl.newReclaimState(pod, s, in)
	if why != "" {
		// About shares: a share change may make it eligible.
		pl.reclaim.addWaiter(pod)
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: not eligible: "+why)
	}
	state.Write(reclaimKey, reclaimState{rs})
	run := pl.reclaim.start(pod.UID, rs)
	defer pl.reclaim.done(pod.UID)

	result, status := pl.evaluator.Preempt(ctx, state, pod, m)
	switch {
	case status.IsSuccess():
		pl.reclaim.dropWaiter(pod.UID)
		pl.reportPreemption(logger, pod, rs, result, run)
	case rs.Reclaims() && result != nil && status.Code() == fwk.Unschedulable:
		// No candidate (not "not eligible"): a later share change may
		// put a queue over its share.
		pl.reclaim.addWaiter(pod)
	}
	if msg := status.Message(); msg != "" {
		return result, fwk.NewStatus(status.Code(), "preemption: "+msg)
	}
	return result, status
}

// newReclaimState computes what the pod, refused or passed as s says, may
// take under the config in.
func (pl *Plugin) newReclaimState(pod *v1.Pod, s *preFilterState, in *ugm.InForce) (*reclaim.State, string) {
	cluster := reclaim.Cluster{
		Config:    in.Partition,
		Leaving:   pl.reclaim.leavingRequests(),
		Nominated: func(queue string) resources.Vector { return pl.nominatedInQueue(pod, queue, in.Partition) },
	}
	if in.Elastic {
		cluster.Elastic = pl.ugm.ElasticQueues()
	}
	return reclaim.NewState(reclaim.Preemptor{Queue: s.req.Queue, Priority: corev1helpers.PodPriority(pod), Resources: s.req.Resources, Blocked: s.blockedQueues(), TreeNeeds: s.treeNeedsOf()}, cluster)
}

// nominatedInQueue sums the requests of the pods of queue (other than pod)
// nominated to a node and not charged yet, with a priority at least pod's.
func (pl *Plugin) nominatedInQueue(pod *v1.Pod, queue string, cfg *queueconfig.Partition) resources.Vector {
	nodes, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil
	}
	prio := corev1helpers.PodPriority(pod)
	var sum resources.Vector
	for _, n := range nodes {
		for _, pi := range pl.handle.NominatedPodsForNode(n.Node().Name) {
			p := pi.GetPod()
			if p.UID == pod.UID || !pl.ours(p) || corev1helpers.PodPriority(p) < prio || pl.isCharged(p.UID) {
				continue
			}
			req, err := pl.podRequest(p, cfg, pl.queues())
			if err != nil || req.Queue != queue || !sum.CanAdd(req.Resources) {
				continue
			}
			sum.AddUnchecked(req.Resources)
		}
	}
	return sum
}
