package userquota

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/placement"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// startPodHandler adds the plugin's own handler to the scheduler's pod
// informer. PreFilter waits for it to have seen every existing pod: the
// scheduler's WaitForHandlersSync does not cover plugin handlers. The
// informer's initial list is handled in one ordered pass once it is in
// (initialList), each pod's request read ahead of its charge on another
// goroutine (readAhead). The pods of other schedulers go to the elastic
// quotas' capacity.
func (pl *Plugin) startPodHandler(ctx context.Context) error {
	inf := pl.handle.SharedInformerFactory().Core().V1().Pods().Informer()
	logger := klog.Background().WithName(Name)
	initial := newInitialList(func(obj interface{}) { pl.onPod(logger, obj) })
	initial.pass = func(objs []heldObject) {
		readAhead(objs, func(h heldObject, p *preparedPod) { pl.preparePod(h.obj, p) },
			func(h heldObject, p *preparedPod) { pl.onPodEvent(logger, nil, h.obj, p) })
	}
	reg, err := inf.AddEventHandler(initial.handler(
		func(old, obj interface{}) { pl.onPodUpdate(logger, old, obj) },
		func(obj interface{}) { pl.onPodDelete(logger, obj) }))
	if err != nil {
		return err
	}
	initial.listed = reg.HasSynced
	go initial.run(ctx)
	pl.podsSynced, pl.podsSyncedCh = initial.synced, initial.syncedChan()
	return nil
}

// waitPodsSynced waits until the pod handler has seen every existing pod
// (podsSynced); false when ctx ended first.
func (pl *Plugin) waitPodsSynced(ctx context.Context) bool {
	select {
	case <-pl.podsSyncedCh:
		return true
	case <-ctx.Done():
		return pl.podsSynced()
	}
}

// ours reports whether pod is this scheduler profile's.
func (pl *Plugin) ours(pod *v1.Pod) bool { return pod.Spec.SchedulerName == pl.profile }

// finished reports whether a bound pod's charge must be gone: it ended,
// or it is terminating and releaseOnTerminating is set (onPod's rule).
func (pl *Plugin) finished(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed ||
		p.DeletionTimestamp != nil && pl.args.ReleaseOnTerminating
}

// admitted lists the UIDs of the pods holding room (accounts).
func (pl *Plugin) admitted() []string { return pl.ugm.AdmittedKeys() }

// dropRunning drops the room held for a pod that runs (accounts).
func (pl *Plugin) dropRunning(uid types.UID) bool { return pl.ugm.DropRunning(string(uid)) }

// charged lists the UIDs of the pods holding a charge (accounts).
func (pl *Plugin) charged() []string { return pl.ledger.Pods() }

// onPodUpdate follows a pod from old to obj. When a relist finds a pod
// deleted and created again under the same name (a StatefulSet pod, a pod
// recreated while the watch was down), the informer hands over one update
// whose two sides have different UIDs: the old pod is gone, and its charge
// must go with it (kube-scheduler's own cache does the same).
func (pl *Plugin) onPodUpdate(logger klog.Logger, old, obj interface{}) {
	if replacedPod(old, obj) {
		pl.onPodDelete(logger, old)
		pl.onPod(logger, obj)
		return
	}
	prev, _ := old.(*v1.Pod)
	pl.onPodEvent(logger, prev, obj, nil)
}

// replacedPod reports whether an update's two sides are different pods.
func replacedPod(old, obj interface{}) bool {
	o, ok1 := old.(*v1.Pod)
	n, ok2 := obj.(*v1.Pod)
	return ok1 && ok2 && o.UID != n.UID
}

// onPod accounts a bound pod not yet charged (restart, failover), releases
// one that finished or (with releaseOnTerminating) is terminating, and
// follows in-place resizes.
func (pl *Plugin) onPod(logger klog.Logger, obj interface{}) { pl.onPodEvent(logger, nil, obj, nil) }

