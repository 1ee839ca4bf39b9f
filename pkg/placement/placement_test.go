package placement

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// tree is the queue tree most cases place into: leaves root.default and
// root.sandbox, a parent root.users (for dynamic queues), a parent
// root.team with leaves dev and only, and a parent root.other with dev.
const tree = `
partitions:
- name: default
  queues:
  - name: root
    submitacl: "*"
    queues:
    - name: default
    - name: sandbox
    - name: users
      parent: true
    - name: team
      queues:
      - name: dev
      - name: only
    - name: other
      queues:
      - name: dev
`

// withRules is tree with placement rules appended.
func withRules(rules string) string { return tree + "  placementrules:\n" + rules }

type placeCase struct {
	name string
	cfg  string // the config (tree when empty)
	in   Input
	qs   fakeQueues
	opts Options
	// want is the placement; wantErr a substring of the error instead.
	want    Result
	wantErr string
}

func runPlace(t *testing.T, tests []placeCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg == "" {
				cfg = tree
			}
			pol := New(queueconfigtest.MustPartition(t, cfg), "root.default")
			var qs Queues
			if tc.qs != nil {
				qs = tc.qs
			}
			got, err := pol.Place(&tc.in, qs, tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Place = %+v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Place: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Result{}, "Rule")); diff != "" {
				t.Errorf("Place (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNoRules(t *testing.T) {
	runPlace(t, []placeCase{
		{name: "named queue by full path", in: Input{User: "sue", Queue: "root.sandbox"}, want: Result{Queue: "root.sandbox"}},
		{name: "named queue by leaf name", in: Input{User: "sue", Queue: "only"}, want: Result{Queue: "root.team.only"}},
		{name: "names are case-insensitive", in: Input{User: "sue", Queue: "ROOT.Sandbox"}, want: Result{Queue: "root.sandbox"}},
		{name: "no named queue: the default queue", in: Input{User: "sue"}, want: Result{Queue: "root.default"}},
		{name: "a namespace alone does not place", in: Input{User: "sue", Namespace: "team-a"}, want: Result{Queue: "root.default"}},
		// Existence is ugm's to refuse, in its own words.
		{name: "a path that does not exist is kept", in: Input{User: "sue", Queue: "root.nope"}, want: Result{Queue: "root.nope"}},
		{name: "an ambiguous leaf name is an error", in: Input{User: "sue", Queue: "dev"}, wantErr: `queue "dev" is ambiguous: root.team.dev, root.other.dev`},
		{name: "an unknown bare name is an error", in: Input{User: "sue", Queue: "nope"}, wantErr: `queue "nope" does not exist in the queue config`},
	})
}

func TestNoConfig(t *testing.T) {
	pol := New(nil, "root.default")
	for in, want := range map[string]string{"": "root.default", "a": "root.a", "root.x.y": "root.x.y"} {
		got, err := pol.Place(&Input{User: "sue", Queue: in}, nil, Options{})
		if err != nil || got.Queue != want || got.Create {
			t.Errorf("queue %q: got %+v, %v; want %s", in, got, err, want)
		}
	}
}

func TestProvidedRule(t *testing.T) {
	create := withRules("  - name: provided\n    create: true\n")
	noCreate := withRules("  - name: provided\n")
	underUser := withRules("  - name: provided\n    create: true\n    parent:\n      name: user\n      create: true\n")
	runPlace(t, []placeCase{
		{name: "an existing queue", cfg: noCreate, in: Input{User: "sue", Queue: "root.sandbox"}, want: Result{Queue: "root.sandbox"}},
		{name: "a configured leaf by its name (our resolution)", cfg: noCreate, in: Input{User: "sue", Queue: "only"}, want: Result{Queue: "root.team.only"}},
		{name: "root.NAME by NAME", cfg: noCreate, in: Input{User: "sue", Queue: "sandbox"}, want: Result{Queue: "root.sandbox"}},
		{name: "no queue named: no match", cfg: noCreate, in: Input{User: "sue"},
			wantErr: "no placement rule placed the pod: 1. provided: the pod names no queue"},
		{name: "missing, create false: no match", cfg: noCreate, in: Input{User: "sue", Queue: "root.nope"},
			wantErr: "1. provided: root.nope does not exist and create is false"},
		{name: "missing, create true: created under root", cfg: create, in: Input{User: "sue", Queue: "Proj"}, want: Result{Queue: "root.proj", Create: true}},
		{name: "a full path is created as given", cfg: create, in: Input{User: "sue", Queue: "root.users.x"}, want: Result{Queue: "root.users.x", Create: true}},
		{name: "dots in a bare name are replaced", cfg: create, in: Input{User: "sue", Queue: "a.b"}, want: Result{Queue: "root.a_dot_b", Create: true}},
		{name: "a dynamic queue that exists matches without create", cfg: noCreate, qs: fakeQueues{"root.proj": "leaf"},
			in: Input{User: "sue", Queue: "proj"}, want: Result{Queue: "root.proj"}},
		{name: "an ambiguous name refuses the pod", cfg: create, in: Input{User: "sue", Queue: "dev", QueueFrom: "label queue"},
			wantErr: `placement rule 1 (provided (create)): queue "dev" (from label queue) is ambiguous: root.team.dev, root.other.dev`},
		{name: "an invalid name refuses the pod", cfg: create, in: Input{User: "sue", Queue: "a b"},
			wantErr: `"a b" is not a valid queue name`},
		{name: "an invalid part of a full path refuses the pod", cfg: create, in: Input{User: "sue", Queue: "root.a b.c"},
			wantErr: `"a b" is not a queue name`},
		{name: "parent rule: under the user's queue", cfg: underUser, in: Input{User: "developer", Queue: "my_special_queue"},
			want: Result{Queue: "root.developer.my_special_queue", Create: true}},
		{name: "parent rule: ignored for a full path", cfg: underUser, in: Input{User: "developer", Queue: "root.dev_queue"},
			want: Result{Queue: "root.dev_queue", Create: true}},
		{name: "a parent queue is skipped", cfg: noCreate, in: Input{User: "sue", Queue: "root.team"},
			wantErr: "1. provided: root.team is a parent queue; pods run only in leaf queues"},
	})
}

func TestUserRule(t *testing.T) {
	runPlace(t, []placeCase{
		{name: "the user's queue, created", cfg: withRules("  - name: user\n    create: true\n"),
			in: Input{User: "sue"}, want: Result{Queue: "root.sue", Create: true}},
		{name: "dots replaced, lower-cased", cfg: withRules("  - name: user\n    create: true\n"),
			in: Input{User: "Finance.Test"}, want: Result{Queue: "root.finance_dot_test", Create: true}},
		{name: "missing, create false: next rule", cfg: withRules("  - name: user\n  - name: fixed\n    value: root.sandbox\n"),
			in: Input{User: "developer"}, want: Result{Queue: "root.sandbox"}},
		{name: "an existing configured queue", cfg: withRules("  - name: user\n"),
			in: Input{User: "sandbox"}, want: Result{Queue: "root.sandbox"}},
		{name: "under a fixed parent", cfg: withRules("  - name: user\n    create: true\n    parent:\n      name: fixed\n      value: root.users\n"),
			in: Input{User: "sue"}, want: Result{Queue: "root.users.sue", Create: true}},
		{name: "a user name that is no queue name refuses the pod", cfg: withRules("  - name: user\n    create: true\n"),
			in: Input{User: strings.Repeat("u", 65)}, wantErr: "is not a valid queue name"},
	})
}

func TestTagRule(t *testing.T) {
	ns := withRules("  - name: tag\n    value: namespace\n    create: true\n")
	label := withRules("  - name: tag\n    value: Team\n    create: true\n    parent:\n      name: fixed\n      value: root.users\n")
	runPlace(t, []placeCase{
		{name: "the namespace", cfg: ns, in: Input{User: "sue", Namespace: "team-a"}, want: Result{Queue: "root.team-a", Create: true}},
		{name: "no namespace reads as default", cfg: ns, in: Input{User: "sue"}, want: Result{Queue: "root.default", Create: true}},
		{name: "the named queue does not matter", cfg: ns, in: Input{User: "sue", Namespace: "testing", Queue: "root.sandbox"},
			want: Result{Queue: "root.testing", Create: true}},
		{name: "a label, under a fixed parent", cfg: label, in: Input{User: "sue", Labels: map[string]string{"team": "ml"}},
			want: Result{Queue: "root.users.ml", Create: true}},
		{name: "an annotation when no label", cfg: label, in: Input{User: "sue", Annotations: map[string]string{"team": "ml"}},
			want: Result{Queue: "root.users.ml", Create: true}},
		{name: "a label before an annotation", cfg: label,
			in:   Input{User: "sue", Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"team": "b"}},
			want: Result{Queue: "root.users.a", Create: true}},
		{name: "a key differing in case", cfg: label, in: Input{User: "sue", Labels: map[string]string{"Team": "ML"}},
			want: Result{Queue: "root.users.ml", Create: true}},
		{name: "a full path in the tag skips the parent rule", cfg: label, in: Input{User: "sue", Labels: map[string]string{"team": "root.sandbox"}},
			want: Result{Queue: "root.sandbox", Create: true}},
		{name: "dots in the value are replaced", cfg: label, in: Input{User: "sue", Labels: map[string]string{"team": "a.b"}},
			want: Result{Queue: "root.users.a_dot_b", Create: true}},
		{name: "no such tag: no match", cfg: label, in: Input{User: "sue", Namespace: "x"},
			wantErr: `1. tag team (create, parent fixed root.users): the pod has no label or annotation "team"`},
		{name: "existing queue, create false", cfg: withRules("  - name: tag\n    value: namespace\n"),
			in: Input{User: "sue", Namespace: "sandbox"}, want: Result{Queue: "root.sandbox"}},
		{name: "missing queue, create false", cfg: withRules("  - name: tag\n    value: namespace\n"),
			in: Input{User: "sue", Namespace: "nope"}, wantErr: "root.nope does not exist and create is false"},
	})
}

