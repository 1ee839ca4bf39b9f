package reclaim

import (
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig"
)

func mustConfig(t testing.TB, yaml string) *queueconfig.Config {
	t.Helper()
	c, err := queueconfig.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config does not parse: %v", err)
	}
	return c
}
