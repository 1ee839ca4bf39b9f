package ugm

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
)

// forestQueues: sue may use 8 cpu in root.a.
var forestQueues = queueconfigtest.Root(`
queues:
- name: a
  limits:
  - limit: sue
    users: [sue]
    maxresources: {vcore: 8}
- name: b
`)

// gpuTreeJSON is a GPU-model tree: org1 with 4 GPUs, at most 2 of them
// h100 and 4 a100; org2 with 2, all a100.
const gpuTreeJSON = `{"kind":"QuotaTree","metadata":{"name":"gpu"},"spec":{"resourceNames":["nvidia.com/gpu"],"nodes":{
 "all":{"parent":"nil","hard":"true","quota":{"nvidia.com/gpu":"6"}},
 "org1":{"parent":"all","hard":"true","quota":{"nvidia.com/gpu":"4"}},
 "a100-org1":{"parent":"org1","hard":"true","quota":{"nvidia.com/gpu":"4"}},
 "h100-org1":{"parent":"org1","hard":"true","quota":{"nvidia.com/gpu":"2"}},
 "org2":{"parent":"all","hard":"true","quota":{"nvidia.com/gpu":"2"}},
 "a100-org2":{"parent":"org2","hard":"true","quota":{"nvidia.com/gpu":"2"}}}}}`

// projectTreeJSON is a cost-centre tree over cpu.
const projectTreeJSON = `{"kind":"QuotaTree","metadata":{"name":"project"},"spec":{"resourceNames":["cpu"],"nodes":{
 "company":{"parent":"nil","hard":"true","quota":{"cpu":"6"}},
 "p1":{"parent":"company","hard":"true","quota":{"cpu":"4"}},
 "p2":{"parent":"company","hard":"true","quota":{"cpu":"4"}}}}}`