func TestFixedRule(t *testing.T) {
	runPlace(t, []placeCase{
		{name: "a full path", cfg: withRules("  - name: fixed\n    value: root.sandbox\n"),
			in: Input{User: "sue", Queue: "root.default"}, want: Result{Queue: "root.sandbox"}},
		{name: "a bare name under root", cfg: withRules("  - name: fixed\n    value: Sandbox\n"),
			in: Input{User: "sue"}, want: Result{Queue: "root.sandbox"}},
		{name: "under a parent rule", cfg: withRules("  - name: fixed\n    value: jobs\n    create: true\n    parent:\n      name: user\n      create: true\n      parent:\n        name: fixed\n        value: root.users\n"),
			in: Input{User: "sue"}, want: Result{Queue: "root.users.sue.jobs", Create: true}},
		{name: "a missing queue without create", cfg: withRules("  - name: fixed\n    value: root.sandbox\n  - name: fixed\n    value: root.users.x\n    create: true\n"),
			in: Input{User: "sue"}, want: Result{Queue: "root.sandbox"}},
	})
}

func TestFilters(t *testing.T) {
	rule := func(filter string) string {
		return withRules("  - name: user\n    create: true\n    filter:\n" + filter + "  - name: fixed\n    value: root.sandbox\n")
	}
	placed := Result{Queue: "root.sue", Create: true}
	next := Result{Queue: "root.sandbox"}
	runPlace(t, []placeCase{
		{name: "allow users: listed", cfg: rule("      users: [sue, bob]\n"), in: Input{User: "sue"}, want: placed},
		{name: "allow users: not listed", cfg: rule("      users: [ann, bob]\n"), in: Input{User: "sue"}, want: next},
		{name: "deny users: listed", cfg: rule("      type: deny\n      users: [sue]\n"), in: Input{User: "sue"}, want: next},
		{name: "deny users: not listed", cfg: rule("      type: deny\n      users: [bob]\n"), in: Input{User: "sue"}, want: placed},
		{name: "allow groups: a group listed", cfg: rule("      groups: [ops, dev]\n"), in: Input{User: "sue", Groups: []string{"x", "dev"}}, want: placed},
		{name: "allow groups: none listed", cfg: rule("      groups: [ops, dev]\n"), in: Input{User: "sue", Groups: []string{"x"}}, want: next},
		{name: "a regexp matches anywhere (dev*)", cfg: rule("      groups: [\"dev*\"]\n"), in: Input{User: "sue", Groups: []string{"test_app", "my_dev_app"}}, want: placed},
		{name: "an anchored regexp", cfg: rule("      groups: [\"^dev\"]\n"), in: Input{User: "sue", Groups: []string{"my_dev_app"}}, want: next},
		{name: "a user regexp", cfg: rule("      users: [\"^s.e$\"]\n"), in: Input{User: "sue"}, want: placed},
		{name: "deny: a listed group of an unlisted user", cfg: rule("      type: deny\n      users: [sue]\n      groups: [ops]\n"),
			in: Input{User: "bob", Groups: []string{"ops"}}, want: next},
		{name: "deny by group", cfg: rule("      type: deny\n      groups: [ops]\n"), in: Input{User: "sue", Groups: []string{"ops"}}, want: next},
		{name: "an empty allow filter lets everyone through", cfg: rule("      type: allow\n"), in: Input{User: "sue"}, want: placed},
		{name: "an empty deny filter lets no one through", cfg: rule("      type: deny\n"), in: Input{User: "sue"}, want: next},
		{name: "invalid names in a list are ignored", cfg: rule("      users: [\"sue\", \"bad name\"]\n"), in: Input{User: "sue"}, want: placed},
		{name: "the message names the filter", cfg: withRules("  - name: user\n    create: true\n    filter:\n      users: [ann]\n"), in: Input{User: "sue"},
			wantErr: `1. user (create, filter allow users ann): filter (allow users ann) does not let user "sue" (no groups) through`},
	})
}

