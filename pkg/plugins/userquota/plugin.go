// Package userquota is the UserQuota scheduler plugin: it charges every pod
// of this scheduler to its user, group and queues in a User Group Manager
// and refuses a pod that would take any of them over a limit of the
// YuniKorn queue config held in a ConfigMap.
//
// Flow (admission.go): PreFilter checks (no commit) and stores the pod's
// request in the cycle state; Reserve commits through the pod ledger;
// Unreserve rolls back what Reserve committed. The plugin's own pod
// informer handler (pods.go) accounts bound pods it did not reserve
// (restart, failover), releases pods that finish or go away and then lets
// in the held pods a release can admit (letin.go). PreEnqueue
// (preenqueue.go) holds a pod its quota cannot take now out of the active
// queue (holds.go), and says so in its status (status.go). The config in
// force is ugm's (configmap.go); elastic shares (shares.go) and reclaim by
// preemption (postfilter.go) run beside.
//
// Plugin holds no lock: each part owns its state and its lock, and its
// methods lock and delegate. The order, where one lock is held while
// another is taken:
//
//	auditor.mu -> ledger.mu -> ugm.Manager.mu
//	elasticQuotas.mu -> pendingPods.mu -> ugm.Manager.mu (read)
//	elasticQuotas.mu -> capacity.mu
//	gangFinder.mu -> ledger.mu, ugm.Manager.mu, gangBook.mu (each alone)
//	holds.mu -> waits.mu (the let-in hook)
//	ledger.mu -> fairshare.History.mu (the ledger's observer)
//	ledger.mu -> accounting.Books.mu (the ledger's observer)
//	elasticQuotas.mu -> accounting.Books.mu (a share table put in force)
//	holds.mu -> fairshare.History.mu (the book's order)
//
// holds.mu, gangBook.mu, statusWriter.mu, reclaimBook.mu, preemptRun.mu,
// capacity.mu and pendingPods.mu are taken alone otherwise (placedPods.mu
// always): never while calling the
// ledger, ugm or the framework (PreEnqueue runs under the scheduling
// queue's lock, which Activate takes: no lock of ours is held across
// either). ugm.Decide runs placement under ugm's read lock; placement
// takes no lock of ours.
package userquota

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	"k8s.io/utils/clock"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"github.com/userquota/userquota/pkg/accounting"
	"github.com/userquota/userquota/pkg/fairshare"
	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// Name is the plugin's name in the scheduler configuration.
const Name = "UserQuota"

// syncTimeout bounds how long start-up waits for the config ConfigMap.
const syncTimeout = 2 * time.Minute

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
)

// Plugin is the UserQuota plugin: the framework's wiring over the parts
// that do the work.
type Plugin struct {
	handle fwk.Handle
	args   Args
	// profile is this scheduler profile's name: only pods naming it are ours.
	profile string
	ledger  *ledger.Ledger
	ugm     *ugm.Manager
	// requests sums a pod's requests under the scheduler's feature
	// gates, read once (requests.go).
	requests podRequests
	// podsSynced reports whether the pod handler saw every existing pod;
	// podsSyncedCh is closed then (waitPodsSynced).
	podsSynced   func() bool
	podsSyncedCh <-chan struct{}

	// pods is the scheduler's pod informer's store (podstore.go).
	pods    podStore
	held    *holds
	placed  *placedPods // requests PreEnqueue placed, for PreFilter (placed.go)
	waits   *waits      // completions and estimates of when held pods are let in (waits.go)
	gangs   *gangBook
	finder  gangFinder // the gang rebuild, then pods found running (gangrebuild.go)
	objects gangObjects
	status  *statusWriter
	elastic *elasticQuotas
	audit   *auditor
	// Reclaim (postfilter.go): the PostFilter's preemption machinery and
	// bookkeeping.
	evaluator *preemption.Evaluator
	reclaim   *reclaimBook
	// fair is the usage history that orders fair queues, fairStore its
	// ConfigMaps (fairshare.go).
	fair      *fairshare.History
	fairStore *shardStore
	// books are the resource-seconds of queues, groups and users,
	// booksStore their ConfigMaps (accounting.go).
	books      *accounting.Books
	booksStore *shardStore
}

// New is the plugin factory registered with the scheduler.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	var pgc pgclientset.Interface
	if cfg := h.KubeConfig(); cfg != nil {
		// PodGroups are a CRD: JSON, not the scheduler's protobuf.
		cfg = rest.CopyConfig(cfg)
		cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
		var err error
		if pgc, err = pgclientset.NewForConfig(cfg); err != nil {
			return nil, fmt.Errorf("PodGroup client: %w", err)
		}
	}
	return newPlugin(ctx, obj, h, clock.RealClock{}, pgc)
}

