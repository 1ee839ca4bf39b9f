package hold

import (
	"testing"

	"github.com/userquota/userquota/pkg/ugm"
)

// treeFull is a refusal by the quota tree gpu at node, for a pod of leaf.
func treeFull(node, leaf string, request int64) error {
	return &ugm.Refusal{Who: ugm.WhoTree, Name: "gpu", Node: node, Leaf: leaf, Limit: ugm.LimitResources, Resource: "nvidia.com/gpu", Usage: 2, Request: request, Max: 2}
}

// onGPU is a request charged on the gpu tree at leaf, with its path.
func onGPU(path ...string) *ugm.Request {
	return &ugm.Request{User: "bob", Queue: "root.b", App: ugm.AppKey{Namespace: "ns", ID: "x"}, Trees: &ugm.TreePart{Nodes: []ugm.TreeNode{{Tree: "gpu", Node: path[0], Path: path}}}}
}

// TestTreeHolds: a pod held by a tree's node is of kind Tree and indexed
// by that node: a release on that node or below it may let it in, one
// elsewhere in the tree may not; Affects and the sieve tell nodes apart.
func TestTreeHolds(t *testing.T) {
	b := NewBook(0)
	atH100 := held("p1", "sue", "root.a", "a1", 0, 0, treeFull("h100-org1", "h100-org1", 1))
	atOrg := held("p2", "sue", "root.a", "a2", 0, 1, treeFull("org1", "a100-org1", 1))
	b.Hold(atH100, t0)
	b.Hold(atOrg, t0)
	if k := KindOf(atH100.Reason); k != KindTree {
		t.Errorf("kind %q", k)
	}
	for _, tc := range []struct {
		released *ugm.Request
		want     string
	}{
		{onGPU("h100-org1", "org1", "all"), "p1 p2"},
		{onGPU("a100-org1", "org1", "all"), "p2"},
		{onGPU("a100-org2", "org2", "all"), ""},
		{&ugm.Request{User: "bob", Queue: "root.b", App: ugm.AppKey{Namespace: "ns", ID: "y"}}, ""},
	} {
		if got := keys(b.Released(tc.released, Window, nil)); got != tc.want {
			t.Errorf("release at %v: %q, want %q", tc.released.Trees, got, tc.want)
		}
	}
	if !Affects(atOrg.Reason, onGPU("h100-org1", "org1", "all")) || Affects(atH100.Reason, onGPU("a100-org1", "org1", "all")) {
		t.Error("Affects does not follow the tree")
	}
	s := Sieve{}
	s.Refused(treeFull("h100-org1", "h100-org1", 1))
	if s.Skip(treeFull("a100-org1", "a100-org1", 1)) || !s.Skip(treeFull("h100-org1", "h100-org1", 2)) {
		t.Error("the sieve mixes nodes")
	}
}
