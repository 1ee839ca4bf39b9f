package userquota

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/rest"
)

// startObservability registers the plugin's metrics, shows its usage on
// the scrape-time gauges and, unless restAddress is "", serves the usage
// REST API until ctx ends.
func (pl *Plugin) startObservability(ctx context.Context, leader rest.LeaderFunc) error {
	metrics.Register()
	unset := metrics.SetSource(&metrics.Source{
		Usage:    pl.ugm,
		Leader:   func() bool { ok, _ := leader(); return ok },
		PerUser:  pl.args.PerUserMetrics,
		Held:     pl.held.kinds,
		Admitted: pl.ugm.AdmittedCount,
	})
	go func() {
		<-ctx.Done()
		unset()
	}()

	addr := *pl.args.RESTAddress
	if addr == "" {
		return nil
	}
	opts := rest.Options{
		Partition: pl.args.Partition,
		Usage:     pl.ugm,
		Config:    pl.Config,
		Leader:    leader,
		Shares:    pl.ugm.Shares,
		Pending:   pl.elastic.pendingByQueue,
	}
	var tlsConfig *tls.Config
	var err error
	if pl.args.RESTAuthEnabled() {
		cs := pl.handle.ClientSet()
		if opts.Auth, err = rest.DelegatingAuth(cs.AuthenticationV1(), cs.AuthorizationV1()); err != nil {
			return fmt.Errorf("REST API: %w", err)
		}
		if tlsConfig, err = rest.TLSConfig(ctx, pl.args.RESTCertFile, pl.args.RESTKeyFile); err != nil {
			return fmt.Errorf("REST API: %w", err)
		}
	} else {
		klog.FromContext(ctx).Info("WARNING: the usage REST API serves plain HTTP without authentication (restAuth: false); it names users and groups", "address", addr)
	}
	rest.Serve(klog.NewContext(ctx, klog.FromContext(ctx).WithName(Name)), rest.ServeOptions{
		Address: addr,
		Handler: rest.NewHandler(opts),
		TLS:     tlsConfig,
	})
	return nil
}

// leaderCheck returns whether this replica leads. kube-scheduler elects
// its leader outside the plugin, with a Lease whose holder is
// "<hostname>_<uuid>", and builds the plugin on every replica (only the
// leader schedules; every replica accounts the running pods it sees). So
// the plugin watches that one Lease (an informer of its own on one
// namespace and name) and leads when the holder's host is its hostname.
// No Lease means no leader election: one replica, which leads.
func (pl *Plugin) leaderCheck(ctx context.Context) (rest.LeaderFunc, error) {
	ns, name, ok := pl.args.LeaderLease()
	if !ok {
		return func() (bool, string) { return true, "" }, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("leader check: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(pl.handle.ClientSet(), 0,
		informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	leases := factory.Coordination().V1().Leases()
	inf := leases.Informer()
	lw := &leaseWatch{ns: ns, name: name, host: host, lister: leases.Lister().Leases(ns), synced: inf.HasSynced}
	if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		msg := err.Error()
		lw.lastErr.Store(&msg)
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}); err != nil {
		return nil, fmt.Errorf("leader check: %w", err)
	}
	factory.Start(ctx.Done())
	return lw.leading, nil
}

// leaseWatch answers the leader check from the informer's cache: no API
// call per request.
type leaseWatch struct {
	ns, name, host string
	lister         coordinationlisters.LeaseNamespaceLister
	synced         func() bool
	lastErr        atomic.Pointer[string]
}

func (lw *leaseWatch) leading() (bool, string) {
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
	if holderHost(holder) == lw.host {
		return true, ""
	}
	return false, fmt.Sprintf("the leader-election Lease %s/%s is held by %q; this replica is %q", lw.ns, lw.name, holder, lw.host)
}

// holderHost is the host part of a kube-scheduler holder identity,
// "<hostname>_<uuid>" (a UUID has no "_").
func holderHost(holder string) string {
	if i := strings.LastIndexByte(holder, '_'); i >= 0 {
		return holder[:i]
	}
	return holder
}
