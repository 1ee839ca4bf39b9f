package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/userquota/userquota/test/internal/etcdtest"
)

// SchedulerName is the profile the scheduler serves and the test pods name
// in spec.schedulerName (as in manifests/scheduler-config.yaml).
const SchedulerName = "userquota-scheduler"

// SchedulerConfig is a KubeSchedulerConfiguration for one scheduler
// without leader election, with one profile, SchedulerName.
type SchedulerConfig struct {
	// Kubeconfig is clientConnection.kubeconfig: given --config,
	// kube-scheduler reads its kubeconfig from there, not from --kubeconfig.
	Kubeconfig string
	// QPS and Burst limit the scheduler's client.
	QPS, Burst int
	// UserQuota enables the plugin as manifests/scheduler-config.yaml does:
	// at PreFilter and Reserve, and at PostFilter in place of
	// DefaultPreemption. Without it the profile runs kube-scheduler's
	// default plugins (UserQuota registered, not enabled).
	UserQuota bool
	// Args are the UserQuota plugin's args (its pluginConfig); each value
	// is written as JSON (a string quoted, a bool or number bare).
	Args map[string]any
}

// YAML renders the config.
func (c SchedulerConfig) YAML() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: %d
  burst: %d
leaderElection:
  leaderElect: false
profiles:
- schedulerName: %s
`, c.Kubeconfig, c.QPS, c.Burst, SchedulerName)
	if c.UserQuota {
		b.WriteString(`  plugins:
    preEnqueue:
      enabled:
      - name: UserQuota
    preFilter:
      enabled:
      - name: UserQuota
    reserve:
      enabled:
      - name: UserQuota
    postFilter:
      disabled:
      - name: DefaultPreemption
      enabled:
      - name: UserQuota
`)
	}
	b.WriteString("  pluginConfig:\n  - name: UserQuota\n    args:\n")
	keys := make([]string, 0, len(c.Args))
	for k := range c.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := json.Marshal(c.Args[k])
		if err != nil {
			panic(fmt.Sprintf("scheduler arg %s: %v", k, err))
		}
		fmt.Fprintf(&b, "      %s: %s\n", k, v)
	}
	return []byte(b.String())
}

// ProductionSchedulerConfig returns production, the scheduler config of
// manifests/ (leader election on; UserQuota enabled), with what a process
// on this machine needs: clientConnection.kubeconfig (given --config,
// kube-scheduler reads it from there, not from --kubeconfig), the given
// leaderElection fields (shorter leases: a killed leader's expires sooner)
// and UserQuota args (a loopback REST address).
func ProductionSchedulerConfig(production []byte, kubeconfig string, leaderElection, args map[string]any) ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(production, &cfg); err != nil {
		return nil, err
	}
	cc, _ := cfg["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
	}
	cc["kubeconfig"] = kubeconfig
	cfg["clientConnection"] = cc
	le, _ := cfg["leaderElection"].(map[string]any)
	if le == nil || le["leaderElect"] != true {
		return nil, fmt.Errorf("leaderElection.leaderElect is not true")
	}
	for k, v := range leaderElection {
		le[k] = v
	}
	if err := setUserQuotaArgs(cfg, args); err != nil {
		return nil, err
	}
	return yaml.Marshal(cfg)
}

// WithUserQuotaArgs sets UserQuota args, of any type, in a scheduler
// config's every UserQuota pluginConfig (SchedulerConfig renders args as
// strings, which the plugin's strict decoding takes only for string
// fields).
func WithUserQuotaArgs(config []byte, args map[string]any) ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(config, &cfg); err != nil {
		return nil, err
	}
	if err := setUserQuotaArgs(cfg, args); err != nil {
		return nil, err
	}
	return yaml.Marshal(cfg)
}

// setUserQuotaArgs merges args into the UserQuota pluginConfig of every
// profile of a decoded scheduler config.
func setUserQuotaArgs(cfg, args map[string]any) error {
	profiles, _ := cfg["profiles"].([]any)
	found := false
	for _, p := range profiles {
		pm, _ := p.(map[string]any)
		pcs, _ := pm["pluginConfig"].([]any)
		for _, pc := range pcs {
			pcm, _ := pc.(map[string]any)
			if pcm["name"] != "UserQuota" {
				continue
			}
			a, _ := pcm["args"].(map[string]any)
			if a == nil {
				a = map[string]any{}
				pcm["args"] = a
			}
			for k, v := range args {
				a[k] = v
			}
			found = true
		}
	}
	if !found {
		return fmt.Errorf("scheduler config: no pluginConfig for UserQuota")
	}
	return nil
}

// Scheduler is the userquota-scheduler binary, the one that ships, run as
// a process of its own: two schedulers with leader election cannot share
// one process (kube-scheduler registers process-global state), and a
// process's CPU time and memory are its own.
type Scheduler struct {
	*Process
	// SecurePort is where its HTTPS server (/healthz, /readyz, /metrics,
	// /debug/pprof) listens on 127.0.0.1.
	SecurePort int
}

// SchedulerOptions say how to run a Scheduler.
type SchedulerOptions struct {
	// Name names the process in messages and its log files.
	Name string
	// Binary is the userquota-scheduler binary.
	Binary string
	// Config (a KubeSchedulerConfiguration) is written to ConfigFile.
	Config     []byte
	ConfigFile string
	// Kubeconfig authenticates and authorizes the requests to the HTTPS
	// server (TokenReview, SubjectAccessReview), as a pod's ServiceAccount
	// does in a cluster.
	Kubeconfig string
	// LogDir holds the log files (Process.LogDir).
	LogDir string
	// Verbosity is --v (the production Deployment runs 2).
	Verbosity int
}

// NewScheduler writes the config and returns the scheduler, not started,
// with its HTTPS server on a free loopback port.
func NewScheduler(o SchedulerOptions) (*Scheduler, error) {
	port, err := etcdtest.FreePort()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(o.ConfigFile, o.Config, 0o600); err != nil {
		return nil, err
	}
	return &Scheduler{SecurePort: port, Process: &Process{
		Name: o.Name, Path: o.Binary, LogDir: o.LogDir,
		Args: []string{
			"--config=" + o.ConfigFile,
			"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
			"--authentication-kubeconfig=" + o.Kubeconfig, "--authorization-kubeconfig=" + o.Kubeconfig,
			fmt.Sprintf("--v=%d", o.Verbosity),
		},
	}}, nil
}

// Get GETs path from the scheduler's HTTPS server, with the bearer token
// unless it is empty.
func (s *Scheduler) Get(ctx context.Context, path, token string) (int, []byte, error) {
	return Get(ctx, fmt.Sprintf("https://127.0.0.1:%d%s", s.SecurePort, path), token)
}