// forestConfig loads yaml with trees (source -> JSON).
func forestConfig(t testing.TB, yaml string, trees map[string]string) *queueconfig.Config {
	t.Helper()
	cfg, err := queueconfig.LoadWithTrees([]byte(yaml), trees, queueconfig.DefaultPartition)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// withForest is a Manager enforcing yaml with the GPU and project trees.
func withForest(t testing.TB) *Manager {
	t.Helper()
	m := New()
	if err := m.Enforce(forestConfig(t, forestQueues, map[string]string{"gpu.tree.json": gpuTreeJSON, "project.tree.json": projectTreeJSON}), queueconfig.DefaultPartition); err != nil {
		t.Fatal(err)
	}
	return m
}

// treeReq is sue's request in root.a for app with the tree labels
// (tree, node, ...).
func treeReq(t testing.TB, app string, v resources.Vector, nodes ...string) *Request {
	r := req("sue", nil, "root.a", app, v)
	if len(nodes) > 0 {
		labels := map[string]string{"other": "x"}
		for i := 0; i+1 < len(nodes); i += 2 {
			labels[podmeta.TreeLabel(nodes[i])] = nodes[i+1]
		}
		r.Trees = &TreePart{Labels: labels}
	}
	return r
}

// nodeUsage is each node's usage of res in the Manager's forest snapshot,
// "tree/node" -> amount (0 left out).
func nodeUsage(m *Manager, res string) map[string]int64 {
	out := map[string]int64{}
	var walk func(tree string, u *TreeUsage)
	walk = func(tree string, u *TreeUsage) {
		if x := u.Usage.Get(resources.Intern(res)); x != 0 {
			out[tree+"/"+u.Node] = x
		}
		for _, c := range u.Children {
			walk(tree, c)
		}
	}
	for _, t := range m.Forest() {
		walk(t.Name, t.Root)
	}
	return out
}

// TestForestConjoint: a request is admitted only if it fits every node up
// to the root in every tree it names, with its queue limits, in one step:
// refused on one tree, nothing is charged on any (nor on the queues); the
// refusal names the tree, the node (and the pod's node when an ancestor
// is full), usage, request and quota; a release gives back exactly what
// was charged.
func TestForestConjoint(t *testing.T) {
	m := withForest(t)
	gpu := func(n string) resources.Vector { return res(t, "cpu", "1", "nvidia.com/gpu", n) }
	steps := []struct {
		r    *Request
		want string // "" fits
	}{
		{treeReq(t, "a1", gpu("2"), "gpu", "h100-org1", "project", "p1"), ""},
		// h100-org1 is full; a100-org1 has room.
		{treeReq(t, "a2", gpu("1"), "gpu", "h100-org1", "project", "p1"), "quota tree gpu node h100-org1 would exceed its quota: nvidia.com/gpu 2+1 > 2"},
		{treeReq(t, "a3", gpu("2"), "gpu", "a100-org1", "project", "p2"), ""},
		// org1 is full (2 + 2 of 4) although a100-org1 has 2 left.
		{treeReq(t, "a4", gpu("1"), "gpu", "a100-org1"), "quota tree gpu node org1 (above a100-org1) would exceed its quota: nvidia.com/gpu 4+1 > 4"},
		// Fits the gpu tree but not the project tree: p1 has 1 cpu used of 4, company 2 of 6.
		{treeReq(t, "a5", res(t, "cpu", "4", "nvidia.com/gpu", "1"), "gpu", "a100-org2", "project", "p1"), "quota tree project node p1 would exceed its quota: cpu 1+4 > 4"},
		// No project label: not charged there.
		{treeReq(t, "a6", res(t, "cpu", "4", "nvidia.com/gpu", "1"), "gpu", "a100-org2"), ""},
		// Fits both trees, over sue's 8 cpu in root.a: the queue's reason first.
		{treeReq(t, "a7", res(t, "cpu", "3"), "project", "p2"), `user "sue" would exceed maxresources in root.a: cpu 6+3 > 8`},
	}
	for i, s := range steps {
		err := m.Increase(s.r)
		got := ""
		if err != nil {
			got = err.Error()
			var r *Refusal
			if errors.As(err, &r) && strings.HasPrefix(s.want, "quota tree") && r.Who != WhoTree {
				t.Errorf("step %d: refusal %+v, want who %q", i, r, WhoTree)
			}
		}
		if got != s.want {
			t.Fatalf("step %d (%s): %q, want %q", i, s.r.App.ID, got, s.want)
		}
	}
	want := map[string]int64{"gpu/all": 5, "gpu/org1": 4, "gpu/h100-org1": 2, "gpu/a100-org1": 2, "gpu/org2": 1, "gpu/a100-org2": 1}
	if diff := cmp.Diff(want, nodeUsage(m, "nvidia.com/gpu")); diff != "" {
		t.Errorf("gpu usage (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int64{"project/company": 2000, "project/p1": 1000, "project/p2": 1000}, nodeUsage(m, "cpu")); diff != "" {
		t.Errorf("project cpu usage (-want,+got):\n%s", diff)
	}
	// The refused ones left nothing anywhere: the queue root has the three
	// admitted pods' 6 cpu only.
	if got := m.Queues().ResourceUsage.Get(resources.Intern("cpu")); got != 6000 {
		t.Errorf("root cpu %d, want 6000", got)
	}
	for _, app := range []string{"a1", "a3", "a6"} {
		r := m.apps[AppKey{Namespace: "ns", ID: app}]
		if r == nil {
			t.Fatalf("app %s not running", app)
		}
	}
}

// TestForestRelease: Decrease gives back exactly the tree charges; the
// forest is empty after every pod is gone, and a node held full is free
// again.
func TestForestRelease(t *testing.T) {
	m := withForest(t)
	r1 := treeReq(t, "a1", res(t, "nvidia.com/gpu", "2"), "gpu", "h100-org1", "project", "p1")
	r2 := treeReq(t, "a2", res(t, "nvidia.com/gpu", "1"), "gpu", "h100-org1")
	if err := m.Increase(r1); err != nil {
		t.Fatal(err)
	}
	if err := m.Increase(r2); err == nil {
		t.Fatal("h100-org1 over its quota")
	}
	if n := r1.Trees.Nodes; len(n) != 2 || n[0].Tree != "gpu" || n[0].Node != "h100-org1" || strings.Join(n[0].Path, "<") != "h100-org1<org1<all" {
		t.Fatalf("charged on %+v", r1.Trees)
	}
	if err := m.Decrease(r1); err != nil {
		t.Fatal(err)
	}
	if got := nodeUsage(m, "nvidia.com/gpu"); len(got) != 0 || len(m.forest.charged) != 0 {
		t.Fatalf("after release: %v, charged %v", got, m.forest.charged)
	}
	if err := m.Increase(r2); err != nil {
		t.Fatalf("after the release: %v", err)
	}
}

// TestForestNodeErrors: a label naming no node, an inner node or nothing
// refuses the request before any limit, naming the label, the tree and
// its leaves; a label for a tree not in force is not read.
func TestForestNodeErrors(t *testing.T) {
	m := withForest(t)
	for _, tc := range []struct {
		node, want string
	}{
		{"h200-org1", `label tree.userquota.io/gpu=h200-org1: quota tree gpu has no node "h200-org1" (its leaves: a100-org1, h100-org1, a100-org2)`},
		{"org1", `label tree.userquota.io/gpu=org1: node org1 of quota tree gpu is not a leaf: pods join a leaf node (under org1: a100-org1, h100-org1)`},
		{"", `label tree.userquota.io/gpu=: the value is empty: name a leaf node of quota tree gpu`},
	} {
		// Over sue's limit too: the node error comes first.
		r := treeReq(t, "x", res(t, "cpu", "9"), "gpu", tc.node)
		err := m.Check(r)
		var ne *TreeNodeError
		if !errors.As(err, &ne) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("node %q: %v, want %q", tc.node, err, tc.want)
		}
	}
	if err := m.Increase(treeReq(t, "y", res(t, "cpu", "1"), "nosuchtree", "n")); err != nil {
		t.Errorf("a label of a tree not in force: %v", err)
	}
}

// TestForestAdmissions: room admitted on a tree node counts against
// others, not against the pod holding it, and goes with its commit, its
// unadmit or a config change; a gang's reservation holds its minimum on
// the nodes its first pod names, and its pods draw it there.
func TestForestAdmissions(t *testing.T) {
	m := withForest(t)
	a := treeReq(t, "a1", res(t, "nvidia.com/gpu", "2"), "gpu", "h100-org1")
	b := treeReq(t, "a2", res(t, "nvidia.com/gpu", "1"), "gpu", "h100-org1")
	if err := m.Admit("pa", a); err != nil {
		t.Fatal(err)
	}
	err := m.Admit("pb", b)
	var r *Refusal
	if !errors.As(err, &r) || r.Who != WhoTree || r.Admitted != 2 || !strings.Contains(err.Error(), "2+1 > 2 (2 of it admitted, not running yet)") {
		t.Fatalf("b over admitted room: %v", err)
	}
	if err := m.Commit("pa", a); err != nil {
		t.Fatalf("a's commit on its own room: %v", err)
	}
	if len(m.adm.trees) != 0 {
		t.Errorf("room left held after the commit: %v", m.adm.trees)
	}
	if err := m.Decrease(a); err != nil {
		t.Fatal(err)
	}
	if err := m.Admit("pb", b); err != nil {
		t.Fatal(err)
	}
	m.UnadmitAll()
	if len(m.adm.trees) != 0 {
		t.Errorf("room left held after UnadmitAll: %v", m.adm.trees)
	}

	// A gang of 2 GPUs on h100-org1: reserved whole, drawn by its pods.
	g := treeReq(t, "gang", res(t, "nvidia.com/gpu", "2"), "gpu", "h100-org1")
	if err := m.ReserveGang("g", g); err != nil {
		t.Fatal(err)
	}
	if err := m.Check(b); err == nil {
		t.Fatal("the gang's reservation does not count on h100-org1")
	}
	p1 := treeReq(t, "gang", res(t, "nvidia.com/gpu", "1"), "gpu", "h100-org1")
	if _, err := m.DrawGang("g", "g1", p1); err != nil {
		t.Fatalf("draw: %v", err)
	}
	if err := m.Commit("g1", p1); err != nil {
		t.Fatalf("commit of a drawn pod: %v", err)
	}
	if got := m.adm.trees[treeKey{"gpu", "h100-org1"}].res.Get(resources.Intern("nvidia.com/gpu")); got != 1 {
		t.Errorf("held on h100-org1 after one pod ran: %d, want the gang's other 1", got)
	}
	m.ReleaseGang("g")
	if len(m.adm.trees) != 0 {
		t.Errorf("room left held after the gang's release: %v", m.adm.trees)
	}
}

// TestForestConfigChange: a new config rebuilds every node's usage from
// what is charged: a lower quota refuses new pods and keeps usage; a node
// that leaves the config keeps its charges and counts again when it comes
// back; a tree added counts the running pods that carry its label, as a
// scheduler starting then would; releases after all that leave nothing.
func TestForestConfigChange(t *testing.T) {
	m := withForest(t)
	r1 := treeReq(t, "a1", res(t, "nvidia.com/gpu", "2"), "gpu", "h100-org1", "later", "x1")
	if err := m.Increase(r1); err != nil {
		t.Fatal(err)
	}
	enforce := func(trees map[string]string) {
		t.Helper()
		if err := m.Enforce(forestConfig(t, forestQueues, trees), queueconfig.DefaultPartition); err != nil {
			t.Fatal(err)
		}
	}
	// h100-org1 goes: its 2 GPUs are charged nowhere in force.
	noH100 := strings.Replace(gpuTreeJSON, `"h100-org1":{"parent":"org1","hard":"true","quota":{"nvidia.com/gpu":"2"}},`, "", 1)
	enforce(map[string]string{"gpu.tree.json": noH100})
	if diff := cmp.Diff(map[string]int64{}, nodeUsage(m, "nvidia.com/gpu")); diff != "" {
		t.Errorf("without h100-org1 (-want,+got):\n%s", diff)
	}
	// Back, with a tree "later" the pod was labelled for.
	later := `{"kind":"QuotaTree","metadata":{"name":"later"},"spec":{"resourceNames":["nvidia.com/gpu"],"nodes":{"x":{"parent":"nil","hard":"true","quota":{"nvidia.com/gpu":"2"}},"x1":{"parent":"x","hard":"true","quota":{"nvidia.com/gpu":"2"}}}}}`
	enforce(map[string]string{"gpu.tree.json": gpuTreeJSON, "later.tree.json": later})
	want := map[string]int64{"gpu/all": 2, "gpu/org1": 2, "gpu/h100-org1": 2, "later/x": 2, "later/x1": 2}
	if diff := cmp.Diff(want, nodeUsage(m, "nvidia.com/gpu")); diff != "" {
		t.Errorf("with h100-org1 and later again (-want,+got):\n%s", diff)
	}
	if err := m.Check(treeReq(t, "a2", res(t, "nvidia.com/gpu", "1"), "later", "x1")); err == nil {
		t.Error("the added tree does not count the running pod")
	}
	if err := m.Decrease(r1); err != nil {
		t.Fatal(err)
	}
	if got := nodeUsage(m, "nvidia.com/gpu"); len(got) != 0 || len(m.forest.charged) != 0 {
		t.Errorf("after the release: %v, charged %v", got, m.forest.charged)
	}
}

// TestForestForcedAndResize: a pod found running is charged on its nodes
// whatever their quota and says which node it went over; an unknown node
// is charged by name only; a resize moves the tree usage and reports the
// node it takes over.
func TestForestForcedAndResize(t *testing.T) {
	m := withForest(t)
	r1 := treeReq(t, "a1", res(t, "nvidia.com/gpu", "3"), "gpu", "h100-org1")
	over, err := m.ForceCommit("", r1)
	if err != nil || over == nil || over.Error() != "quota tree gpu node h100-org1 would exceed its quota: nvidia.com/gpu 0+3 > 2" {
		t.Fatalf("forced: over %v, err %v", over, err)
	}
	r2 := treeReq(t, "a2", res(t, "nvidia.com/gpu", "1"), "gpu", "gone")
	if over, err := m.ForceCommit("", r2); err != nil || over != nil {
		t.Fatalf("forced on an unknown node: over %v, err %v", over, err)
	}
	if err := m.CheckResize(r1, res(t, "nvidia.com/gpu", "4")); err == nil || !strings.Contains(err.Error(), "quota tree gpu node h100-org1 would exceed its quota: nvidia.com/gpu 3+1 > 2") {
		t.Errorf("check of a growth: %v", err)
	}
	if err := m.Resize(r1, res(t, "nvidia.com/gpu", "1")); err != nil {
		t.Fatal(err)
	}
	r1.Resources = res(t, "nvidia.com/gpu", "1")
	if diff := cmp.Diff(map[string]int64{"gpu/all": 1, "gpu/org1": 1, "gpu/h100-org1": 1}, nodeUsage(m, "nvidia.com/gpu")); diff != "" {
		t.Errorf("after the resize (-want,+got):\n%s", diff)
	}
	for _, r := range []*Request{r1, r2} {
		if err := m.Decrease(r); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.forest.charged) != 0 {
		t.Errorf("charged after the releases: %v", m.forest.charged)
	}
}

// TestForestConcurrent: many goroutines charge and release on one node;
// the all-or-nothing check never lets the node, nor its ancestors, go
// over quota, and everything released leaves nothing (run with -race).
func TestForestConcurrent(t *testing.T) {
	m := withForest(t)
	var admitted, peak atomic.Int64
	parallel(8, func(g int) {
		for i := 0; i < 200; i++ {
			r := treeReq(t, "g"+strconv.Itoa(g)+"-"+strconv.Itoa(i), res(t, "nvidia.com/gpu", "1"), "gpu", "h100-org1", "project", "p1")
			r.User = "u" + strconv.Itoa(g)
			if m.Increase(r) != nil {
				continue
			}
			n := admitted.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			if u := nodeUsage(m, "nvidia.com/gpu")["gpu/h100-org1"]; u > 2 {
				t.Errorf("h100-org1 at %d", u)
			}
			admitted.Add(-1)
			if err := m.Decrease(r); err != nil {
				t.Error(err)
			}
		}
	})
	if peak.Load() > 2 || len(m.forest.charged) != 0 || len(nodeUsage(m, "nvidia.com/gpu")) != 0 {
		t.Errorf("peak %d, charged %v", peak.Load(), m.forest.charged)
	}
}

// TestForestSeedTree: the seed's TestTree (testdata, its trailing comma
// fixed): A hard 10 cpu/256 memory; B hard 2/64; C soft 6/64: a consumer
// that does not fit C takes room at A. Quantities are Kubernetes
// quantities: memory 256 is 256 bytes.
func TestForestSeedTree(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "queueconfig", "testdata", "trees", "testtree.tree.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := New()
	if err := m.Enforce(forestConfig(t, queueconfigtest.Root("queues:\n- name: a\n"), map[string]string{"testtree.tree.json": string(b)}), queueconfig.DefaultPartition); err != nil {
		t.Fatal(err)
	}
	r := func(app, node, cpu, mem string) *Request {
		return treeReq(t, app, res(t, "cpu", cpu, "memory", mem), "TestTree", node)
	}
	for _, s := range []struct {
		r    *Request
		want string
	}{
		{r("c1", "C", "4", "16"), ""},
		// C full (4+4 > 6): borrowed at A, 8 of 10 cpu.
		{r("c2", "C", "4", "16"), ""},
		{r("b1", "B", "2", "64"), ""},
		// B is hard.
		{r("b2", "B", "1", "1"), "quota tree TestTree node B would exceed its quota: cpu 2+1 > 2"},
		// Fits C (c2 does not count there), not A: c2 holds it.
		{r("c3", "C", "2", "48"), "quota tree TestTree node A (above C) would exceed its quota: cpu 10+2 > 10"},
		{r("c4", "C", "0", "48"), ""},
		// C's memory full (64): borrowed at A (145 of 256).
		{r("c5", "C", "0", "1"), ""},
		{r("a1", "A", "1", "1"), "label tree.userquota.io/TestTree=A: node A of quota tree TestTree is not a leaf: pods join a leaf node (under A: B, C)"},
	} {
		got := ""
		if err := m.Increase(s.r); err != nil {
			got = err.Error()
		}
		if got != s.want {
			t.Errorf("%s: %q, want %q", s.r.App.ID, got, s.want)
		}
	}
}
