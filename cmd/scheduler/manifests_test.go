package main

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/userquota/userquota/pkg/plugins/userquota"
	"github.com/userquota/userquota/pkg/queueconfig"
)

// TestSchedulerConfig loads manifests/scheduler-config.yaml the way the
// binary does and checks the profile: our schedulerName, UserQuota at
// PreFilter and Reserve and as the only PostFilter, and args that decode
// and validate.
func TestSchedulerConfig(t *testing.T) {
	cfg, err := options.LoadConfigFromFile(klog.Background(), filepath.Join("..", "..", "manifests", "scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != "userquota-scheduler" {
		t.Fatalf("profiles = %+v, want one named userquota-scheduler", cfg.Profiles)
	}
	p := cfg.Profiles[0]
	enabled := func(set []string) bool {
		for _, n := range set {
			if n == userquota.Name {
				return true
			}
		}
		return false
	}
	var pre, res []string
	for _, pl := range p.Plugins.PreFilter.Enabled {
		pre = append(pre, pl.Name)
	}
	for _, pl := range p.Plugins.Reserve.Enabled {
		res = append(res, pl.Name)
	}
	if !enabled(pre) || !enabled(res) {
		t.Fatalf("UserQuota not enabled at PreFilter %v and Reserve %v", pre, res)
	}
	// UserQuota's preemption replaces DefaultPreemption (docs/reclaim.md):
	// two PostFilter plugins would both preempt.
	var post []string
	for _, pl := range p.Plugins.PostFilter.Enabled {
		post = append(post, pl.Name)
	}
	if len(post) != 1 || post[0] != userquota.Name {
		t.Fatalf("PostFilter plugins %v, want only UserQuota", post)
	}
	found := false
	for _, pc := range p.PluginConfig {
		if pc.Name != userquota.Name {
			continue
		}
		found = true
		args, err := userquota.ParseArgs(pc.Args)
		if err != nil {
			t.Fatalf("args: %v", err)
		}
		if args.ConfigMapNamespace != "userquota-system" || args.ConfigMapName != "userquota-config" || args.DefaultQueue != "root.default" {
			t.Fatalf("args = %+v", args)
		}
	}
	if !found {
		t.Fatal("no pluginConfig for UserQuota")
	}
}

// TestLocalQueueConfig checks that the ConfigMap make run applies holds a
// valid queue config with the scheduler's default queue.
func TestLocalQueueConfig(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "manifests", "local", "configmap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cm v1.ConfigMap
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&cm); err != nil {
		t.Fatal(err)
	}
	cfg, err := queueconfig.Parse([]byte(cm.Data["queues.yaml"]))
	if err != nil {
		t.Fatalf("queues.yaml in the local ConfigMap:\n%v", err)
	}
	if p := cfg.Partition("default"); p == nil || p.Queue("root.default") == nil {
		t.Fatal("the local config has no root.default")
	}
}
