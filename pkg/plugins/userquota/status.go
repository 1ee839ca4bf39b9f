package userquota

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	apipod "k8s.io/kubernetes/pkg/api/v1/pod"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/rest"
)

// What a held pod's status says (docs/design.md, "What a held pod looks
// like").
const (
	// ConditionQuotaAdmitted is our own pod condition: False while the pod
	// is held for quota (its reason names the kind of limit, e.g.
	// UserLimit, its message the refusal), True once it was let in.
	ConditionQuotaAdmitted v1.PodConditionType = "userquota.io/QuotaAdmitted"
	// ReasonQuotaHeld is the reason of PodScheduled=False while the pod is
	// held, in place of the scheduler's Unschedulable: Cluster Autoscaler
	// and Karpenter add nodes only for Unschedulable pods, and no node
	// helps a pod its quota holds. It is also the Warning event's reason.
	ReasonQuotaHeld = "QuotaHeld"
	// ReasonAdmitted is ConditionQuotaAdmitted's reason once the pod is let
	// in.
	ReasonAdmitted = "Admitted"
)

// statusDefaults: the status client's own rate limit (the scheduler's
// client, which binds pods, is never used for it), and the writes' rate
// while this scheduler binds pods.
const (
	DefaultStatusQPS     = 20
	DefaultStatusBurst   = 50
	DefaultStatusBusyQPS = 1
)

// bindingWindow is how long after a pod's Reserve the scheduler counts as
// binding, for the status writer to give way (statusWriter.yield).
const bindingWindow = time.Second

// wantStatus is what a pod's status should say.
type wantStatus struct {
	namespace, name string
	held            bool
	kind            hold.Kind
	// reason is what holds the pod; its text, the conditions' message, is
	// made when the status is written: at the writer's rate (20 writes/s
	// by default) a large backlog's statuses are written over minutes,
	// and a pod let in before its turn never needs it. Reasons are never
	// changed once made (ugm's refusals, hold's errors).
	reason error
	// event: a Warning event is owed for this change.
	event bool
}

// message is the held pod's conditions' message: its reason's text.
func (w *wantStatus) message() string {
	if w.reason == nil {
		return ""
	}
	return w.reason.Error()
}

// statusWriter writes held pods' conditions asynchronously, through a
// client of its own, only when what holds a pod changes, and only on the
// leader: a pod's wanted status is kept, and written (or found written
// already, after a failover) when this replica leads. Its lock guards the
// wanted statuses; it is never held while writing.
//
// Its writes give way to the scheduler's bindings: the API server they
// load is the one that binds, and a held pod's explanation can wait where
// a pod that fits cannot. While a pod was reserved within bindingWindow
// it writes once every busyEvery at most (statusBusyQPS), and at the
// status client's rate otherwise; every wanted status is still written,
// and one that replaces the scheduler's Unschedulable never waits.
type statusWriter struct {
	client   kubernetes.Interface
	pods     corelisters.PodLister
	recorder events.EventRecorder
	leading  func() bool
	queue    workqueue.TypedRateLimitingInterface[types.UID]

	clock     clock.WithTicker
	busyEvery time.Duration
	// reserved is when a pod was last reserved (UnixNano; 0: never), set
	// by Reserve; lastWrite is the writer goroutine's own.
	reserved  atomic.Int64
	lastWrite time.Time

	mu   sync.Mutex
	want map[types.UID]*wantStatus
	// led: whether this replica led at the last look (a new leader writes
	// everything wanted).
	led bool
}

// newStatusWriter builds the plugin's status writer: a client of its own
// (the scheduler's kubeconfig, with statusQPS and statusBurst), and its
// own event recorder on it.
func (pl *Plugin) newStatusWriter(ctx context.Context, leader rest.LeaderFunc, c clock.WithTicker) (*statusWriter, error) {
	client := pl.handle.ClientSet()
	if cfg := pl.handle.KubeConfig(); cfg != nil {
		cfg = restclient.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = pl.args.StatusQPS, pl.args.StatusBurst
		var err error
		if client, err = kubernetes.NewForConfig(restclient.AddUserAgent(cfg, "userquota-status")); err != nil {
			return nil, fmt.Errorf("status client: %w", err)
		}
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("status events: %w", err)
	}
	recorder := broadcaster.NewRecorder(scheme.Scheme, pl.profile)
	w := newStatusWriter(client, pl.pods, recorder, func() bool { ok, _ := leader(); return ok })
	w.clock = c
	if pl.args.StatusBusyQPS < pl.args.StatusQPS {
		w.busyEvery = busyEvery(pl.args.StatusBusyQPS)
	}
	return w, nil
}

