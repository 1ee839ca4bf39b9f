package userquota

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	apipod "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/plugins/userquota/reclaim"
	"github.com/userquota/userquota/pkg/ugm"
)

// Event reasons.
const (
	// ReasonPreempted is on a victim (as kube-scheduler names it).
	ReasonPreempted = "Preempted"
	// ReasonPreempting is on the pod that preempted, listing its victims.
	ReasonPreempting = "Preempting"
)

// preemptPod evicts one victim: the Evaluator's own steps (reject it if it
// waits at Permit; else the DisruptionTarget condition, then deletion),
// with a condition message and an event that say which queue took the room
// and why, and our bookkeeping.
func (pl *Plugin) preemptPod(ctx context.Context, c preemption.Candidate, preemptor, victim *v1.Pod, pluginName string) error {
	logger := klog.FromContext(ctx)
	if pl.reclaim.isLeaving(victim.UID) {
		// Preempted already (the candidate came from a snapshot that does
		// not show the deletion yet): its room is on its way.
		return nil
	}
	charge, charged := pl.ledger.Get(string(victim.UID))
	run := pl.reclaim.run(preemptor.UID)
	why, queue, reason := victimWhy(run, victim, charge.Request)
	if wp := pl.handle.GetWaitingPod(victim.UID); wp != nil {
		wp.Reject(pluginName, "preempted: "+why)
	} else {
		cond := &v1.PodCondition{
			Type:               v1.DisruptionTarget,
			ObservedGeneration: apipod.CalculatePodConditionObservedGeneration(&victim.Status, victim.Generation, v1.DisruptionTarget),
			Status:             v1.ConditionTrue,
			Reason:             v1.PodReasonPreemptionByScheduler,
			Message:            preemptor.Spec.SchedulerName + ": " + why,
		}
		status := victim.Status.DeepCopy()
		if apipod.UpdatePodCondition(status, cond) {
			if err := schedutil.PatchPodStatus(ctx, pl.handle.ClientSet(), victim.Name, victim.Namespace, &victim.Status, status); err != nil {
				if apierrors.IsNotFound(err) {
					return nil
				}
				logger.Error(err, "Could not add the DisruptionTarget condition to a preemption victim", "preemptor", klog.KObj(preemptor), "victim", klog.KObj(victim))
				return err
			}
		}
		// Leaving from now on: marked before the deletion, so that a release
		// that follows it (a pod without grace period goes at once) is not
		// undone; a release before the mark is caught just after.
		if charged {
			pl.reclaim.markLeaving(victim.UID, charge.Request)
		}
		err := schedutil.DeletePod(ctx, pl.handle.ClientSet(), victim)
		if _, live := pl.ledger.Get(string(victim.UID)); !live || err != nil && !apierrors.IsNotFound(err) {
			pl.reclaim.released(victim.UID)
		}
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			logger.Error(err, "Could not delete a preemption victim", "preemptor", klog.KObj(preemptor), "victim", klog.KObj(victim))
			return err
		}
	}
	logger.V(2).Info("Preempted a pod", "preemptor", klog.KObj(preemptor), "victim", klog.KObj(victim), "node", c.Name(), "queue", queue, "reason", reason)
	pl.handle.EventRecorder().Eventf(victim, preemptor, v1.EventTypeNormal, ReasonPreempted, "Preempting",
		"Preempted by pod %s/%s on node %s: %s", preemptor.Namespace, preemptor.Name, c.Name(), why)
	metrics.RecordPreempted(queue, reason)
	if run != nil {
		run.evicted(victimRecord{key: victim.Namespace + "/" + victim.Name, queue: queue, reason: reason}, c.Victims().NumPDBViolations)
	}
	return nil
}

// victimWhy says why victim goes, for its condition and event, and returns
// its queue and the metric reason.
func victimWhy(run *preemptRun, victim *v1.Pod, charge ugm.Request) (why, queue, reason string) {
	if run == nil {
		return "preempting to accommodate another pod", charge.Queue, metrics.ReasonPriority
	}
	why, reason = run.rs.WhyCharge(charge, corev1helpers.PodPriority(victim))
	return why, charge.Queue, reason
}

// reportPreemption tells the preemptor what it preempted (an event) and
// counts it.
func (pl *Plugin) reportPreemption(logger klog.Logger, pod *v1.Pod, rs *reclaim.State, result *fwk.PostFilterResult, run *preemptRun) {
	victims, pdb := run.outcome()
	if len(victims) == 0 {
		return
	}
	node := ""
	if result != nil && result.NominatingInfo != nil {
		node = result.NominatedNodeName
	}
	sort.Slice(victims, func(i, j int) bool { return victims[i].key < victims[j].key })
	parts := make([]string, len(victims))
	for i, v := range victims {
		what := "over its share"
		switch v.reason {
		case metrics.ReasonPriority:
			what = "lower priority"
		case metrics.ReasonTree:
			what = "borrowed at a quota tree node"
		}
		parts[i] = fmt.Sprintf("%s (queue %s, %s)", v.key, v.queue, what)
	}
	msg := fmt.Sprintf("Preempted %d pod(s) on node %s for this pod of queue %s: %s", len(victims), node, rs.Queue(), strings.Join(parts, ", "))
	kind := v1.EventTypeNormal
	if pdb > 0 {
		kind = v1.EventTypeWarning
		msg += fmt.Sprintf("; %d of them against a PodDisruptionBudget: no other choice made room", pdb)
	}
	pl.handle.EventRecorder().Eventf(pod, nil, kind, ReasonPreempting, "Preempting", "%s", msg)
	metrics.RecordPreemption(rs.Queue())
	logger.V(2).Info("Preempted for a pod", "pod", klog.KObj(pod), "queue", rs.Queue(), "node", node, "victims", len(victims), "pdbViolations", pdb)
}
