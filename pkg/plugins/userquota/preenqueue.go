package userquota

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/userquota/userquota/pkg/hold"
)

var _ fwk.PreEnqueuePlugin = &Plugin{}

// PreEnqueue holds a pod its quota cannot take now out of the active
// queue (docs/design.md, "Hold and let in"): it costs no scheduling cycle,
// no preemption attempt and no API write per retry, and is let in by
// Activate when room frees (letin.go). A pod it lets pass gets room held
// (an admission), so a burst passes only as far as the limits go;
// PreFilter and Reserve still decide and commit. It runs under the
// scheduling queue's lock: no API call, no waiting, and none of our locks
// is held while the framework is called.
func (pl *Plugin) PreEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	if len(pod.Spec.SchedulingGates) > 0 {
		// The SchedulingGates plugin holds it; it is no demand on quota
		// until ungated (then PreEnqueue runs again).
		return nil
	}
	// At start-up, wait (bounded) for the pods that waited to be decided:
	// this pod then goes to the active queue or is held by what holds it.
	pl.held.awaitStartUp()
	if pl.held.starting(pod) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, hold.StartingError{}.Error())
	}
	// Here the pod is out of any scheduling cycle.
	echo := pl.held.enqueued(pod.UID)
	if s := pl.holdForConfig(ctx, pod); s != nil {
		return s
	}
	req, reason := pl.admitPod(pod, nil)
	if reason == nil && pl.gone(pod) {
		// Deleted meanwhile: its delete may have been handled before the
		// admission. The let-in of the room goes off the queue's lock
		// (Activate takes it).
		logger := klog.FromContext(ctx)
		go pl.dropRoom(logger, pod.UID)
		return nil
	}
	if reason == nil {
		logger := klog.FromContext(ctx)
		if entry := pl.held.letIn(pod.UID); entry != nil {
			logger.V(4).Info("Pod let in", "pod", klog.KObj(pod))
			if pl.held.hasBehind(entry.Key) {
				// Let in here, not by a let-in: the pods held behind it
				// are tried off the queue's lock.
				go pl.openBehind(logger, entry.Key)
			}
		}
		if echo {
			// Let in during its cycle: this call may be the queue putting
			// it in the backoff queue.
			pl.held.echo(logger, pod)
		}
		pl.status.admitted(pod)
		return nil
	}
	pl.holdPod(klog.FromContext(ctx), pod, req, reason, false)
	if pl.goneOrBound(pod) {
		// A stale copy: the pod was bound or deleted meanwhile, and its
		// handler may have forgotten it before this hold.
		pl.held.forget(pod.UID)
		pl.status.forget(pod.UID)
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason.Error())
}

// holdForConfig holds pod while no valid queue config is in force and the
// ConfigMap's does not load (fail closed: docs/design.md, "Config"), and
// returns the status that says so; nil when pods are decided. A valid
// config lets the held pods in (onConfigChange). One that came while this
// pod was being held may have taken its list of held pods before the pod
// was in it: then the config error is gone (for good: once a valid config
// is in force an invalid one never replaces it) and the free counter
// moved, and the pod is let in here, off the queue's lock.
func (pl *Plugin) holdForConfig(ctx context.Context, pod *v1.Pod) *fwk.Status {
	frees := pl.held.freed()
	reason := pl.held.configError()
	if reason == nil {
		return nil
	}
	pl.holdPod(klog.FromContext(ctx), pod, nil, reason, false)
	if pl.goneOrBound(pod) {
		pl.held.forget(pod.UID)
		pl.status.forget(pod.UID)
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason.Error())
	}
	if pl.held.freed() != frees && pl.held.configError() == nil {
		if p := pl.held.get(pod.UID); p != nil {
			go pl.letIn(klog.FromContext(ctx), []*hold.Pod{p}, true)
		}
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason.Error())
}

// startUp waits, off the scheduling path, until every running pod is
// accounted and the gang objects watched (Workloads, PodGroups: those
// whose API is served) are all seen (and, with elastic queues, a share
// table computed from whole state), rebuilds the gang reservations
// (gangrebuild.go), which read those objects, then decides the pods that
// waited meanwhile (seen by the pod handler, or held by PreEnqueue once
// its wait was over), in let-in order (letInWaiting), which releases
// PreEnqueue's wait (awaitStartUp).
func (pl *Plugin) startUp(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName(Name)
	if !pl.waitPodsSynced(ctx) || !cache.WaitForCacheSync(ctx.Done(), pl.objects.synced...) {
		return
	}
	pl.elastic.ensure(ctx, logger)
	pl.rebuildGangs(logger)
	pods, queued := pl.held.started()
	if len(pods) > 0 {
		logger.V(2).Info("Running pods accounted: deciding the pods that waited", "count", len(pods))
		pl.letInWaiting(logger, pods, queued)
	}
	pl.held.startUpDecided()
}