// newStatusWriter returns a status writer that never gives way to
// bindings (busyEvery 0), on the real clock.
func newStatusWriter(client kubernetes.Interface, pods corelisters.PodLister, recorder events.EventRecorder, leading func() bool) *statusWriter {
	return &statusWriter{
		client:   client,
		pods:     pods,
		recorder: recorder,
		leading:  leading,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.UID](),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "userquota-status"}),
		want:  map[types.UID]*wantStatus{},
		clock: clock.RealClock{},
	}
}

// busyEvery is the least time between two writes at qps writes a second
// (validated: at least minStatusBusyQPS).
func busyEvery(qps float32) time.Duration {
	return time.Duration(float64(time.Second) / float64(qps))
}

// binding records that this scheduler reserved a pod: the writes give way
// for bindingWindow.
func (w *statusWriter) binding() {
	if w != nil && w.busyEvery > 0 {
		w.reserved.Store(w.clock.Now().UnixNano())
	}
}

// urgent reports whether the pod uid's status says Unschedulable, as the
// scheduler writes after a refusal in a cycle: cluster autoscalers add
// nodes for such a pod, and no node helps a pod its quota holds, so its
// write never gives way.
func (w *statusWriter) urgent(uid types.UID) bool {
	w.mu.Lock()
	want := w.want[uid]
	var namespace, name string
	if want != nil {
		namespace, name = want.namespace, want.name
	}
	w.mu.Unlock()
	if want == nil {
		return false
	}
	pod, err := w.pods.Pods(namespace).Get(name)
	if err != nil || pod.UID != uid {
		return false
	}
	_, c := apipod.GetPodCondition(&pod.Status, v1.PodScheduled)
	return c != nil && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable
}

// yield returns once a write may be made: at once while the scheduler is
// not binding, else busyEvery after the last write (or when the binding
// stops), or when ctx ends.
func (w *statusWriter) yield(ctx context.Context) {
	for {
		now := w.clock.Now()
		idle := time.Unix(0, w.reserved.Load()).Add(bindingWindow)
		due := w.lastWrite.Add(w.busyEvery)
		if !now.Before(idle) || !now.Before(due) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-w.clock.After(min(idle.Sub(now), due.Sub(now))):
		}
	}
}

// held asks for pod's status to say it is held by kind, with reason's
// text, and for one Warning event.
func (w *statusWriter) held(pod *v1.Pod, kind hold.Kind, reason error) {
	w.set(pod, &wantStatus{namespace: pod.Namespace, name: pod.Name, held: true, kind: kind, reason: reason, event: true})
}

// admitted asks for pod's status to say it was let in, when it said it
// was held (a pod never held gets no write).
func (w *statusWriter) admitted(pod *v1.Pod) {
	w.mu.Lock()
	_, wanted := w.want[pod.UID]
	w.mu.Unlock()
	if wanted || heldCondition(pod) {
		w.set(pod, &wantStatus{namespace: pod.Namespace, name: pod.Name})
	}
}

// forget drops what is wanted for a pod that went away.
func (w *statusWriter) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.want, uid)
}

// recheck asks for a held pod's status to be written again when it does
// not say what is wanted (the scheduler wrote Unschedulable over it after a
// refusal in a cycle).
func (w *statusWriter) recheck(pod *v1.Pod) {
	w.mu.Lock()
	want := w.want[pod.UID]
	w.mu.Unlock()
	if want != nil && want.held && !saysHeld(pod, want) {
		w.queue.Add(pod.UID)
	}
}

func (w *statusWriter) set(pod *v1.Pod, want *wantStatus) {
	w.mu.Lock()
	w.want[pod.UID] = want
	w.mu.Unlock()
	w.queue.Add(pod.UID)
}

// run writes until ctx ends; it also watches for this replica becoming
// the leader, which writes everything wanted.
func (w *statusWriter) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName(Name)
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	go wait.UntilWithContext(ctx, func(context.Context) { w.watchLeadership() }, time.Second)
	for w.next(ctx, logger) {
	}
}

// watchLeadership queues every wanted status when this replica became the
// leader.
func (w *statusWriter) watchLeadership() {
	leads := w.leading()
	w.mu.Lock()
	became := leads && !w.led
	w.led = leads
	var uids []types.UID
	if became {
		for uid := range w.want {
			uids = append(uids, uid)
		}
	}
	w.mu.Unlock()
	for _, uid := range uids {
		w.queue.Add(uid)
	}
}

