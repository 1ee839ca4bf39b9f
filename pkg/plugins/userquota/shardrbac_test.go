package userquota

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// TestShardRBAC: every Role the install ships (the manifests, the local
// cluster's, the Helm chart's) lets the scheduler update and delete each
// ConfigMap a shardStore writes: userquota-fairshare-0 .. -63 (fair
// order's history) and userquota-accounting-0 .. -63 (the books of
// resource-seconds). Without them the leader's writes are refused and the
// state is lost at every restart.
func TestShardRBAC(t *testing.T) {
	root := queueconfigtest.RepoRoot(t)
	template := regexp.MustCompile(`\{\{[^}]*\}\}`)
	for _, file := range []string{"manifests/rbac.yaml", "manifests/local/rbac.yaml", "charts/userquota/templates/rbac.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		// The chart's template actions: lines of includes dropped, values
		// replaced.
		var lines []string
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, "{{-") {
				lines = append(lines, template.ReplaceAllString(line, "x"))
			}
		}
		allowed := map[string]bool{}
		for _, doc := range strings.Split(strings.Join(lines, "\n"), "\n---") {
			var role rbacv1.Role
			if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if role.Kind != "Role" {
				continue
			}
			for _, r := range role.Rules {
				if slices.Contains(r.Resources, "configmaps") && slices.Contains(r.Verbs, "update") && slices.Contains(r.Verbs, "delete") {
					for _, name := range r.ResourceNames {
						allowed[name] = true
					}
				}
			}
		}
		for _, kind := range []shardKind{fairShareKind, accountingKind} {
			var missing []string
			for i := range kind.max {
				if name := kind.prefix + strconv.Itoa(i); !allowed[name] {
					missing = append(missing, name)
				}
			}
			if len(missing) > 0 {
				t.Errorf("%s: no update and delete of %d ConfigMaps of %s: %s .. %s", file, len(missing), kind.what, missing[0], missing[len(missing)-1])
			}
		}
	}
}
