package rest

import (
	"net/http"

	"github.com/userquota/userquota/pkg/ugm"
)

// TreesPattern is the path of the quota trees in force (docs/forests.md,
// docs/api.md): every node of every tree with its quota and the usage of
// its subtree, in the tree's resources, base units.
const TreesPattern = "/ws/v1/partition/{partition}/trees"

// Trees is the answer of TreesPattern: the trees by name; [] without any.
type Trees struct {
	Trees []ugm.ForestTree `json:"trees"`
}

func (s *server) trees(w http.ResponseWriter, r *http.Request) {
	if !s.partitionOK(w, r) {
		return
	}
	out := Trees{Trees: []ugm.ForestTree{}}
	if s.opts.Forest != nil {
		if t := s.opts.Forest(); t != nil {
			out.Trees = t
		}
	}
	writeJSON(w, http.StatusOK, out)
}