// newPlugin is New with the clock that times let-ins, holds, preemption
// delays and the share debounce (tests step a fake one), and the client
// of scheduler-plugins' PodGroups (nil: none).
func newPlugin(ctx context.Context, obj runtime.Object, h fwk.Handle, c clock.WithTickerAndDelayedExecution, pgc pgclientset.Interface) (*Plugin, error) {
	args, err := decodeArgs(obj)
	if err != nil {
		return nil, err
	}
	m := ugm.New()
	requests := newPodRequests(feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	pl := &Plugin{
		handle:   h,
		args:     args,
		profile:  h.ProfileName(),
		ledger:   ledger.New(m),
		ugm:      m,
		pods:     newPodStore(h.SharedInformerFactory().Core().V1().Pods().Informer().GetIndexer()),
		held:     newHolds(c, h.Activate, args.Starvation()),
		placed:   newPlacedPods(),
		gangs:    newGangBook(c),
		elastic:  newElasticQuotas(m, c, requests),
		requests: requests,
		reclaim:  newReclaimBook(c, h.Activate),
		waits:    newWaits(c),
	}
	pl.held.onLetIn = pl.waits.letIn
	pl.held.waitAtStartUp(args.StartUpHold())
	pl.newFairShare(c)
	pl.newAccounting(c)
	pl.elastic.request = func(pod *v1.Pod, cfg *queueconfig.Partition) (ugm.Request, error) {
		return pl.podRequest(pod, cfg, pl.queues())
	}
	pl.elastic.charged = pl.isCharged
	pl.elastic.changed = func(logger klog.Logger) {
		// A refusal racing the swap sees the free counter move and
		// retries itself.
		pl.onSharesChange(logger)
		// A queue may now be over its share: pods that found nothing to
		// preempt try again.
		pl.reclaim.activateWaiters(logger)
	}
	pl.elastic.recorder = h.EventRecorder()
	pl.elastic.configMap = &v1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: args.ConfigMapNamespace, Name: args.ConfigMapName}
	pl.evaluator = pl.newEvaluator()
	leader, err := pl.leaderCheck(ctx)
	if err != nil {
		return nil, err
	}
	if pl.status, err = pl.newStatusWriter(ctx, leader, c); err != nil {
		return nil, err
	}
	// The config must be in force before running pods are accounted: the
	// group of an application is resolved from it at its first pod.
	if err := pl.startConfigInformer(ctx); err != nil {
		return nil, err
	}
	// Before the pod handler charges the running pods.
	if err := pl.startFairShare(ctx, func() bool { ok, _ := leader(); return ok }); err != nil {
		return nil, err
	}
	if err := pl.startAccounting(ctx, func() bool { ok, _ := leader(); return ok }); err != nil {
		return nil, err
	}
	// Before the pod handler: it reads Workloads.
	if err := pl.startGangObjects(ctx, pgc); err != nil {
		return nil, err
	}
	if err := pl.startPodHandler(ctx); err != nil {
		return nil, err
	}
	if err := pl.elastic.watchCapacity(h.SharedInformerFactory(), pl.podsSynced); err != nil {
		return nil, err
	}
	pl.audit = &auditor{accounts: pl, pods: pl.pods, synced: pl.podsSynced, clock: c}
	go pl.elastic.run(ctx)
	go pl.audit.run(ctx)
	go pl.status.run(ctx)
	go pl.startUp(ctx)
	go pl.runFairShare(ctx)
	go pl.runAccounting(ctx, c)
	if err := pl.startObservability(ctx, leader); err != nil {
		return nil, err
	}
	return pl, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// Ledger returns the plugin's pod ledger (for the REST API and tests).
func (pl *Plugin) Ledger() *ledger.Ledger { return pl.ledger }

// Shares returns the share table in force (nil: shares are off).
func (pl *Plugin) Shares() *shares.Table { return pl.ugm.Shares() }

// Config returns the queue config in force, or nil.
func (pl *Plugin) Config() *queueconfig.Config { return pl.ugm.InForce().Config }

// partition returns the partition in force, or nil.
func (pl *Plugin) partition() *queueconfig.Partition { return pl.ugm.InForce().Partition }

// isCharged reports whether the pod holds a charge.
func (pl *Plugin) isCharged(uid types.UID) bool {
	_, live := pl.ledger.Get(string(uid))
	return live
}
