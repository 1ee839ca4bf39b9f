package queueconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzSeeds are handwritten inputs that reach corners the corpus does not.
var fuzzSeeds = []string{
	"",
	"---\n",
	"partitions: []\n",
	"partitions:\n  -\n",
	"partitions:\n  - queues: []\n",
	"partitions: &p\n  - queues:\n      - name: root\n        queues: *p\n",
	"a: &a [*a]\n",
	"partitions:\n  - queues:\n      - name: a\n        resources: {max: &m {memory: 1G, <<: *m}}\n",
	"partitions:\n  - queues:\n      - name: root\n        queues:\n          - name: a\n            resources: {max: {vcore: 10E, memory: -1, gpu: 50%}}\n",
	"partitions:\n  - limits: [{users: [\"*\", sue], groups: [\"*\"], maxresources: {memory: 0}}]\n    queues: [{name: root, limits: [{users: [bob]}]}]\n",
	"partitions:\n  - queues: [{name: root}]\n    placementrules: [{name: fixed, value: root.x.y, parent: {name: fixed, value: root}}]\n",
	"partitions:\n  - queues: [{name: root}]\n    nodesortpolicy: {type: x, resourceweights: {a: -1, b: .nan}}\n",
	"partitions:\n- queues:\n  - {name: a, maxapplications: 5, queues: [{name: b, maxapplications: 9, limits: [{users: [u], maxapplications: 10}]}]}\n",
	"partitions:\n  - queues:\n      - name: root\n        <<: {maxapplications: 3}\n",
	"checksum: x\npartitions:\n  - queues: [{name: root}]\n---\nmore: 1\n",
	"partitions:\n  - queues: [{name: root, queues: [{name: g, parent: true, childtemplate: {properties: {priority.offset: x}}}]}]\n    placementrules: [{name: secondaryGroup, create: true, value: v, parent: {name: primarygroup, parent: {name: fixed, value: g}}}, {name: tag}, {name: grp}]\n",
}

// FuzzParse checks that Parse never panics and always returns exactly one
// of a config or a non-empty *Errors, the same for the same input.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{corpusDir, "../../examples"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err != nil {
			if cfg != nil {
				t.Fatal("config returned with an error")
			}
			var errs *Errors
			if !errors.As(err, &errs) || errs.Len() == 0 {
				t.Fatalf("error is not a non-empty *Errors: %#v", err)
			}
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("Parse recovered from a panic:\n%v", err)
			}
			_, again := Parse(data)
			if again == nil || again.Error() != err.Error() {
				t.Fatalf("errors differ between two runs:\n%v\n---\n%v", err, again)
			}
			return
		}
		if cfg == nil || len(cfg.Partitions) == 0 || len(cfg.Checksum) != 64 {
			t.Fatalf("nil or empty config without an error: %+v", cfg)
		}
		for _, p := range cfg.Partitions {
			if p.Root == nil || p.Root.Path != "root" || p.Root.Parent != nil {
				t.Fatalf("partition %q: bad root %+v", p.Name, p.Root)
			}
			p.Walk(func(q *Queue) {
				if p.Queue(q.Path) != q {
					t.Fatalf("Queue(%q) does not find the queue", q.Path)
				}
				if q.Parent != nil && q.Path != q.Parent.Path+"."+q.Name {
					t.Fatalf("path %q under %q", q.Path, q.Parent.Path)
				}
				if len(q.Children) > 0 && !q.IsParent {
					t.Fatalf("%s has children but is not a parent", q.Path)
				}
			})
		}
	})
}
