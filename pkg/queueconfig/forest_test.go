package queueconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/resources"
)

func readTree(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "trees", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const oneQueue = "partitions:\n- name: default\n  queues:\n  - name: root\n"

// TestParseTreeSeed: the seed's TestTree (its trailing comma fixed) loads
// as the seed draws it; the seed's text as printed is refused at the
// trailing comma, naming the line.
func TestParseTreeSeed(t *testing.T) {
	tree, notices, errs := ParseTree("testtree.tree.json", []byte(readTree(t, "testtree.tree.json")))
	if errs != nil {
		t.Fatalf("refused: %v", errs)
	}
	if tree.Name != "TestTree" || tree.Label != "tree.userquota.io/TestTree" || tree.Root.Name != "A" || tree.Len() != 3 {
		t.Fatalf("tree %q label %q root %q, %d nodes", tree.Name, tree.Label, tree.Root.Name, tree.Len())
	}
	var walked []string
	tree.Walk(func(n *TreeNode) { walked = append(walked, n.Name+"<"+strings.Join(n.Path, "<")) })
	if diff := cmp.Diff([]string{"A<A", "B<B<A", "C<C<A"}, walked); diff != "" {
		t.Errorf("nodes and paths (-want,+got):\n%s", diff)
	}
	cpu, mem := resources.Intern("cpu"), resources.Intern("memory")
	for _, c := range []struct {
		node      string
		cpu, mem  int64
		soft, lea bool
	}{{"A", 10000, 256, false, false}, {"B", 2000, 64, false, true}, {"C", 6000, 64, true, true}} {
		n := tree.Node(c.node)
		gotCPU, _ := n.Quota.Get(cpu)
		gotMem, _ := n.Quota.Get(mem)
		if gotCPU != c.cpu || gotMem != c.mem || n.Soft != c.soft || n.Leaf() != c.lea {
			t.Errorf("node %s: cpu %d memory %d soft %v leaf %v, want %+v", c.node, gotCPU, gotMem, n.Soft, n.Leaf(), c)
		}
	}
	if len(notices) != 0 {
		t.Errorf("notices %q", notices)
	}

	_, _, errs = ParseTree("seed.json", []byte(readTree(t, "seed-testtree-trailing-comma.json")))
	if errs == nil || errs.Error() != "line 35: seed.json: invalid JSON: a comma before '}' (JSON has no trailing commas)" {
		t.Errorf("the seed's text: %v", errs)
	}
}

// TestParseTreeRefuses: every bad tree is refused with the source, the
// tree and the node named, and every problem listed.
func TestParseTreeRefuses(t *testing.T) {
	tree := func(nodes string) string {
		return `{"kind":"QuotaTree","metadata":{"name":"GPU"},"spec":{"resourceNames":["cpu","nvidia.com/gpu"],"nodes":{` + nodes + `}}}`
	}
	root := `"org":{"parent":"nil","hard":"true","quota":{"cpu":"10","nvidia.com/gpu":"8"}}`
	for _, tc := range []struct {
		name, json string
		want       []string
	}{
		{"unknown key at the top", `{"kind":"QuotaTree","metadata":{"name":"GPU"},"spec":{"resourceNames":["cpu"],"nodes":{"r":{"parent":"nil","hard":"true","quota":{"cpu":"1"}}}},"status":{}}`,
			[]string{`g.tree.json (tree "GPU"): unknown key "status" (a QuotaTree has kind, metadata and spec)`}},
		{"unknown key in a node", tree(root + `,"h100":{"parent":"org","hard":"true","quota":{"cpu":"1","nvidia.com/gpu":"1"},"preemptable":true}`),
			[]string{`g.tree.json (tree "GPU"): node "h100": unknown key "preemptable" (a node has parent, hard and quota)`}},
		{"missing parent", tree(root + `,"h100":{"parent":"orgB","hard":"true","quota":{"cpu":"1","nvidia.com/gpu":"1"}}`),
			[]string{`g.tree.json (tree "GPU"): node "h100": parent "orgB" is not a node of the tree`}},
		{"undeclared unit", tree(root + `,"h100":{"parent":"org","hard":"true","quota":{"cpu":"1","nvidia.com/gpu":"1","disk":"4"}}`),
			[]string{`g.tree.json (tree "GPU"): node "h100": quota names disk, a resource the tree does not declare (spec.resourceNames: cpu, nvidia.com/gpu)`}},
		{"a declared resource without quota", tree(root + `,"h100":{"parent":"org","hard":"true","quota":{"cpu":"1"}}`),
			[]string{`node "h100": quota has no nvidia.com/gpu: every node gives a quota for each of spec.resourceNames`}},
		{"two roots", tree(root + `,"other":{"parent":"nil","hard":"true","quota":{"cpu":"1","nvidia.com/gpu":"1"}}`),
			[]string{`node "other": a second root: parent "nil" (nodes "org", "other" all have it; a tree has one root)`}},
		{"no root", tree(`"a":{"parent":"b","hard":"true","quota":{"cpu":"1","nvidia.com/gpu":"1"}},"b":{"parent":"a","hard":"true","quota":{"cpu":"1","nvidia.com/gpu":"1"}}`),
			[]string{`no root: exactly one node has parent "nil"`}},
		{"a cycle beside the root", tree(root + `,"a":{"parent":"b","hard":"true","quota":{"cpu":"1","nvidia.com/gpu":"1"}},"b":{"parent":"a","hard":"true","quota":{"cpu":"1","nvidia.com/gpu":"1"}}`),
			[]string{`node "a": its parents loop back to "a": a tree has no cycles`, `node "b": its parents loop back to "b"`}},
		{"its own parent", tree(root + `,"a":{"parent":"a","hard":"true","quota":{"cpu":"1","nvidia.com/gpu":"1"}}`),
			[]string{`node "a": its parent is itself`}},
		{"a child above its parent", tree(root + `,"h100":{"parent":"org","hard":"true","quota":{"cpu":"1","nvidia.com/gpu":"9"}}`),
			[]string{`node "h100": quota nvidia.com/gpu=9 is above its parent "org"'s 8`}},
		{"node name not a label value", tree(root + `,"h100 orgA":{"parent":"org","hard":"true","quota":{"cpu":"1","nvidia.com/gpu":"1"}}`),
			[]string{`node "h100 orgA": not a valid node name: pods name their node as a label value`}},
		{"node called nil", tree(root + `,"nil":{"parent":"org","hard":"true","quota":{"cpu":"1","nvidia.com/gpu":"1"}}`),
			[]string{`node "nil": "nil" is not a node name`}},
		{"tree name not a label name", strings.Replace(tree(root), `"GPU"`, `"gpu/model"`, 1),
			[]string{`g.tree.json: metadata.name "gpu/model" is not a valid tree name: pods name their node with the label tree.userquota.io/<name>`}},
		{"hostile quantity", tree(`"org":{"parent":"nil","hard":"true","quota":{"cpu":"1e2000000000","nvidia.com/gpu":"-1"}}`),
			[]string{`node "org": quota.cpu: quantity "1e2000000000" is too large`, `node "org": quota.nvidia.com/gpu: negative quantity "-1"`}},
		{"bad hard", tree(`"org":{"parent":"nil","hard":"yes","quota":{"cpu":"1","nvidia.com/gpu":"1"}}`),
			[]string{`node "org": hard: expected true or false (a boolean or the string "true" or "false"), got the string "yes"`}},
		{"missing keys of a node", tree(`"org":{"quota":{"cpu":"1","nvidia.com/gpu":"1"}}`),
			[]string{`node "org": parent is missing`, `node "org": hard is missing`}},
		{"a key twice", `{"kind":"QuotaTree","metadata":{"name":"GPU"},"spec":{"resourceNames":["cpu"],"nodes":{"r":{"parent":"nil","hard":"true","quota":{"cpu":"1"}},"r":{}}}}`,
			[]string{`g.tree.json: invalid JSON: key "r" is given twice in one object (first on line 1)`}},
		{"kind", strings.Replace(tree(root), `"QuotaTree"`, `"Consumer"`, 1), []string{`kind is "Consumer": expected "QuotaTree"`}},
		{"resource names", `{"kind":"QuotaTree","metadata":{"name":"T"},"spec":{"resourceNames":["cpu","vcore","a b"],"nodes":{"r":{"parent":"nil","hard":true,"quota":{"cpu":"1"}}}}}`,
			[]string{`spec.resourceNames[1]: cpu is given twice`, `spec.resourceNames[2]: "a b" is not a valid resource name`}},
		{"nested too deep", `{"kind":"QuotaTree","metadata":{"name":"T"},"spec":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`,
			[]string{`invalid JSON: nested more than 16 deep`}},
		{"empty", ``, []string{`g.tree.json: invalid JSON: the document is empty`}},
		{"trailing data", tree(root) + `{}`, []string{`invalid JSON: '{' after the end of the tree's object`}},
		{"no name", `{"kind":"QuotaTree","metadata":{},"spec":{"resourceNames":["cpu"],"nodes":{"r":{"parent":"nil","hard":"true","quota":{"cpu":"1"}}}}}`,
			[]string{`metadata.name is missing`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, _, errs := ParseTree("g.tree.json", []byte(tc.json))
			if errs == nil {
				t.Fatalf("loaded %+v", tr)
			}
			got := errs.Error()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
		})
	}
}

// TestParseTreeDeep: a chain deeper than MaxTreeDepth is refused.
func TestParseTreeDeep(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"kind":"QuotaTree","metadata":{"name":"T"},"spec":{"resourceNames":["cpu"],"nodes":{"n0":{"parent":"nil","hard":"true","quota":{"cpu":"1"}}`)
	for i := 1; i <= MaxTreeDepth; i++ {
		b.WriteString(`,"n` + itoa(int64(i)) + `":{"parent":"n` + itoa(int64(i-1)) + `","hard":"true","quota":{"cpu":"1"}}`)
	}
	b.WriteString(`}}}`)
	_, _, errs := ParseTree("d", []byte(b.String()))
	if errs == nil || !strings.Contains(errs.Error(), `node "n32": more than 32 levels from the root`) {
		t.Fatalf("got %v", errs)
	}
}

// TestLoadConfigMap: the queue config and the trees load together or not
// at all; every problem of both is listed; two trees with one name, a
// ConfigMap over 1 MiB and a missing queue key are refused; the checksum
// follows the trees; without trees the config is Load's.
func TestLoadConfigMap(t *testing.T) {
	ctx, svc := readTree(t, "contexttree.tree.json"), readTree(t, "servicetree.tree.json")
	cfg, err := LoadConfigMap(map[string]string{"queues.yaml": oneQueue, "ctx.tree.json": ctx, "svc.tree.json": svc, "notes.json": "{", "other": "x"}, "queues.yaml", "default")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Trees) != 2 || cfg.Tree("ContextTree").Source != "ctx.tree.json" || cfg.Tree("ServiceTree") == nil || cfg.Partition("default") == nil {
		t.Fatalf("trees %v", cfg.Trees)
	}
	if n := strings.Join(cfg.Notices, "\n"); !strings.Contains(n, `svc.tree.json (tree "ServiceTree"): resource disk is not one a pod requests`) {
		t.Errorf("notices:\n%s", n)
	}
	plain, err := Load([]byte(oneQueue), "default")
	if err != nil {
		t.Fatal(err)
	}
	none, err := LoadConfigMap(map[string]string{"queues.yaml": oneQueue}, "queues.yaml", "default")
	if err != nil || none.Checksum != plain.Checksum || none.Trees != nil {
		t.Errorf("without trees: %v, checksum %s, want Load's %s", err, none.Checksum, plain.Checksum)
	}
	changed, err := LoadConfigMap(map[string]string{"queues.yaml": oneQueue, "ctx.tree.json": strings.Replace(ctx, `"8"`, `"9"`, 1), "svc.tree.json": svc}, "queues.yaml", "default")
	if err != nil || changed.Checksum == cfg.Checksum || cfg.Checksum == plain.Checksum {
		t.Errorf("checksums: %s, %s, %s (%v)", plain.Checksum, cfg.Checksum, changed.Checksum, err)
	}

	for _, tc := range []struct {
		name string
		data map[string]string
		want []string
	}{
		{"two trees with one name", map[string]string{"queues.yaml": oneQueue, "a.tree.json": ctx, "b.tree.json": ctx},
			[]string{`b.tree.json (tree "ContextTree"): a second tree named "ContextTree": a.tree.json has one already`}},
		{"queue config and tree both bad", map[string]string{"queues.yaml": "partitions:\n- name: default\n  queues:\n  - name: root\n    maxapplications: -1\n",
			"a.tree.json": strings.Replace(ctx, `"parent": "Context", "hard": "true", "quota": {"cpu": "4"}}`, `"parent": "Ctx", "hard": "true", "quota": {"cpu": "4"}}`, 1)},
			[]string{"line 5: partitions[0].queues[0].maxapplications", `a.tree.json (tree "ContextTree"): node "Context-1": parent "Ctx" is not a node of the tree`}},
		{"over 1 MiB", map[string]string{"queues.yaml": oneQueue, "a.tree.json": ctx, "pad": strings.Repeat("x", MaxConfigMapBytes)},
			[]string{"more than a ConfigMap may hold (1048576, 1 MiB)"}},
		{"no queue key", map[string]string{"a.tree.json": ctx}, []string{"queues.yaml: missing: the key holds the queue config"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfigMap(tc.data, "queues.yaml", "default")
			if err == nil {
				t.Fatalf("loaded %d trees", len(cfg.Trees))
			}
			got := strings.Join(Problems(err), "\n")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
		})
	}
}

// FuzzTreeJSON: no input panics, and whatever loads is a tree whose
// every node reaches the root within MaxTreeDepth.
func FuzzTreeJSON(f *testing.F) {
	for _, name := range []string{"testtree.tree.json", "contexttree.tree.json", "servicetree.tree.json", "seed-testtree-trailing-comma.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "trees", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, _, errs := ParseTree("f", data)
		if errs != nil {
			return
		}
		tree.Walk(func(n *TreeNode) {
			if len(n.Path) > MaxTreeDepth || n.Path[len(n.Path)-1] != tree.Root.Name {
				t.Fatalf("node %s path %v", n.Name, n.Path)
			}
		})
	})
}

// TestForestExample: examples/forest.yaml and examples/gpu-model.tree.json
// (docs/forests.md) load together as a ConfigMap's data.
func TestForestExample(t *testing.T) {
	queues, err := os.ReadFile("../../examples/forest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tree, err := os.ReadFile("../../examples/gpu-model.tree.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfigMap(map[string]string{"queues.yaml": string(queues), "gpu-model.tree.json": string(tree)}, "queues.yaml", DefaultPartition)
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Tree("gpu-model")
	if g == nil || g.Label != "tree.userquota.io/gpu-model" || g.Len() != 7 || !g.Node("org-a-h100").Leaf() || len(cfg.Notices) != 0 {
		t.Fatalf("tree %+v, notices %v", g, cfg.Notices)
	}
}
