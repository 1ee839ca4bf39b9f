package userquota

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/ugm"
)

// Quota trees (docs/forests.md): the ConfigMap's keys that hold them are
// loaded with the queue config (configmap.go); ugm charges a pod on the
// node each tree's label names, in the same step as its other limits.

// treeKeys lists, sorted, the keys of a ConfigMap's data that hold quota
// trees.
func treeKeys(data map[string]string) []string {
	var out []string
	for k := range data {
		if queueconfig.IsTreeKey(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// quotedList renders keys as `"a", "b"`.
func quotedList(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, ", ")
}

// podTrees is the pod's part in the quota trees: its labels, when one of
// them names a tree's node (podmeta.LabelTreePrefix); nil otherwise, so a
// pod without tree labels costs no allocation.
func podTrees(pod *v1.Pod) *ugm.TreePart {
	for k := range pod.Labels {
		if strings.HasPrefix(k, podmeta.LabelTreePrefix) {
			return &ugm.TreePart{Labels: pod.Labels}
		}
	}
	return nil
}
