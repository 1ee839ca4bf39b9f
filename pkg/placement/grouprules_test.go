package placement

import "testing"

// The primaryGroup and secondaryGroup rules (issue 20, point 6): before
// them, both loaded and never placed a pod ("unknown rule").

func TestPrimaryGroupRule(t *testing.T) {
	create := withRules("  - name: primaryGroup\n    create: true\n")
	noCreate := withRules("  - name: primaryGroup\n  - name: fixed\n    value: root.default\n")
	underUsers := withRules("  - name: primaryGroup\n    create: true\n    parent:\n      name: fixed\n      value: root.users\n")
	runPlace(t, []placeCase{
		{name: "the first group, created", cfg: create, in: Input{User: "sue", Groups: []string{"dev", "ops"}},
			want: Result{Queue: "root.dev", Create: true}},
		{name: "lower-cased, dots replaced", cfg: create, in: Input{User: "sue", Groups: []string{"Data.Science"}},
			want: Result{Queue: "root.data_dot_science", Create: true}},
		{name: "a group named like a path is a name, not a path", cfg: create, in: Input{User: "sue", Groups: []string{"root.sandbox"}},
			want: Result{Queue: "root.root_dot_sandbox", Create: true}},
		{name: "no groups: no match", cfg: create, in: Input{User: "sue"},
			wantErr: `1. primaryGroup (create): user "sue" has no groups`},
		{name: "an existing configured queue, create false", cfg: noCreate, in: Input{User: "sue", Groups: []string{"sandbox", "dev"}},
			want: Result{Queue: "root.sandbox"}},
		{name: "missing, create false: next rule", cfg: noCreate, in: Input{User: "sue", Groups: []string{"dev", "sandbox"}},
			want: Result{Queue: "root.default"}},
		{name: "an existing dynamic queue, create false", cfg: noCreate, qs: fakeQueues{"root.dev": "leaf"},
			in: Input{User: "sue", Groups: []string{"dev"}}, want: Result{Queue: "root.dev"}},
		{name: "under a fixed parent", cfg: underUsers, in: Input{User: "sue", Groups: []string{"dev"}},
			want: Result{Queue: "root.users.dev", Create: true}},
		{name: "a parent queue named after the group is skipped", cfg: noCreate, in: Input{User: "sue", Groups: []string{"team"}},
			want: Result{Queue: "root.default"}},
		{name: "filtered out: next rule", cfg: withRules("  - name: primaryGroup\n    create: true\n    filter:\n      type: deny\n      groups: [dev]\n  - name: fixed\n    value: root.default\n"),
			in: Input{User: "sue", Groups: []string{"ops", "dev"}}, want: Result{Queue: "root.default"}},
		{name: "as a parent rule: the user below the group", cfg: withRules("  - name: user\n    create: true\n    parent:\n      name: primaryGroup\n      create: true\n"),
			in: Input{User: "sue", Groups: []string{"dev"}}, want: Result{Queue: "root.dev.sue", Create: true}},
		{name: "as a parent rule, no groups: no match", cfg: withRules("  - name: user\n    create: true\n    parent:\n      name: primaryGroup\n      create: true\n"),
			in: Input{User: "sue"}, wantErr: `parent rule primaryGroup: user "sue" has no groups`},
		{name: "a group that is no queue name refuses the pod", cfg: create, in: Input{User: "sue", Groups: []string{"a b"}},
			wantErr: `"a b" is not a valid queue name`},
	})
}

