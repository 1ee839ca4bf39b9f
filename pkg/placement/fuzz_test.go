package placement

import (
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// FuzzPlace feeds arbitrary pod facts (groups comma-separated) to a rule
// chain that uses every rule kind, filters (names and regular expressions), parent rules and ACLs:
// placement must never panic, and a placement it returns must be a full,
// lower-case path of valid queue names.
func FuzzPlace(f *testing.F) {
	cfg := aclTree + `  placementrules:
  - name: provided
    parent:
      name: user
      create: true
      parent:
        name: fixed
        value: root.team
    create: true
    filter:
      groups: ["^dev"]
  - name: tag
    value: Team
    create: true
    parent:
      name: tag
      value: namespace
      create: true
  - name: secondaryGroup
    parent:
      name: fixed
      value: root.team
  - name: primaryGroup
    create: true
    filter:
      type: deny
      groups: [nobody]
    parent:
      name: fixed
      value: root.team
  - name: user
    create: true
    filter:
      type: deny
      users: [mallory, eve]
  - name: fixed
    value: root.open
`
	pol := New(queueconfigtest.MustPartition(f, cfg), "root.default")
	f.Add("sue", "dev", "ns", "team", "x", "root.prod.web")
	f.Add("john.doe", "", "", "Team", "a.b", "web")
	f.Add("", "", "", "", "", "")
	f.Add("mallory", "batch", "kube-system", "TEAM", "root.open", "root")
	f.Add("eve", "ops,Data.Sci,sue", "", "", "", "")
	f.Add("eve", "root.x,a b,nobody", "", "", "", "")
	f.Fuzz(func(t *testing.T, user, group, ns, key, value, queue string) {
		in := &Input{User: user, Namespace: ns, Labels: map[string]string{key: value}, Queue: queue}
		if group != "" {
			in.Groups = strings.Split(group, ",")
		}
		for _, opts := range []Options{{}, {SkipACL: true}} {
			got, err := pol.Place(in, fakeQueues{"root.team.sue": "leaf"}, opts)
			if err != nil {
				continue
			}
			if got.Queue != strings.ToLower(got.Queue) || !strings.HasPrefix(got.Queue, "root.") {
				t.Fatalf("placed in %q: not a lower-case path below root", got.Queue)
			}
		}
	})
}
