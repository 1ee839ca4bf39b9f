package userquota

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/rest"
	"github.com/userquota/userquota/pkg/rest/dao"
	"github.com/userquota/userquota/pkg/ugm"
)

// startObservability registers the plugin's metrics, shows its usage on
// the scrape-time gauges and, unless restAddress is "", serves the usage
// REST API until ctx ends.
func (pl *Plugin) startObservability(ctx context.Context, leader rest.LeaderFunc) error {
	metrics.Register()
	unset := metrics.SetSource(&metrics.Source{
		Usage:      pl.ugm,
		Leader:     func() bool { ok, _ := leader(); return ok },
		PerUser:    pl.args.PerUserMetrics,
		Held:       pl.held.kinds,
		Admitted:   pl.ugm.AdmittedCount,
		OldestHeld: pl.held.oldest,
		Shares:     pl.elastic.gauges,
		Forest:     pl.ugm.Forest,
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
		Resize:    pl.checkResize,
		// Where a pod stands (explain.go).
		Why:        pl.why,
		Held:       pl.heldPods,
		HeldCounts: pl.held.queueCounts,
		Accounting: pl.books,
		Forest:     pl.ugm.Forest,
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

// errNotSynced: the resize check cannot answer before the pod handler has
// seen every pod (a charge may be missing).
var errNotSynced = errors.New("the scheduler has not yet seen every pod since it started")

// checkResize answers the REST API's resize check: whether the running pod
// pod.UID may grow to pod's requests (its new spec), by the check
// ledger.Resize would make (ledger.CheckResize: the growth alone, against
// the user, group and queues the pod is charged to). A pod not
// charged (not bound yet, another scheduler's) fits: nothing is checked
// for it here. A pod whose requests cannot be read (a hostile quantity)
// does not.
func (pl *Plugin) checkResize(pod *v1.Pod) (dao.ResizeCheck, error) {
	answer := dao.ResizeCheck{Pod: pod.Namespace + "/" + pod.Name, Fits: true}
	if pl.podsSynced == nil || !pl.podsSynced() {
		return answer, errNotSynced
	}
	if !pl.isCharged(pod.UID) {
		return answer, nil
	}
	answer.Charged = true
	res, err := pl.requests.of(pod)
	if err != nil {
		answer.Fits, answer.Reason = false, err.Error()
		return answer, nil
	}
	live, err := pl.ledger.CheckResize(string(pod.UID), res)
	if !live {
		// Released meanwhile: nothing to check.
		answer.Charged = false
		return answer, nil
	}
	var over *ugm.Refusal
	switch {
	case errors.As(err, &over):
		answer.Fits, answer.Reason = false, over.Error()
	case err != nil:
		// Not a limit (the queue left the config, an application
		// conflict): the resize would be charged anyway, as it is today.
		klog.Background().WithName(Name).V(2).Info("Resize check found no limit to refuse by", "pod", klog.KObj(pod), "err", err)
	}
	return answer, nil
}
