package userquota

import (
	"context"
	"crypto/tls"
	"fmt"

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
