package userquota

import (
	"fmt"
	"sort"
	"strings"

	"github.com/userquota/userquota/pkg/queueconfig"
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
