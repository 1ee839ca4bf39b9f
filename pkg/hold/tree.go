package hold

import "github.com/userquota/userquota/pkg/ugm"

// Pods held by a quota tree's node (docs/forests.md) are indexed by the
// tree and that node: a release frees room on the node the released pod
// was charged on and on each of its ancestors (ugm.TreeNode.Path).

// treeBlock is the index key of a tree's node.
func treeBlock(tree, node string) block { return block{'t', tree + "/" + node} }

// treeBlocks adds to out the nodes req is charged on, with their
// ancestors.
func treeBlocks(req *ugm.Request, out []block) []block {
	if req.Trees == nil {
		return out
	}
	for _, t := range req.Trees.Nodes {
		for _, n := range t.Path {
			out = append(out, treeBlock(t.Tree, n))
		}
	}
	return out
}

// onTree reports whether req counts on the tree node named by a block's
// name ("tree/node"): the node or one below it.
func onTree(req *ugm.Request, name string) bool {
	if req.Trees == nil {
		return false
	}
	for _, t := range req.Trees.Nodes {
		if len(name) <= len(t.Tree) || name[:len(t.Tree)] != t.Tree || name[len(t.Tree)] != '/' {
			continue
		}
		for _, n := range t.Path {
			if n == name[len(t.Tree)+1:] {
				return true
			}
		}
	}
	return false
}
