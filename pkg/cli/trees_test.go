package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

const treesDir = "../../pkg/queueconfig/testdata/trees/"

// TestSimulateTrees: --tree puts quota trees beside --config, as the
// golden case forest-two-trees runs them: the output is the golden one; a
// bad tree is the config's problem (exit 1, the problem on stderr), a
// missing file a read error.
func TestSimulateTrees(t *testing.T) {
	const base = "../../testdata/traces/forest-two-trees"
	args := []string{"simulate", "--requeue", "--config", base + ".yaml", "--tree", treesDir + "contexttree.tree.json", "--tree", treesDir + "servicetree.tree.json", "--trace", base + ".jsonl"}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	want, err := os.ReadFile(base + ".golden")
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != string(want) {
		t.Errorf("stdout:\n%s\nwant (%s.golden):\n%s", stdout.String(), base, want)
	}

	stdout.Reset()
	stderr.Reset()
	bad := []string{"simulate", "--config", base + ".yaml", "--tree", treesDir + "seed-testtree-trailing-comma.json", "--trace", base + ".jsonl"}
	if code := run(bad, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "line 35: "+treesDir+"seed-testtree-trailing-comma.json: invalid JSON: a comma before '}'") {
		t.Errorf("a bad tree: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"simulate", "--config", base + ".yaml", "--tree", "nosuch.json", "--trace", base + ".jsonl"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "nosuch.json") {
		t.Errorf("a missing tree file: exit %d, stderr %q", code, stderr.String())
	}
}

// TestValidateTrees: validate checks the trees with the config and counts
// them; their notes (a resource no pod requests) are printed; a soft node
// is no note (soft nodes borrow: docs/forests.md).
func TestValidateTrees(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"validate", "--tree", treesDir + "testtree.tree.json", "--tree", treesDir + "servicetree.tree.json", "../../examples/limits.yaml"}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 || !strings.Contains(out, ", 2 quota trees of 6 nodes\n") || !strings.Contains(out, `note: `+treesDir+`servicetree.tree.json (tree "ServiceTree"): resource disk is not one a pod requests`) || strings.Contains(out, "soft") {
		t.Errorf("exit %d:\n%s%s", code, out, stderr.String())
	}
}
