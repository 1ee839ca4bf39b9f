package userquota

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// sharesDebounce is how long the recompute waits after the first change
// it is asked for, so that a burst of pod and node events costs one
// recompute.
const sharesDebounce = 100 * time.Millisecond

// ReasonSharesScaled is the event reason when the children's guaranteed
// shares of a queue do not fit in its share (capacity was lost).
const ReasonSharesScaled = "GuaranteedScaledDown"

// elasticQuotas keeps the runtime shares of elastic queues in force
// (docs/elastic.md): the cluster's capacity and the pending demand, fed
// by informer handlers, and the debounced recompute that puts a new share
// table in ugm. Without elastic queues in the config in force none of it
// runs. Its lock serializes recomputes; under it the pending pods' lock
// (which places pods, so ugm's read lock nests inside it), the capacity's
// lock and ugm's are each taken, one after the other.
type elasticQuotas struct {
	ugm   *ugm.Manager
	clock clock.Clock
	// request works out a pending pod's request against a partition.
	request func(*v1.Pod, *queueconfig.Partition) (ugm.Request, error)
	// charged reports a pod reserved but not bound yet (usage holds it).
	charged func(types.UID) bool
	// changed is called after a recompute changed some runtime share.
	changed func(klog.Logger)
	// recorder and configMap: where a scaled-down guarantee is reported.
	recorder  events.EventRecorder
	configMap *v1.ObjectReference

	pending  *pendingPods
	capacity *capacity
	// gauges show the shares in force and what each queue borrows
	// (metrics), set at each recompute.
	gauges *metrics.ShareGauges
	// sharesSet is told the guaranteed share of every elastic queue each
	// time a share table is put in force (nil: none), under e.mu: the
	// books of resource-seconds (accounting.go).
	sharesSet func(map[string]resources.Vector)
	kick      chan struct{}
	// capacitySynced reports whether the capacity handlers saw every node
	// and pod; synced that a table was computed after that.
	capacitySynced func() bool
	synced         atomic.Bool

	mu sync.Mutex
	// scaled is what the last recompute reported as scaled down.
	scaled map[string]bool
}

func newElasticQuotas(m *ugm.Manager, c clock.Clock, requests podRequests) *elasticQuotas {
	return &elasticQuotas{
		ugm:            m,
		clock:          c,
		pending:        newPendingPods(),
		capacity:       newCapacity(requests),
		gauges:         &metrics.ShareGauges{},
		kick:           make(chan struct{}, 1),
		capacitySynced: func() bool { return true },
	}
}

// on reports whether the config in force has elastic queues.
func (e *elasticQuotas) on() bool { return e.ugm.InForce().Elastic }

// recomputeSoon asks for a recompute (a no-op without elastic queues).
func (e *elasticQuotas) recomputeSoon() {
	if !e.on() {
		return
	}
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// podChanged follows one of our pods for the demand.
func (e *elasticQuotas) podChanged(pod *v1.Pod) {
	if e.pending.update(pod) {
		e.recomputeSoon()
	}
}

// podGone forgets one of our pods.
func (e *elasticQuotas) podGone(uid types.UID) {
	if e.pending.remove(uid) {
		e.recomputeSoon()
	}
}

// decided records whether a pod's last decision was a user or group
// refusal (then it is no demand: it cannot use a share).
func (e *elasticQuotas) decided(uid types.UID, userBound bool) {
	if e.on() && e.pending.setUserBound(uid, userBound) {
		e.recomputeSoon()
	}
}

// run recomputes the shares after changes, debounced, until ctx ends.
func (e *elasticQuotas) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName(Name)
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		}
		select {
		case <-ctx.Done():
			return
		case <-e.clock.After(sharesDebounce):
		}
		// Changes during the wait are in this recompute.
		select {
		case <-e.kick:
		default:
		}
		e.recompute(logger)
	}
}

// ensure computes a table synchronously, once every running pod, node and
// foreign pod has been seen, when shares are on and no such table is in
// force yet: no pod is decided on a table computed from partial state at
// start-up. PreFilter calls it after the pod handler synced.
func (e *elasticQuotas) ensure(ctx context.Context, logger klog.Logger) {
	if !e.on() || e.synced.Load() && e.ugm.Shares() != nil {
		return
	}
	if !e.capacitySynced() {
		cache.WaitForCacheSync(ctx.Done(), e.capacitySynced)
	}
	e.recompute(logger)
	e.synced.Store(true)
}

// configChanged follows a new config: requests worked out under the old
// one are stale, and shares are dropped or recomputed at once, before the
// refused pods are retried.
func (e *elasticQuotas) configChanged(logger klog.Logger) {
	e.pending.invalidate()
	if !e.on() {
		e.ugm.SetShares(nil)
	}
	e.recompute(logger)
}

