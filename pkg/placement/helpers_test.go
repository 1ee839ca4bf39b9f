package placement

import (
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig"
)

// mustPartition parses a config and returns its "default" partition.
func mustPartition(t testing.TB, yaml string) *queueconfig.Partition {
	t.Helper()
	cfg, err := queueconfig.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config does not parse:\n%v\n%s", err, yaml)
	}
	p := cfg.Partition("default")
	if p == nil {
		t.Fatal("config has no default partition")
	}
	return p
}

// fakeQueues is a Queues view: path -> "leaf", "parent" or "draining".
type fakeQueues map[string]string

func (f fakeQueues) DynamicQueue(path string) (exists, leaf, draining bool) {
	switch f[path] {
	case "leaf":
		return true, true, false
	case "parent":
		return true, false, false
	case "draining":
		return true, true, true
	}
	return false, false, false
}
