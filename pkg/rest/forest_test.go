package rest

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// TestTrees: /ws/v1/partition/{p}/trees shows every node of every tree in
// force with its quota, its subtree's usage and what it lends to the soft
// nodes below it (p2 borrows at org1), in the tree's resources;
// [] without trees; another partition is 404, as for the queues.
func TestTrees(t *testing.T) {
	tree := `{"kind":"QuotaTree","metadata":{"name":"gpu"},"spec":{"resourceNames":["nvidia.com/gpu"],"nodes":{
 "org1":{"parent":"nil","hard":"true","quota":{"nvidia.com/gpu":"4"}},
 "a100-org1":{"parent":"org1","hard":"true","quota":{"nvidia.com/gpu":"4"}},
 "h100-org1":{"parent":"org1","hard":"false","quota":{"nvidia.com/gpu":"2"}}}}}`
	cfg, err := queueconfig.LoadWithTrees([]byte(queueconfigtest.Sandbox), map[string]string{"gpu.tree.json": tree}, "default")
	if err != nil {
		t.Fatal(err)
	}
	m := ugm.New()
	if err := m.Enforce(cfg, "default"); err != nil {
		t.Fatal(err)
	}
	req := ugm.Request{User: "sue", Queue: "root.sandbox", App: ugm.AppKey{Namespace: "ns", ID: "train"},
		Resources: resources.FromMap(map[string]int64{"cpu": 1000, "pods": 1, "nvidia.com/gpu": 2}),
		Trees:     &ugm.TreePart{Labels: map[string]string{"tree.userquota.io/gpu": "h100-org1"}}}
	l := ledger.New(m)
	if err := l.Allocate("p1", req); err != nil {
		t.Fatal(err)
	}
	// h100-org1 is full and soft: p2 is allocated at org1, which lends it.
	req.App.ID, req.Resources = "borrow", resources.FromMap(map[string]int64{"cpu": 1000, "pods": 1, "nvidia.com/gpu": 1})
	if err := l.Allocate("p2", req); err != nil {
		t.Fatal(err)
	}
	h := NewHandler(Options{Partition: "default", Usage: m, Forest: m.Forest})
	code, body, _ := get(t, h, http.MethodGet, "/ws/v1/partition/default/trees", nil)
	want := `{"trees":[{"name":"gpu","label":"tree.userquota.io/gpu","resourceNames":["nvidia.com/gpu"],"root":{"node":"org1","quota":{"nvidia.com/gpu":4},"usage":{"nvidia.com/gpu":3},"lent":{"nvidia.com/gpu":1},"children":[` +
		`{"node":"a100-org1","quota":{"nvidia.com/gpu":4},"usage":{}},{"node":"h100-org1","soft":true,"quota":{"nvidia.com/gpu":2},"usage":{"nvidia.com/gpu":2}}]}}]}` + "\n"
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("body (-want,+got):\n%s", diff)
	}
	var decoded Trees
	if err := json.Unmarshal([]byte(body), &decoded); err != nil || len(decoded.Trees) != 1 {
		t.Errorf("decoding the answer: %v %+v", err, decoded)
	}
	if code, body, _ := get(t, NewHandler(testOptions(t)), http.MethodGet, "/ws/v1/partition/default/trees", nil); code != http.StatusOK || body != "{\"trees\":[]}\n" {
		t.Errorf("without trees: %d %s", code, body)
	}
	if code, _, _ := get(t, h, http.MethodGet, "/ws/v1/partition/gpu/trees", nil); code != http.StatusNotFound {
		t.Errorf("another partition: %d, want 404", code)
	}
}