func TestParentRule(t *testing.T) {
	runPlace(t, []placeCase{
		// (A fixed parent naming a leaf is refused when the config loads.)
		{name: "a parent that gives a configured leaf refuses the pod",
			cfg: withRules("  - name: user\n    create: true\n    parent:\n      name: tag\n      value: namespace\n"),
			in:  Input{User: "sue", Namespace: "sandbox"}, wantErr: "placement rule 1 (user (create, parent tag namespace)): parent rule tag gave root.sandbox, which is a leaf queue"},
		{name: "a parent that gives a dynamic leaf refuses the pod",
			cfg: withRules("  - name: user\n    create: true\n    parent:\n      name: tag\n      value: namespace\n"),
			qs:  fakeQueues{"root.ns": "leaf"}, in: Input{User: "sue", Namespace: "ns"}, wantErr: "parent rule tag gave root.ns, which is a leaf queue"},
		{name: "a parent that does not exist, without create: no match",
			cfg: withRules("  - name: user\n    create: true\n    parent:\n      name: tag\n      value: namespace\n"),
			in:  Input{User: "sue", Namespace: "newapp"}, wantErr: "parent rule tag: root.newapp does not exist and create is false"},
		{name: "a parent with create: both created",
			cfg: withRules("  - name: user\n    create: true\n    parent:\n      name: tag\n      value: namespace\n      create: true\n"),
			in:  Input{User: "sue", Namespace: "newapp"}, want: Result{Queue: "root.newapp.sue", Create: true}},
		{name: "a dynamic parent that exists",
			cfg: withRules("  - name: user\n    create: true\n    parent:\n      name: tag\n      value: namespace\n"),
			qs:  fakeQueues{"root.newapp": "parent"}, in: Input{User: "sue", Namespace: "newapp"}, want: Result{Queue: "root.newapp.sue", Create: true}},
		{name: "a parent filtered out: no match",
			cfg: withRules("  - name: tag\n    value: namespace\n    create: true\n    parent:\n      name: fixed\n      value: root.users\n      filter:\n        users: [john]\n"),
			in:  Input{User: "sue", Namespace: "x"}, wantErr: `parent rule fixed: filter (allow users john) does not let user "sue" (no groups) through`},
	})
}

