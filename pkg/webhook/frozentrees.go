package webhook

import (
	"fmt"
	"sort"
	"strings"

	"github.com/userquota/userquota/pkg/podmeta"
)

// treeLabelChanges lists the quota tree labels (podmeta.LabelTreePrefix,
// docs/forests.md) an UPDATE adds, removes or changes, sorted: the
// scheduler charges a pod on the node each names, and one that starts
// charges the running pods by what they carry then, so on a bound pod they
// are frozen like the queue label. Every key with the prefix is, whatever
// trees the config has: the webhook does not read the config, and a tree
// added later would charge a pod by its label.
func treeLabelChanges(old, obj map[string]any) []string {
	was, _ := lookup(old, []string{"metadata"})["labels"].(map[string]any)
	now, _ := lookup(obj, []string{"metadata"})["labels"].(map[string]any)
	keys := map[string]bool{}
	for _, m := range [2]map[string]any{was, now} {
		for k := range m {
			if strings.HasPrefix(k, podmeta.LabelTreePrefix) {
				keys[k] = true
			}
		}
	}
	var out []string
	for k := range keys {
		a, had := was[k].(string)
		b, has := now[k].(string)
		if had == has && a == b {
			continue
		}
		out = append(out, fmt.Sprintf("label %s from %s to %s", k, quoteOrAbsent(a, had), quoteOrAbsent(b, has)))
	}
	sort.Strings(out)
	return out
}
