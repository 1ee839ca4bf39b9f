package userquota

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/rest"
)

// leaderCheck returns whether this replica leads. kube-scheduler elects
// its leader outside the plugin and builds the plugin on every replica
// (only the leader schedules; every replica accounts the running pods it
// sees).
//
// The answer comes from this process's own leader elector, read from
// leader_election_master_status (client-go's elector sets it to 1 while it
// holds the Lease, 0 otherwise): exact, even for two replicas on one host
// (hostNetwork), whose Lease holder identities share the host name. Before
// kube-scheduler creates its elector (after its caches sync) the replica
// does not lead while the Lease is held; the plugin watches the one Lease
// (an informer of its own on one namespace and name) to tell, and to name
// the holder. No Lease means no leader election: one replica, which leads.
func (pl *Plugin) leaderCheck(ctx context.Context) (rest.LeaderFunc, error) {
	return pl.leaderCheckFrom(ctx, legacyregistry.DefaultGatherer)
}

// leaderCheckFrom is leaderCheck reading the elector's gauge from g.
func (pl *Plugin) leaderCheckFrom(ctx context.Context, g metrics.Gatherer) (rest.LeaderFunc, error) {
	ns, name, ok := pl.args.LeaderLease()
	if !ok {
		return func() (bool, string) { return true, "" }, nil
	}
	factory := informers.NewSharedInformerFactoryWithOptions(pl.handle.ClientSet(), 0,
		informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	leases := factory.Coordination().V1().Leases()
	inf := leases.Informer()
	lw := &leaseWatch{ns: ns, name: name, lister: leases.Lister().Leases(ns), synced: inf.HasSynced, elector: &electorGauge{gather: g}}
	if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		msg := err.Error()
		lw.lastErr.Store(&msg)
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}); err != nil {
		return nil, fmt.Errorf("leader check: %w", err)
	}
	factory.Start(ctx.Done())
	go wait.UntilWithContext(ctx, func(ctx context.Context) { lw.elector.refresh(klog.FromContext(ctx)) }, electorRefresh)
	return lw.leading, nil
}

// electorRefresh is how often the elector's gauge is read: a new leader
// writes held pods' status within about a second of taking the Lease (a
// deposed kube-scheduler exits).
const electorRefresh = time.Second

// electorName is the name kube-scheduler gives its leader elector
// (LeaderElectionConfig.Name), the gauge's "name" label.
const electorName = "kube-scheduler"

// electorMetric is client-go's leader-election gauge, as component-base
// registers it.
const electorMetric = "leader_election_master_status"

// Elector states, as electorGauge keeps them.
const (
	electorNone int32 = iota // no elector in this process (yet)
	electorFollowing
	electorLeading
)

// electorGauge keeps this process's leader elector's state, read from the
// metrics registry (one Gather per refresh, none per question).
type electorGauge struct {
	gather metrics.Gatherer
	state  atomic.Int32
}

func (e *electorGauge) refresh(logger klog.Logger) {
	now := e.read()
	if was := e.state.Swap(now); was != now {
		logger.V(2).Info("Leader elector state", "leading", now == electorLeading, "elector", now != electorNone)
	}
}

// read finds the gauge; a Gather error (another collector's) leaves the
// families it did gather.
func (e *electorGauge) read() int32 {
	families, _ := e.gather.Gather()
	for _, f := range families {
		if f.GetName() != electorMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == electorName {
					if m.GetGauge().GetValue() == 1 {
						return electorLeading
					}
					return electorFollowing
				}
			}
		}
	}
	return electorNone
}

// leaseWatch answers the leader check from the elector's state and the
// informer's cache: no API call per request.
type leaseWatch struct {
	ns, name string
	lister   coordinationlisters.LeaseNamespaceLister
	synced   func() bool
	lastErr  atomic.Pointer[string]
	elector  *electorGauge
}

func (lw *leaseWatch) leading() (bool, string) {
	switch lw.elector.state.Load() {
	case electorLeading:
		return true, ""
	case electorFollowing:
		return false, fmt.Sprintf("this replica's leader elector does not hold the leader-election Lease %s/%s%s", lw.ns, lw.name, lw.heldBy())
	}
	if !lw.synced() {
		why := fmt.Sprintf("the leader-election Lease %s/%s is not listed yet", lw.ns, lw.name)
		if e := lw.lastErr.Load(); e != nil {
			why += ": " + *e
		}
		return false, why
	}
	lease, err := lw.lister.Get(lw.name)
	if apierrors.IsNotFound(err) {
		return true, ""
	}
	if err != nil {
		return false, err.Error()
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder == "" {
		return false, fmt.Sprintf("the leader-election Lease %s/%s has no holder (an election is under way)", lw.ns, lw.name)
	}
	return false, fmt.Sprintf("this replica's leader elector has not started (kube-scheduler starts it once its caches sync); the leader-election Lease %s/%s is held by %q", lw.ns, lw.name, holder)
}

// heldBy names the Lease's holder, as far as the cache knows it.
func (lw *leaseWatch) heldBy() string {
	if !lw.synced() {
		return ""
	}
	lease, err := lw.lister.Get(lw.name)
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return ""
	}
	return fmt.Sprintf(" (held by %q)", *lease.Spec.HolderIdentity)
}
