package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// gpuTree: org1 of 4 GPUs, h100-org1 of 2 (soft: it borrows from org1).
const gpuTree = `{"kind":"QuotaTree","metadata":{"name":"gpu"},"spec":{"resourceNames":["nvidia.com/gpu","cpu"],"nodes":{
 "org1":{"parent":"nil","hard":"true","quota":{"nvidia.com/gpu":"4","cpu":"8"}},
 "h100-org1":{"parent":"org1","hard":"false","quota":{"nvidia.com/gpu":"2","cpu":"4"}}}}}`

const treeExposition = `
# HELP userquota_tree_node_lent [ALPHA] Usage allocated at a quota tree node by pods whose own node is below it (borrowers through soft nodes), by resource of the tree (docs/forests.md).
# TYPE userquota_tree_node_lent gauge
userquota_tree_node_lent{node="h100-org1",resource="cpu",tree="gpu",unit="core"} 0
userquota_tree_node_lent{node="h100-org1",resource="nvidia.com/gpu",tree="gpu",unit="integer"} 0
userquota_tree_node_lent{node="org1",resource="cpu",tree="gpu",unit="core"} 0.5
userquota_tree_node_lent{node="org1",resource="nvidia.com/gpu",tree="gpu",unit="integer"} 1
# HELP userquota_tree_node_quota [ALPHA] A quota tree node's quota, by resource of the tree.
# TYPE userquota_tree_node_quota gauge
userquota_tree_node_quota{node="h100-org1",resource="cpu",tree="gpu",unit="core"} 4
userquota_tree_node_quota{node="h100-org1",resource="nvidia.com/gpu",tree="gpu",unit="integer"} 2
userquota_tree_node_quota{node="org1",resource="cpu",tree="gpu",unit="core"} 8
userquota_tree_node_quota{node="org1",resource="nvidia.com/gpu",tree="gpu",unit="integer"} 4
# HELP userquota_tree_node_usage [ALPHA] Usage of a quota tree node's subtree by the pods charged on it, by resource of the tree (docs/forests.md).
# TYPE userquota_tree_node_usage gauge
userquota_tree_node_usage{node="h100-org1",resource="cpu",tree="gpu",unit="core"} 1.5
userquota_tree_node_usage{node="h100-org1",resource="nvidia.com/gpu",tree="gpu",unit="integer"} 2
userquota_tree_node_usage{node="org1",resource="cpu",tree="gpu",unit="core"} 2
userquota_tree_node_usage{node="org1",resource="nvidia.com/gpu",tree="gpu",unit="integer"} 3
`

// TestTreeGauges: every node of every tree in force shows its quota, its
// subtree's usage and what it lends to the soft nodes below it (p2 does
// not fit h100-org1 and is allocated at org1), in the tree's resources
// only (not memory or pods, which the pod asks for too); no tree, no
// series; the families lint.
func TestTreeGauges(t *testing.T) {
	Register()
	cfg, err := queueconfig.LoadWithTrees([]byte(config), map[string]string{"gpu.tree.json": gpuTree}, "default")
	if err != nil {
		t.Fatal(err)
	}
	m := ugm.New()
	if err := m.Enforce(cfg, "default"); err != nil {
		t.Fatal(err)
	}
	req := ugm.Request{User: "sue", Queue: "root.sandbox", App: ugm.AppKey{Namespace: "ns", ID: "train"},
		Resources: resources.FromMap(map[string]int64{"cpu": 1500, "memory": 1 << 30, "pods": 1, "nvidia.com/gpu": 2}),
		Trees:     &ugm.TreePart{Labels: map[string]string{"tree.userquota.io/gpu": "h100-org1"}}}
	l := ledger.New(m)
	if err := l.Allocate("p1", req); err != nil {
		t.Fatal(err)
	}
	req.App.ID, req.Resources = "borrow", resources.FromMap(map[string]int64{"cpu": 500, "pods": 1, "nvidia.com/gpu": 1})
	if err := l.Allocate("p2", req); err != nil {
		t.Fatal(err)
	}
	unset := SetSource(&Source{Usage: m, Forest: m.Forest})
	defer unset()
	names := []string{"userquota_tree_node_usage", "userquota_tree_node_quota", "userquota_tree_node_lent"}
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(treeExposition), names...); err != nil {
		t.Error(err)
	}
	rec := httptest.NewRecorder()
	legacyregistry.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var text strings.Builder
	for _, line := range strings.SplitAfter(rec.Body.String(), "\n") {
		if strings.Contains(line, "userquota_tree_") {
			text.WriteString(line)
		}
	}
	problems, err := testutil.NewPromLinter(strings.NewReader(text.String())).Lint()
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
	unset()
	unset = SetSource(&Source{Usage: manager(t), Forest: ugm.New().Forest})
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(""), names...); err != nil {
		t.Errorf("without trees: %v", err)
	}
}