func TestQueueState(t *testing.T) {
	create := withRules("  - name: provided\n    create: true\n  - name: fixed\n    value: root.sandbox\n")
	runPlace(t, []placeCase{
		{name: "a draining queue is skipped", cfg: create, qs: fakeQueues{"root.old": "draining"}, in: Input{User: "sue", Queue: "root.old"},
			want: Result{Queue: "root.sandbox"}},
		{name: "a dynamic parent is skipped", cfg: create, qs: fakeQueues{"root.p": "parent"}, in: Input{User: "sue", Queue: "root.p"},
			want: Result{Queue: "root.sandbox"}},
		{name: "creating below a configured leaf refuses the pod", cfg: create, in: Input{User: "sue", Queue: "root.sandbox.x"},
			wantErr: "cannot create root.sandbox.x: root.sandbox is a leaf queue"},
		{name: "creating below a dynamic leaf refuses the pod", cfg: create, qs: fakeQueues{"root.d": "leaf"}, in: Input{User: "sue", Queue: "root.d.x"},
			wantErr: "cannot create root.d.x: root.d is a leaf queue"},
		{name: "creating below a draining queue refuses the pod", cfg: create, qs: fakeQueues{"root.old": "draining"}, in: Input{User: "sue", Queue: "root.old.x"},
			wantErr: "cannot create root.old.x: root.old left the queue config"},
		{name: "missing parents are created too", cfg: create, in: Input{User: "sue", Queue: "root.users.a.b"},
			want: Result{Queue: "root.users.a.b", Create: true}},
	})
}

