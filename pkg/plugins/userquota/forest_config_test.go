package userquota

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/userquota/userquota/pkg/queueconfig"
)

// gpuTree is a GPU-model tree: org1 with 4 GPUs, 2 of them h100.
const gpuTree = `{"kind":"QuotaTree","metadata":{"name":"gpu"},
 "spec":{"resourceNames":["nvidia.com/gpu"],"nodes":{
  "org1":{"parent":"nil","hard":"true","quota":{"nvidia.com/gpu":"4"}},
  "a100-org1":{"parent":"org1","hard":"true","quota":{"nvidia.com/gpu":"4"}},
  "h100-org1":{"parent":"org1","hard":"true","quota":{"nvidia.com/gpu":"2"}}}}}`

// forestConfigMap is the plugin's ConfigMap with the queue config yaml
// and trees (key -> JSON).
func forestConfigMap(yaml string, trees map[string]string) *v1.ConfigMap {
	cm := configMap(yaml)
	for k, v := range trees {
		cm.Data[k] = v
	}
	return cm
}

// TestConfigTreesReload: the quota trees load with the queue config; a
// version with a bad tree changes nothing (the last good config, trees
// included, stays) and its Warning event names the key, the tree and the
// node; a plugin that starts on it holds every pod (fail closed).
func TestConfigTreesReload(t *testing.T) {
	good := forestConfigMap(sandboxConfig, map[string]string{"gpu.tree.json": gpuTree})
	e := newEnv(t, envOptions{objects: []runtime.Object{good}})
	cfg := e.pl.Config()
	if cfg == nil || cfg.Tree("gpu") == nil || cfg.Tree("gpu").Node("h100-org1") == nil {
		t.Fatalf("config in force %+v: no gpu tree", cfg)
	}
	want, err := queueconfig.LoadConfigMap(good.Data, DefaultConfigMapKey, DefaultPartition)
	if err != nil || cfg.Checksum != want.Checksum {
		t.Fatalf("checksum %s, want %s (%v)", cfg.Checksum, want.Checksum, err)
	}

	bad := forestConfigMap(sandboxConfig, map[string]string{"gpu.tree.json": strings.Replace(gpuTree, `"parent":"org1","hard":"true","quota":{"nvidia.com/gpu":"2"}`, `"parent":"org2","hard":"true","quota":{"nvidia.com/gpu":"2"}`, 1)})
	e.writeConfigMap(bad)
	e.waitFor("the InvalidQueueConfig event", func() bool { return len(e.recorder.list(ReasonInvalidConfig)) == 1 })
	note := e.recorder.list(ReasonInvalidConfig)[0].Note
	for _, w := range []string{`keys "queues.yaml" and "gpu.tree.json"`, `gpu.tree.json (tree "gpu"): node "h100-org1": parent "org2" is not a node of the tree`} {
		if !strings.Contains(note, w) {
			t.Errorf("event note %q lacks %q", note, w)
		}
	}
	if got := e.pl.Config(); got != cfg {
		t.Errorf("config in force changed on an invalid version")
	}

	e2 := newEnv(t, envOptions{objects: []runtime.Object{bad}})
	if err := e2.pl.held.configError(); err == nil || !strings.Contains(err.Error(), `parent "org2" is not a node of the tree`) {
		t.Errorf("started on a bad tree: config error %v, want every pod held naming it", err)
	}
}