func (w *statusWriter) next(ctx context.Context, logger klog.Logger) bool {
	uid, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(uid)
	if w.busyEvery > 0 && !w.urgent(uid) {
		if w.yield(ctx); ctx.Err() != nil {
			return false
		}
	}
	if err := w.write(ctx, logger, uid); err != nil {
		logger.V(2).Info("Writing a held pod's status failed; retrying", "podUID", uid, "err", err)
		metrics.RecordStatusWrite(metrics.ResultFailed)
		w.queue.AddRateLimited(uid)
		return true
	}
	w.queue.Forget(uid)
	return true
}

// write makes the pod's status say what is wanted, unless it does.
func (w *statusWriter) write(ctx context.Context, logger klog.Logger, uid types.UID) error {
	w.mu.Lock()
	want := w.want[uid]
	var copied wantStatus
	if want != nil {
		copied = *want
	}
	w.mu.Unlock()
	if want == nil {
		return nil
	}
	if !w.leading() {
		// Followers keep what is wanted for when they lead; the skip
		// marks that this replica did not lead, so that leading at the
		// next look writes everything, even if it led at the last one.
		w.mu.Lock()
		w.led = false
		w.mu.Unlock()
		return nil
	}
	pod, err := w.pods.Pods(copied.namespace).Get(copied.name)
	if apierrors.IsNotFound(err) || err == nil && (pod.UID != uid || copied.held && pod.Spec.NodeName != "") {
		// Gone, or bound while a hold was still to be written.
		w.forget(uid)
		return nil
	}
	if err != nil {
		return err
	}
	status := pod.Status.DeepCopy()
	changed := false
	for _, c := range conditionsFor(&copied) {
		c.ObservedGeneration = apipod.CalculatePodConditionObservedGeneration(&pod.Status, pod.Generation, c.Type)
		changed = apipod.UpdatePodCondition(status, c) || changed
	}
	if changed {
		if err := schedutil.PatchPodStatus(ctx, w.client, pod.Name, pod.Namespace, &pod.Status, status); err != nil {
			if apierrors.IsNotFound(err) {
				w.forget(uid)
				return nil
			}
			return err
		}
		metrics.RecordStatusWrite(metrics.ResultWritten)
		w.lastWrite = w.clock.Now()
	}
	w.mu.Lock()
	event := w.want[uid] == want && want.event
	if w.want[uid] == want {
		want.event = false
		if !want.held {
			// Let in: nothing more to keep saying.
			delete(w.want, uid)
		}
	}
	w.mu.Unlock()
	if event && changed {
		w.recorder.Eventf(pod, nil, v1.EventTypeWarning, ReasonQuotaHeld, "Hold", "Held by quota (%s limit): %s", copied.kind, copied.message())
	}
	logger.V(4).Info("Held pod status written", "pod", klog.KObj(pod), "held", copied.held, "kind", copied.kind, "changed", changed)
	return nil
}

// conditionsFor returns the conditions a pod's status must have.
// (UpdatePodCondition sets the transition time.)
func conditionsFor(want *wantStatus) []*v1.PodCondition {
	if !want.held {
		return []*v1.PodCondition{{Type: ConditionQuotaAdmitted, Status: v1.ConditionTrue, Reason: ReasonAdmitted, Message: "let in by quota"}}
	}
	return []*v1.PodCondition{
		{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: ReasonQuotaHeld, Message: hold.MessagePrefix + want.message()},
		{Type: ConditionQuotaAdmitted, Status: v1.ConditionFalse, Reason: string(want.kind) + "Limit", Message: want.message()},
	}
}

// saysHeld reports whether pod's status already says what want does.
func saysHeld(pod *v1.Pod, want *wantStatus) bool {
	_, sched := apipod.GetPodCondition(&pod.Status, v1.PodScheduled)
	_, ours := apipod.GetPodCondition(&pod.Status, ConditionQuotaAdmitted)
	return sched != nil && sched.Status == v1.ConditionFalse && sched.Reason == ReasonQuotaHeld &&
		ours != nil && ours.Status == v1.ConditionFalse && ours.Reason == string(want.kind)+"Limit"
}

// heldCondition reports whether pod's status says it is held for quota
// (written by this replica or an earlier leader).
func heldCondition(pod *v1.Pod) bool {
	_, c := apipod.GetPodCondition(&pod.Status, ConditionQuotaAdmitted)
	return c != nil && c.Status == v1.ConditionFalse
}