// aclTree sets ACLs at several levels (ACL checks are on: submitacl is set).
const aclTree = `
partitions:
- name: default
  queues:
  - name: root
    adminacl: admin
    queues:
    - name: open
      submitacl: "*"
    - name: nobody
      submitacl: ""
    - name: prod
      submitacl: john,bob
      queues:
      - name: web
      - name: batch
        submitacl: " batch"
    - name: team
      parent: true
      adminacl: " leads"
      submitacl: sue dev
`

func TestACLs(t *testing.T) {
	rules := aclTree + "  placementrules:\n  - name: provided\n    create: true\n  - name: fixed\n    value: root.open\n"
	runPlace(t, []placeCase{
		{name: "wildcard", cfg: aclTree, in: Input{User: "anyone", Queue: "root.open"}, want: Result{Queue: "root.open"}},
		{name: "user listed", cfg: aclTree, in: Input{User: "john", Queue: "root.prod.web"}, want: Result{Queue: "root.prod.web"}},
		{name: "inherited from the parent", cfg: aclTree, in: Input{User: "bob", Queue: "root.prod.batch"}, want: Result{Queue: "root.prod.batch"}},
		{name: "groups only, leading space", cfg: aclTree, in: Input{User: "carl", Groups: []string{"batch"}, Queue: "root.prod.batch"}, want: Result{Queue: "root.prod.batch"}},
		{name: "the leaf's ACL does not reach its parent", cfg: aclTree, in: Input{User: "carl", Groups: []string{"batch"}, Queue: "root.prod.web"},
			wantErr: `user "carl" (groups batch) may not submit to queue root.prod.web: no ACL on its path allows it: root.prod submitacl "john,bob"; root adminacl "admin"`},
		{name: "adminacl grants submit, from root", cfg: aclTree, in: Input{User: "admin", Queue: "root.nobody"}, want: Result{Queue: "root.nobody"}},
		{name: "an empty ACL allows nobody", cfg: aclTree, in: Input{User: "sue", Queue: "root.nobody"},
			wantErr: `user "sue" may not submit to queue root.nobody: no ACL on its path allows it: root adminacl "admin"`},
		{name: "a user and a group list", cfg: rules, in: Input{User: "x", Groups: []string{"dev"}, Queue: "root.team.new"},
			want: Result{Queue: "root.team.new", Create: true}},
		{name: "an adminacl group on a parent covers a queue to create", cfg: rules, in: Input{User: "x", Groups: []string{"leads"}, Queue: "root.team.new"},
			want: Result{Queue: "root.team.new", Create: true}},
		{name: "a denied rule falls through to the next", cfg: rules, in: Input{User: "x", Queue: "root.team.new"},
			want: Result{Queue: "root.open"}},
		{name: "skipping ACLs (a pod that already runs)", cfg: aclTree, opts: Options{SkipACL: true}, in: Input{User: "sue", Queue: "root.nobody"},
			want: Result{Queue: "root.nobody"}},
		{name: "a queue that does not exist is left to ugm", cfg: aclTree, in: Input{User: "sue", Queue: "root.nope"},
			want: Result{Queue: "root.nope"}},
		{name: "no submitacl anywhere: checks are off", cfg: tree[:strings.Index(tree, "    submitacl")] + tree[strings.Index(tree, "    queues:"):],
			in: Input{User: "anyone", Queue: "root.sandbox"}, want: Result{Queue: "root.sandbox"}},
	})
}

