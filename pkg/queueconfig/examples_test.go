package queueconfig

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExamples loads every example config: each must be valid and have the
// leaf root.default, the scheduler's default queue.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found %d examples, want at least limits.yaml and multilevel.yaml", len(files))
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			cfg := mustParse(t, string(data))
			for _, p := range cfg.Partitions {
				def := p.Queue("root.default")
				if def == nil || def.IsParent {
					t.Errorf("partition %q: root.default is missing or not a leaf", p.Name)
				}
			}
		})
	}
}

func TestMultilevelExample(t *testing.T) {
	data, err := os.ReadFile("../../examples/multilevel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := mustParse(t, string(data)).Partition("default")
	want := []string{"root", "root.engineering", "root.engineering.frontend", "root.engineering.backend",
		"root.research", "root.research.gpu", "root.default"}
	got := paths(p)
	if len(got) != len(want) {
		t.Fatalf("queues %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("queues %v, want %v", got, want)
		}
	}
	fe := p.Queue("root.engineering.frontend")
	if fe.MaxApplications != 30 || len(fe.Limits) != 2 || fe.Limits[0].Users[0] != "bob" || fe.Limits[0].MaxApplications != 3 {
		t.Errorf("frontend: %+v", fe)
	}
	if l := p.Root.Limits; len(l) != 5 || l[4].Groups[0] != "*" {
		t.Errorf("root limits: %+v", l)
	}
}
