package metrics

import (
	"k8s.io/component-base/metrics"

	"github.com/userquota/userquota/pkg/ugm"
)

// Quota trees (docs/forests.md): each node of each tree in force, its
// quota and the usage of its subtree, in the tree's resources. One series
// per tree, node and resource: a tree's size is the operator's choice.
var (
	treeUsageDesc = desc("tree_node_usage", "Usage of a quota tree node's subtree by the pods charged on it, by resource of the tree (docs/forests.md).", "tree", "node", "resource", "unit")
	treeQuotaDesc = desc("tree_node_quota", "A quota tree node's quota, by resource of the tree.", "tree", "node", "resource", "unit")
	treeLentDesc  = desc("tree_node_lent", "Usage allocated at a quota tree node by pods whose own node is below it (borrowers through soft nodes), by resource of the tree (docs/forests.md).", "tree", "node", "resource", "unit")
)

// collectForest emits the gauges of every node of the trees forest
// returns (nil: none).
func collectForest(forest func() []ugm.ForestTree, gauge func(*metrics.Desc, float64, ...string)) {
	if forest == nil {
		return
	}
	for _, t := range forest() {
		var visit func(n *ugm.TreeUsage)
		visit = func(n *ugm.TreeUsage) {
			for _, b := range n.Quota {
				v, unit := value(b.ID, b.Max)
				gauge(treeQuotaDesc, v, t.Name, n.Node, b.ID.Name(), unit)
				u, _ := value(b.ID, n.Usage.Get(b.ID))
				gauge(treeUsageDesc, u, t.Name, n.Node, b.ID.Name(), unit)
				l, _ := value(b.ID, n.Lent.Get(b.ID))
				gauge(treeLentDesc, l, t.Name, n.Node, b.ID.Name(), unit)
			}
			for _, c := range n.Children {
				visit(c)
			}
		}
		if t.Root != nil {
			visit(t.Root)
		}
	}
}
