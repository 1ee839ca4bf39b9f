// Package queueconfigtest builds queue configs for tests: every package
// that tests against a config parses it the same way, failing the test
// with the parser's problems. RepoRoot finds the repository's files (the
// compatibility corpus among them) from any test's folder.
package queueconfigtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig"
)

// Sandbox is a small config: sue may use 2 cpu and 4Gi in root.sandbox,
// group dev 3 cpu; the queue itself 4 cpu, 8Gi and 3 applications;
// root.default has no limits.
var Sandbox = Root(`
queues:
- name: default
- name: sandbox
  maxapplications: 3
  resources:
    max: {vcore: 4, memory: 8Gi}
  limits:
  - limit: sue
    users: [sue]
    maxresources: {vcore: 2, memory: 4Gi}
  - limit: dev
    groups: [dev]
    maxresources: {vcore: 3}
`)

// Gangs is issue 19's queue, where gangs are proved: root.g runs 20 cpu
// at most, each user 16 cpu there (two gangs of 8 x 1 cpu fit, a third
// does not); root.default has no limits.
var Gangs = Root(`
submitacl: "*"
queues:
- name: default
- name: g
  resources: {max: {vcore: 20}}
  limits:
  - limit: everyone
    users: ["*"]
    maxresources: {vcore: 16}
`)

// Root is a config of one partition, default, whose root queue is body:
// root's keys (queues, limits, properties...) written from column 0.
func Root(body string) string {
	var b strings.Builder
	b.WriteString("partitions:\n- name: default\n  queues:\n  - name: root\n")
	for _, line := range strings.Split(strings.TrimPrefix(body, "\n"), "\n") {
		if line != "" {
			b.WriteString("    " + line)
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// StockWithUserLimit is YuniKorn's stock config (the compatibility
// corpus's file 19: the placement rule tag namespace with create, root
// submitacl '*') with a wildcard user limit of 2 cpu added on root.
func StockWithUserLimit(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(t), "pkg", "queueconfig", "testdata", "yunikorn-configs", "19-default-helm-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(string(data), "\n") + `
      limits:
        - limit: everyone
          users: ["*"]
          maxresources: {vcore: 2}
`
}

// RepoRoot is the folder holding go.mod, above the test's folder.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// MustParse parses a whole config or fails the test with every problem.
func MustParse(t testing.TB, yaml string) *queueconfig.Config {
	t.Helper()
	cfg, err := queueconfig.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config does not parse:\n%v\n%s", err, yaml)
	}
	return cfg
}

// MustPartition parses a config and returns its "default" partition, or
// fails the test.
func MustPartition(t testing.TB, yaml string) *queueconfig.Partition {
	t.Helper()
	p := MustParse(t, yaml).Partition("default")
	if p == nil {
		t.Fatal("config has no default partition")
	}
	return p
}
