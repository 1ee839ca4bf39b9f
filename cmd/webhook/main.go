// Command userquota-webhook serves the admission webhooks of pkg/webhook
// over HTTPS: the identity stamp on pods and workloads, schedulerName in
// enforced namespaces, and validation of the queue-config ConfigMap
// (docs/security.md).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/webhook"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "userquota-webhook:", err)
		os.Exit(1)
	}
}

// listFlag is a comma-separated, repeatable flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// options are the command's flags.
type options struct {
	certFile, keyFile, listen string
	trustedUsers              listFlag
	trustedGroups, submitters listFlag
	quotaGroups               string
	schedulerName             string
	configMap, configMapKey   string
	partition                 string
	// The scheduler's REST API, asked about pods/resize.
	schedulerURL, schedulerTokenFile, schedulerCAFile string
}

func parse(args []string) (*options, webhook.Config, error) {
	o := &options{}
	fs := flag.NewFlagSet("userquota-webhook", flag.ContinueOnError)
	fs.StringVar(&o.certFile, "tls-cert-file", "", "serving certificate (PEM), required")
	fs.StringVar(&o.keyFile, "tls-key-file", "", "serving key (PEM), required")
	fs.StringVar(&o.listen, "listen", ":8443", "listen address")
	fs.Var(&o.trustedUsers, "trusted-users", "regular expressions (whole name, comma-separated, repeatable) of users that may create objects carrying any user info: the controllers that copy it from templates (default: "+strings.Join(webhook.DefaultTrustedUsers, ",")+")")
	fs.Var(&o.trustedGroups, "trusted-groups", "regular expressions of groups whose members are trusted like --trusted-users")
	fs.Var(&o.submitters, "submitters", "regular expressions of users that submit for others (a workflow engine): they may set the user info to anyone")
	fs.StringVar(&o.quotaGroups, "quota-groups", "", "regular expression (whole name) of the requester's groups that count for quota; empty keeps every group")
	fs.StringVar(&o.schedulerName, "scheduler-name", "userquota-scheduler", "the scheduler's profile name")
	fs.StringVar(&o.configMap, "config-map", "userquota-system/userquota-config", "namespace/name of the queue-config ConfigMap to validate")
	fs.StringVar(&o.configMapKey, "config-map-key", "queues.yaml", "the ConfigMap key holding the queue config")
	fs.StringVar(&o.partition, "partition", webhook.DefaultPartition, "the partition the scheduler enforces (its UserQuota args' partition): a queue config without it is refused")
	fs.StringVar(&o.schedulerURL, "scheduler-url", "", "base URL of the scheduler's REST API (a headless Service, e.g. https://userquota-scheduler-rest.userquota-system.svc:9089: every address its host resolves to is asked until the leader answers), asked whether an in-place resize (pods/resize) of a running pod fits its quota; without it such resizes are allowed with a warning, not checked")
	fs.StringVar(&o.schedulerTokenFile, "scheduler-token-file", "", "bearer token (a file, read at each request: a projected ServiceAccount token) for --scheduler-url; its account needs get on the nonResourceURL of the resize check")
	fs.StringVar(&o.schedulerCAFile, "scheduler-ca-file", "", "CA (PEM) of --scheduler-url's serving certificate; empty uses the system's")
	klog.InitFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, webhook.Config{}, err
	}
	if o.certFile == "" || o.keyFile == "" {
		return nil, webhook.Config{}, errors.New("--tls-cert-file and --tls-key-file are required")
	}
	if len(o.trustedUsers) == 0 {
		o.trustedUsers = webhook.DefaultTrustedUsers
	}
	cfg := webhook.Config{SchedulerName: o.schedulerName, ConfigMapKey: o.configMapKey, Partition: o.partition}
	var err error
	if cfg.TrustedUsers, err = webhook.CompileList("--trusted-users", o.trustedUsers); err != nil {
		return nil, cfg, err
	}
	if cfg.TrustedGroups, err = webhook.CompileList("--trusted-groups", o.trustedGroups); err != nil {
		return nil, cfg, err
	}
	if cfg.Submitters, err = webhook.CompileList("--submitters", o.submitters); err != nil {
		return nil, cfg, err
	}
	if o.quotaGroups != "" {
		if cfg.QuotaGroups, err = webhook.Compile(o.quotaGroups); err != nil {
			return nil, cfg, fmt.Errorf("--quota-groups: %w", err)
		}
	}
	if o.schedulerURL != "" {
		if cfg.ResizeCheck, err = webhook.SchedulerResizeChecker(o.schedulerURL, o.partition, o.schedulerTokenFile, o.schedulerCAFile, nil); err != nil {
			return nil, cfg, err
		}
	}
	var ok bool
	if cfg.ConfigMapNamespace, cfg.ConfigMapName, ok = strings.Cut(o.configMap, "/"); !ok {
		return nil, cfg, fmt.Errorf("--config-map %q: want namespace/name", o.configMap)
	}
	return o, cfg, nil
}

func run(args []string) error {
	o, cfg, err := parse(args)
	if err != nil {
		return err
	}
	// The key pair is read at every handshake, so a renewed Secret (the
	// kubelet updates the mounted files) is served without a restart.
	getCert := func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		c, err := tls.LoadX509KeyPair(o.certFile, o.keyFile)
		return &c, err
	}
	if _, err := getCert(nil); err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	srv := newServer(o.listen, webhook.NewHandler(cfg), &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: getCert}, defaultTimeouts)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServeTLS("", "") }()
	klog.InfoS("Serving admission webhooks", "address", o.listen, "schedulerName", cfg.SchedulerName)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	}
}