func TestSecondaryGroupRule(t *testing.T) {
	// root.team holds dev and only; root.users is a parent.
	underTeam := withRules("  - name: secondaryGroup\n    parent:\n      name: fixed\n      value: root.team\n  - name: fixed\n    value: root.default\n")
	top := withRules("  - name: secondaryGroup\n  - name: fixed\n    value: root.default\n")
	alone := withRules("  - name: secondaryGroup\n    parent:\n      name: fixed\n      value: root.team\n")
	runPlace(t, []placeCase{
		{name: "the first secondary group with a queue", cfg: underTeam, in: Input{User: "sue", Groups: []string{"sue", "nope", "only", "dev"}},
			want: Result{Queue: "root.team.only"}},
		{name: "the primary group is not a secondary group", cfg: underTeam, in: Input{User: "sue", Groups: []string{"dev", "nope"}},
			want: Result{Queue: "root.default"}},
		{name: "the primary group listed again is skipped", cfg: underTeam, in: Input{User: "sue", Groups: []string{"dev", "dev", "only"}},
			want: Result{Queue: "root.team.only"}},
		{name: "group names are lower-cased", cfg: underTeam, in: Input{User: "sue", Groups: []string{"sue", "DEV"}},
			want: Result{Queue: "root.team.dev"}},
		{name: "directly under root", cfg: top, in: Input{User: "sue", Groups: []string{"sue", "x", "sandbox"}},
			want: Result{Queue: "root.sandbox"}},
		{name: "a dynamic queue that exists counts", cfg: top, qs: fakeQueues{"root.ml": "leaf"},
			in: Input{User: "sue", Groups: []string{"sue", "x", "ml"}}, want: Result{Queue: "root.ml"}},
		{name: "never creates a queue", cfg: withRules("  - name: secondaryGroup\n    create: true\n"),
			in:      Input{User: "sue", Groups: []string{"sue", "x", "y"}},
			wantErr: `1. secondaryGroup (create): no secondary group of user "sue" has a queue: root.x, root.y do not exist`},
		{name: "one group only: no match", cfg: alone, in: Input{User: "sue", Groups: []string{"dev"}},
			wantErr: `1. secondaryGroup (parent fixed root.team): user "sue" has no secondary groups`},
		{name: "no groups: no match", cfg: alone, in: Input{User: "sue"},
			wantErr: `1. secondaryGroup (parent fixed root.team): user "sue" has no secondary groups`},
		{name: "the first existing queue is a parent: next rule", cfg: top, in: Input{User: "sue", Groups: []string{"sue", "team", "sandbox"}},
			want: Result{Queue: "root.default"}},
		{name: "a group that is no queue name is passed over", cfg: top, in: Input{User: "sue", Groups: []string{"sue", "a b", "sandbox"}},
			want: Result{Queue: "root.sandbox"}},
		{name: "filtered out: next rule", cfg: withRules("  - name: secondaryGroup\n    filter:\n      users: [bob]\n  - name: fixed\n    value: root.default\n"),
			in: Input{User: "sue", Groups: []string{"sue", "sandbox"}}, want: Result{Queue: "root.default"}},
		// YuniKorn's design example: user1 in groups user1 and companyA
		// goes to root.companyA.user1.
		{name: "as a parent rule: the user below the group's queue",
			cfg: withRules("  - name: user\n    create: true\n    parent:\n      name: secondaryGroup\n"),
			in:  Input{User: "sue", Groups: []string{"sue", "nope", "team"}}, want: Result{Queue: "root.team.sue", Create: true}},
		{name: "as a parent rule, no group queue: no match",
			cfg: withRules("  - name: user\n    create: true\n    parent:\n      name: secondaryGroup\n"),
			in:  Input{User: "sue", Groups: []string{"sue", "nope"}}, wantErr: `parent rule secondaryGroup: no secondary group of user "sue" has a queue: root.nope does not exist`},
		{name: "as a parent rule, a leaf refuses the pod",
			cfg: withRules("  - name: user\n    create: true\n    parent:\n      name: secondaryGroup\n"),
			in:  Input{User: "sue", Groups: []string{"sue", "sandbox"}}, wantErr: "parent rule secondaryGroup gave root.sandbox, which is a leaf queue"},
	})
}

// TestGroupRulesACL: a group rule whose queue the ACLs deny falls through
// to the next rule, as every rule does.
func TestGroupRulesACL(t *testing.T) {
	cfg := aclTree + "  placementrules:\n  - name: primaryGroup\n    create: true\n    parent:\n      name: fixed\n      value: root.team\n  - name: fixed\n    value: root.open\n"
	runPlace(t, []placeCase{
		{name: "a group the parent's ACL lets in", cfg: cfg, in: Input{User: "x", Groups: []string{"dev"}},
			want: Result{Queue: "root.team.dev", Create: true}},
		{name: "denied: next rule", cfg: cfg, in: Input{User: "x", Groups: []string{"ml"}},
			want: Result{Queue: "root.open"}},
	})
}