// recompute computes the shares from the usage, the pending pods and the
// capacity, puts them in force, shows them on the share gauges (with what
// each elastic queue borrows, on its usage now), and calls changed when
// any runtime share changed.
func (e *elasticQuotas) recompute(logger klog.Logger) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.on() {
		e.ugm.SetShares(nil)
		e.gauges.Set(nil)
		e.setGuaranteed(nil)
		return
	}
	pending := e.pendingByQueue()
	start := e.clock.Now()
	t := e.ugm.ComputeShares(pending, e.capacity.total())
	old := e.ugm.Shares()
	e.ugm.SetShares(t)
	elastic := e.ugm.ElasticQueues()
	e.gauges.Set(elastic)
	e.setGuaranteed(elastic)
	logger.V(5).Info("Shares recomputed", "queues", len(t.All()), "duration", e.clock.Since(start))
	e.reportScaling(logger, t)
	if t.RuntimesDiffer(old) && e.changed != nil {
		e.changed(logger)
	}
}

// setGuaranteed tells sharesSet the guaranteed shares now in force.
func (e *elasticQuotas) setGuaranteed(queues map[string]ugm.ElasticQueue) {
	if e.sharesSet != nil {
		e.sharesSet(guaranteedOf(queues))
	}
}

// pendingByQueue is the demand of the pending pods by leaf queue path, as
// the share computation counts it (the REST queues endpoint shows it).
func (e *elasticQuotas) pendingByQueue() map[string]resources.Vector {
	cfg := e.ugm.InForce().Partition
	return e.pending.byQueue(func(pod *v1.Pod) (ugm.Request, error) { return e.request(pod, cfg) }, e.charged)
}

// reportScaling logs and raises an event on the config ConfigMap once when
// a queue's children's guaranteed shares stop fitting in its share, and
// logs once when they fit again. Callers hold e.mu.
func (e *elasticQuotas) reportScaling(logger klog.Logger, t *shares.Table) {
	now := map[string]bool{}
	for _, s := range t.Scaled {
		key := s.Parent + " " + s.Resource.Name()
		now[key] = true
		if e.scaled[key] {
			continue
		}
		msg := fmt.Sprintf("the guaranteed shares of the children of %s add up to %s %d, above its share %d: scaled down in proportion until capacity returns",
			s.Parent, s.Resource.Name(), s.Sum, s.Share)
		logger.Info("Guaranteed shares scaled down", "queue", s.Parent, "resource", s.Resource.Name(), "sum", s.Sum, "share", s.Share)
		if e.recorder != nil {
			e.recorder.Eventf(e.configMap, nil, v1.EventTypeWarning, ReasonSharesScaled, "ComputeShares", "%s", msg)
		}
	}
	for key := range e.scaled {
		if !now[key] {
			logger.Info("Guaranteed shares fit again", "queueAndResource", key)
		}
	}
	e.scaled = now
}

// watchCapacity feeds the capacity from the scheduler's node informer
// (its pods come from the plugin's pod handler, podsSynced its sync);
// every change asks for a recompute.
func (e *elasticQuotas) watchCapacity(f informers.SharedInformerFactory, podsSynced func() bool) error {
	nodes, err := f.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    e.onNode,
		UpdateFunc: func(_, obj interface{}) { e.onNode(obj) },
		DeleteFunc: e.onNodeDelete,
	})
	if err != nil {
		return err
	}
	e.capacitySynced = func() bool { return nodes.HasSynced() && podsSynced() }
	return nil
}

func (e *elasticQuotas) onNode(obj interface{}) {
	if n, ok := obj.(*v1.Node); ok && e.capacity.setNode(n) {
		e.recomputeSoon()
	}
}

func (e *elasticQuotas) onNodeDelete(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if n, ok := obj.(*v1.Node); ok && e.capacity.deleteNode(n.Name) {
		e.recomputeSoon()
	}
}

// onForeignPod and onForeignPodDelete follow the pods of other
// schedulers, which take capacity from ours: the plugin's pod handler
// hands them over (pods.go), one informer handler for both, since each
// handler is told of every pod (a restart's 100,000 twice).
func (e *elasticQuotas) onForeignPod(pod *v1.Pod) {
	if e.capacity.setForeign(pod) {
		e.recomputeSoon()
	}
}

func (e *elasticQuotas) onForeignPodDelete(uid types.UID) {
	if e.capacity.deleteForeign(uid) {
		e.recomputeSoon()
	}
}