// onPodEvent is onPod for an update from prev (nil: an add, or prev is
// another pod), with the request read ahead (nil: none; the initial
// list's pass reads it ahead, readAhead).
func (pl *Plugin) onPodEvent(logger klog.Logger, prev *v1.Pod, obj interface{}, pre *preparedPod) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	if !pl.ours(pod) {
		pl.elastic.onForeignPod(pod)
		return
	}
	pl.elastic.podChanged(pod)
	if pod.Spec.NodeName == "" {
		if waiting(pod) {
			// Before start-up is over: for the start-up let-in to decide,
			// while PreEnqueue waits (holds.awaitStartUp).
			pl.held.seenPending(pod)
		}
		// The scheduler may have written Unschedulable over a held pod's
		// status (a refusal in a cycle): say held again.
		pl.status.recheck(pod)
		if pod.Spec.WorkloadRef != nil {
			pl.sayWorkloadMissing(pod)
		}
		return
	}
	// Bound: whatever was held for it is its charge now; a status that
	// said it was held says it was admitted.
	pl.held.forget(pod.UID)
	pl.placed.forget(pod.UID)
	pl.status.admitted(pod)
	pl.reclaim.forget(pod.UID)
	if pl.finished(pod) {
		pl.release(logger, pod)
		return
	}
	uid := string(pod.UID)
	if c, live := pl.ledger.Get(uid); live {
		if pod.DeletionTimestamp != nil {
			// On its way out: reclaim does not count it (reclaim.go).
			pl.reclaim.markLeaving(pod.UID, c.Request)
		}
		if requestFollowed(prev, pod) {
			return
		}
		res, err := pl.requests.of(pod)
		if err != nil || c.Request.Resources.Equal(res) {
			return
		}
		_, err = pl.ledger.Resize(uid, res)
		var over *ugm.Refusal
		switch {
		case errors.As(err, &over):
			logger.Info("Pod resized in place over a quota limit; the resize is charged anyway", "pod", klog.KObj(pod), "limit", over.Error())
			metrics.RecordResizeOverLimit()
		case err != nil:
			logger.Error(err, "Charging a pod resize", "pod", klog.KObj(pod))
		}
		if shrank(c.Request.Resources, res) {
			pl.onRelease(logger, c.Request)
		}
		return
	}
	if pl.chargeRunningPrepared(logger, pod, metrics.SourceRunning, pre) {
		// Checked first: the arguments of a log line not written cost
		// three allocations per pod a restart charges.
		if v := logger.V(4); v.Enabled() {
			v.Info("Charged a running pod found bound", "pod", klog.KObj(pod))
		}
		// A gang's pod this replica never saw pending (gangrebuild.go).
		pl.foundRunning(logger, pod)
	}
}

// requestFollowed reports whether a charged pod's update from prev leaves
// its request where the charge has it, so that it need not be summed
// again (3-5 µs of every status update, cold): prev was bound, so this
// handler followed its request when prev came (charged it from it, or
// resized the charge to it), and nothing the request is read from
// changed. An update that binds the pod is always summed: its charge was
// made from the pod the scheduling cycle had, which may be older than
// prev. A resize ugm could not apply (an overflow) is tried again at the
// next update that changes the pod's resources, not at every update.
func requestFollowed(prev, pod *v1.Pod) bool {
	return prev != nil && prev.Spec.NodeName != "" && resources.SameRequestInputs(prev, pod)
}

// chargeRunning charges a bound pod without a limit check, counted under
// source, and counts it apart when it went over a limit; false when it was
// charged already or could not be (logged).
func (pl *Plugin) chargeRunning(logger klog.Logger, pod *v1.Pod, source string) bool {
	return pl.chargeRunningPrepared(logger, pod, source, nil)
}

// chargeRunningPrepared is chargeRunning with the pod's request read
// ahead (nil: none).
func (pl *Plugin) chargeRunningPrepared(logger klog.Logger, pod *v1.Pod, source string, pre *preparedPod) bool {
	defer pl.held.forget(pod.UID)
	over, err := pl.ledger.ForceAllocate(string(pod.UID), pl.boundPodRequest(logger, pod, pre))
	switch {
	case err == nil:
		metrics.RecordIncrease(source)
		if over != nil {
			logger.Info("Pod found running is over a quota limit; charged anyway", "pod", klog.KObj(pod), "source", source, "limit", over.Error())
			metrics.RecordChargedOverLimit(source)
		}
		pl.elastic.recomputeSoon()
		return true
	case !errors.Is(err, ledger.ErrAlreadyAllocated):
		logger.Error(err, "Could not charge a running pod", "pod", klog.KObj(pod))
	}
	return false
}