func TestACLChecksSwitch(t *testing.T) {
	for _, tc := range []struct {
		name, cfg string
		on        bool
	}{
		{"no ACL", "partitions:\n- queues:\n  - name: root\n", false},
		{"only adminacl", "partitions:\n- queues:\n  - name: root\n    adminacl: sue\n", false},
		{"submitacl on a leaf", "partitions:\n- queues:\n  - name: root\n    queues:\n    - name: a\n      submitacl: sue\n", true},
		{"an empty submitacl", "partitions:\n- queues:\n  - name: root\n    submitacl: ''\n", true},
	} {
		if got := New(queueconfigtest.MustPartition(t, tc.cfg), "root.default").ACLChecks(); got != tc.on {
			t.Errorf("%s: ACLChecks = %v, want %v", tc.name, got, tc.on)
		}
	}
}

func TestParseACL(t *testing.T) {
	for _, tc := range []struct {
		acl    string
		user   string
		groups []string
		want   bool
	}{
		{"*", "x", nil, true},
		{" * ", "x", nil, true},
		{"", "x", nil, false},
		{" ", "x", nil, false},
		{"sue", "sue", nil, true},
		{"sue", "Sue", nil, false},
		{"sue,bob", "bob", nil, true},
		{"sue dev,test", "john", []string{"test"}, true},
		{"sue dev,test", "john", []string{"ops"}, false},
		{" dev", "dev", nil, false},
		{" dev", "x", []string{"dev"}, true},
		{"sue *", "x", nil, true},
		{"system:serviceaccount:ns:sa", "system:serviceaccount:ns:sa", nil, true},
	} {
		if got := parseACL(tc.acl).allows(tc.user, tc.groups); got != tc.want {
			t.Errorf("ACL %q allows %q %v = %v, want %v", tc.acl, tc.user, tc.groups, got, tc.want)
		}
	}
}

// TestNoMatchListsRules checks the refusal names every rule tried, in order.
func TestNoMatchListsRules(t *testing.T) {
	cfg := withRules("  - name: provided\n  - name: tag\n    value: namespace\n  - name: user\n    filter:\n      type: deny\n      users: [sue]\n")
	_, err := New(queueconfigtest.MustPartition(t, cfg), "root.default").Place(&Input{User: "sue", Namespace: "ns1"}, nil, Options{})
	var nm *NoMatchError
	if !errors.As(err, &nm) {
		t.Fatalf("got %v, want a *NoMatchError", err)
	}
	want := []string{
		"1. provided: the pod names no queue",
		"2. tag namespace: root.ns1 does not exist and create is false",
		`3. user (filter deny users sue): filter (deny users sue) does not let user "sue" (no groups) through`,
	}
	if diff := cmp.Diff(want, nm.Tried); diff != "" {
		t.Errorf("rules tried (-want,+got):\n%s", diff)
	}
}

func TestForCachesOne(t *testing.T) {
	p := queueconfigtest.MustPartition(t, tree)
	a := For(p, "root.default")
	if For(p, "root.default") != a {
		t.Error("same partition: compiled again")
	}
	if For(p, "root.sandbox") == a {
		t.Error("another default queue: the old policy was reused")
	}
	if For(p, "root.sandbox") != For(p, "root.sandbox") {
		t.Error("same partition and default queue: compiled again")
	}
}