// boundPodRequest is podRequest for a pod that already runs: it cannot be
// refused, so it never is. Placement runs as for a new pod (ACLs steer
// which rule places it, so it lands where it was admitted); when that
// refuses the pod (its ACLs, no rule, bad metadata), it is charged where
// placement puts it without ACLs, else to the defaults, loudly. pre is the
// request read ahead, used while it is still current (nil: none).
func (pl *Plugin) boundPodRequest(logger klog.Logger, pod *v1.Pod, pre *preparedPod) ugm.Request {
	cfg := pl.partition()
	if req, ok := pre.request(cfg); ok {
		return req
	}
	req, err := pl.podRequest(pod, cfg, pl.queues())
	if err == nil {
		return req
	}
	user, groups, uerr := podUser(pod, pl.args.DefaultUser)
	if uerr != nil {
		user, groups = pl.args.DefaultUser, nil
	}
	queue, create := pl.args.DefaultQueue, false
	if placed, perr := pl.placePod(pod, cfg, pl.queues(), user, groups, placement.Options{SkipACL: true}); perr == nil {
		queue, create = placed.Queue, placed.Create
	}
	res, rerr := pl.requests.of(pod)
	if rerr != nil {
		res = nil
	}
	logger.Error(err, "Running pod would not be admitted as a new pod; charging it anyway", "pod", klog.KObj(pod), "user", user, "queue", queue)
	return ugm.Request{User: user, Groups: groups, Queue: queue, Create: create, App: podApp(pod), Resources: res, NonPreemptible: !podPreemptible(pod),
		Trees: podTrees(pod)}
}

func (pl *Plugin) onPodDelete(logger klog.Logger, obj interface{}) {
	pod, ok := podFromObj(obj)
	if !ok {
		return
	}
	if !pl.ours(pod) {
		pl.elastic.onForeignPodDelete(pod.UID)
		return
	}
	pl.forgetPod(logger, pod.UID)
	pl.gangPodGone(logger, pod.UID)
	pl.reclaim.forget(pod.UID)
	pl.elastic.podGone(pod.UID)
	pl.release(logger, pod)
}

// release gives back a pod's charge once, then activates the refused pods
// the room may admit (release first, so they find it).
func (pl *Plugin) release(logger klog.Logger, pod *v1.Pod) {
	if c, ok := pl.releaseCharge(logger, pod.UID, metrics.SourceRelease); ok {
		if v := logger.V(4); v.Enabled() {
			v.Info("Released a pod's charge", "pod", klog.KObj(pod), "user", c.Request.User, "queue", c.Request.Queue)
		}
	}
}

// releaseCharge releases the charge of the pod with uid once, counted
// under source, and activates the refused pods the room may admit; false
// when there was no charge.
func (pl *Plugin) releaseCharge(logger klog.Logger, uid types.UID, source string) (ledger.Charge, bool) {
	c, released, err := pl.ledger.Release(string(uid))
	// After the release, never before: a preemption in between would see
	// the pod's usage both held and not leaving.
	pl.reclaim.released(uid)
	if err != nil {
		logger.Error(err, "Releasing a pod found an inconsistency", "podUID", uid)
	}
	if !released {
		return c, false
	}
	metrics.RecordDecrease(source)
	pl.onRelease(logger, c.Request)
	pl.waits.completed(&c.Request, c.Group())
	pl.elastic.recomputeSoon()
	return c, true
}

// shrank reports whether any resource went down from old to new.
func shrank(old, new resources.Vector) bool {
	for i, x := range old {
		if new.Get(resources.ID(i)) < x {
			return true
		}
	}
	return false
}
