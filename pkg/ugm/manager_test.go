package ugm

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// limitsConfig is the enforcement design document's example under a
// two-level tree, plus queue quotas.
var limitsConfig = queueconfigtest.Root(`
limits:
- limit: everyone at root
  users: ["*"]
  maxresources: {vcore: 10}
- limit: dev at root
  groups: [dev]
  maxresources: {vcore: 12}
queues:
- name: default
- name: a
  maxapplications: 4
  resources:
    max: {vcore: 9}
  queues:
  - name: leaf
    maxapplications: 4
    limits:
    - limit: specific user
      users: [sue]
      maxresources: {vcore: 5}
      maxapplications: 2
    - limit: specific groups
      groups: [development, test]
      maxresources: {vcore: 6}
    - limit: user catch all
      users: ["*"]
      maxresources: {vcore: 1}
    - limit: group catch all
      groups: ["*"]
      maxresources: {vcore: 3}
  - name: open
    maxapplications: 4
`)

// step is one operation of a scenario and what it must return.
type step struct {
	op     string // "inc", "dec", "check", "force"
	r      *Request
	refuse *Refusal // expected refusal (nil: allowed), compared field by field
	errSub string   // expected error substring for non-refusal errors
}

func run(t *testing.T, m *Manager, steps []step) {
	t.Helper()
	for i, s := range steps {
		var err error
		switch s.op {
		case "inc":
			err = m.Increase(s.r)
		case "force":
			err = m.ForceIncrease(s.r)
		case "dec":
			err = m.Decrease(s.r)
		case "check":
			err = m.Check(s.r)
		}
		var got *Refusal
		errors.As(err, &got)
		switch {
		case s.refuse != nil:
			if got == nil {
				t.Fatalf("step %d (%s %s/%s): got %v, want refusal %+v", i, s.op, s.r.User, s.r.App.ID, err, *s.refuse)
			}
			if diff := cmp.Diff(s.refuse, got); diff != "" {
				t.Fatalf("step %d: refusal (-want,+got):\n%s", i, diff)
			}
		case s.errSub != "":
			if err == nil || !strings.Contains(err.Error(), s.errSub) {
				t.Fatalf("step %d (%s): error %v, want one containing %q", i, s.op, err, s.errSub)
			}
		default:
			if err != nil {
				t.Fatalf("step %d (%s %s/%s): unexpected error: %v", i, s.op, s.r.User, s.r.App.ID, err)
			}
		}
	}
}

func TestEnforcement(t *testing.T) {
	leaf := "root.a.leaf"
	cpu := func(n string) map[string]string { return map[string]string{"cpu": n} }
	_ = cpu
	tests := []struct {
		name  string
		steps func(t *testing.T) []step
	}{
		{name: "named user beats wildcard", steps: func(t *testing.T) []step {
			return []step{
				{op: "inc", r: req("sue", nil, leaf, "s1", res(t, "cpu", "4"))},
				{op: "inc", r: req("sue", nil, leaf, "s1", res(t, "cpu", "1"))},
				{op: "check", r: req("sue", nil, leaf, "s1", res(t, "cpu", "1")), refuse: &Refusal{Who: "user", Name: "sue", Queue: leaf, Limit: "resources", Resource: "cpu", Usage: 5000, Request: 1000, Max: 5000}},
			}
		}},
		{name: "wildcard user applies to others", steps: func(t *testing.T) []step {
			return []step{
				{op: "inc", r: req("bob", nil, leaf, "b1", res(t, "cpu", "1"))},
				{op: "inc", r: req("bob", nil, leaf, "b1", res(t, "cpu", "100m")), refuse: &Refusal{Who: "user", Name: "bob", Queue: leaf, Limit: "resources", Resource: "cpu", Usage: 1000, Request: 100, Max: 1000}},
			}
		}},
		{name: "named group limit", steps: func(t *testing.T) []step {
			return []step{
				{op: "inc", r: req("sue", []string{"test"}, leaf, "s1", res(t, "cpu", "5"))},
				{op: "inc", r: req("bob", []string{"test"}, leaf, "b1", res(t, "cpu", "1"))},
				// ann has no user limit beyond the wildcard 1 cpu: user refuses first.
				{op: "check", r: req("ann", []string{"test"}, leaf, "a1", res(t, "cpu", "2")), refuse: &Refusal{Who: "user", Name: "ann", Queue: leaf, Limit: "resources", Resource: "cpu", Usage: 0, Request: 2000, Max: 1000}},
				{op: "inc", r: req("ann", []string{"test"}, leaf, "a1", res(t, "cpu", "1")), refuse: &Refusal{Who: "group", Name: "test", Queue: leaf, Limit: "resources", Resource: "cpu", Usage: 6000, Request: 1000, Max: 6000}},
			}
		}},
		{name: "wildcard group is cumulative", steps: func(t *testing.T) []step {
			return []step{
				{op: "inc", r: req("u1", []string{"other"}, leaf, "x1", res(t, "cpu", "1"))},
				{op: "inc", r: req("u2", []string{"misc"}, leaf, "x2", res(t, "cpu", "1"))},
				{op: "inc", r: req("u3", []string{"misc"}, leaf, "x3", res(t, "cpu", "1"))},
				{op: "inc", r: req("u4", []string{"z"}, leaf, "x4", res(t, "cpu", "1")), refuse: &Refusal{Who: "group", Name: "*", Queue: leaf, Limit: "resources", Resource: "cpu", Usage: 3000, Request: 1000, Max: 3000}},
				// no groups: no group tracking, only the user limit.
				{op: "inc", r: req("u5", nil, leaf, "x5", res(t, "cpu", "1"))},
			}
		}},
		{name: "maxapplications refuses only a new application", steps: func(t *testing.T) []step {
			return []step{
				{op: "inc", r: req("sue", nil, leaf, "s1", res(t, "cpu", "1"))},
				{op: "inc", r: req("sue", nil, leaf, "s2", res(t, "cpu", "1"))},
				{op: "inc", r: req("sue", nil, leaf, "s2", res(t, "cpu", "1"))},
				{op: "inc", r: req("sue", nil, leaf, "s3", res(t, "cpu", "1")), refuse: &Refusal{Who: "user", Name: "sue", Queue: leaf, Limit: "applications", Usage: 2, Request: 1, Max: 2}},
				{op: "dec", r: req("sue", nil, leaf, "s1", res(t, "cpu", "1"))},
				{op: "inc", r: req("sue", nil, leaf, "s3", res(t, "cpu", "1"))},
				// s1 ended: its next pod is a new application again.
				{op: "inc", r: req("sue", nil, leaf, "s1", res(t, "cpu", "1")), refuse: &Refusal{Who: "user", Name: "sue", Queue: leaf, Limit: "applications", Usage: 2, Request: 1, Max: 2}},
			}
		}},
		{name: "leaf within, root over", steps: func(t *testing.T) []step {
			return []step{
				{op: "inc", r: req("bob", nil, "root.default", "b1", res(t, "cpu", "9500m"))},
				{op: "inc", r: req("bob", nil, leaf, "b2", res(t, "cpu", "1")), refuse: &Refusal{Who: "user", Name: "bob", Queue: "root", Limit: "resources", Resource: "cpu", Usage: 9500, Request: 1000, Max: 10000}},
			}
		}},
		{name: "queue max bounds every user together", steps: func(t *testing.T) []step {
			return []step{
				{op: "inc", r: req("sue", nil, leaf, "s1", res(t, "cpu", "5"))},
				{op: "inc", r: req("ann", nil, "root.a.open", "a1", res(t, "cpu", "4"))},
				{op: "inc", r: req("joe", nil, "root.a.open", "j1", res(t, "cpu", "1")), refuse: &Refusal{Who: "queue", Name: "root.a", Queue: "root.a", Limit: "resources", Resource: "cpu", Usage: 9000, Request: 1000, Max: 9000}},
				{op: "inc", r: req("joe", nil, "root.default", "j1", res(t, "cpu", "1"))},
			}
		}},
		{name: "queue maxapplications", steps: func(t *testing.T) []step {
			return []step{
				{op: "inc", r: req("u1", nil, leaf, "1", res(t, "memory", "1"))},
				{op: "inc", r: req("u2", nil, leaf, "2", res(t, "memory", "1"))},
				{op: "inc", r: req("u3", nil, "root.a.open", "3", res(t, "cpu", "1"))},
				{op: "inc", r: req("u4", nil, "root.a.open", "4", res(t, "memory", "1"))},
				{op: "inc", r: req("u5", nil, "root.a.open", "5", res(t, "memory", "1")), refuse: &Refusal{Who: "queue", Name: "root.a", Queue: "root.a", Limit: "applications", Usage: 4, Request: 1, Max: 4}},
				{op: "inc", r: req("u4", nil, "root.a.open", "4", res(t, "memory", "1"))},
			}
		}},
		{name: "group refusal leaves the user unchanged", steps: func(t *testing.T) []step {
			return []step{
				{op: "inc", r: req("sue", []string{"development"}, leaf, "s1", res(t, "cpu", "5"))},
				{op: "inc", r: req("bob", []string{"development"}, leaf, "b1", res(t, "cpu", "1"))},
				{op: "inc", r: req("ann", []string{"development"}, leaf, "a1", res(t, "cpu", "1")), refuse: &Refusal{Who: "group", Name: "development", Queue: leaf, Limit: "resources", Resource: "cpu", Usage: 6000, Request: 1000, Max: 6000}},
				// ann was not created: the refusal changed nothing.
				{op: "dec", r: req("ann", []string{"development"}, leaf, "a1", res(t, "cpu", "1")), errSub: "not tracked"},
				{op: "dec", r: req("bob", []string{"development"}, leaf, "b1", res(t, "cpu", "1"))},
				{op: "inc", r: req("ann", []string{"development"}, leaf, "a1", res(t, "cpu", "1"))},
			}
		}},
		{name: "unknown and parent queues", steps: func(t *testing.T) []step {
			return []step{
				{op: "inc", r: req("sue", nil, "root.nope", "s1", res(t, "cpu", "1")), errSub: `queue "root.nope" does not exist`},
				{op: "inc", r: req("sue", nil, "root.a", "s1", res(t, "cpu", "1")), errSub: "is a parent queue"},
				{op: "inc", r: req("sue", nil, "nope", "s1", res(t, "cpu", "1")), errSub: "must start with root"},
			}
		}},
		{name: "application charged to another user or queue", steps: func(t *testing.T) []step {
			return []step{
				{op: "inc", r: req("sue", nil, leaf, "shared", res(t, "cpu", "1"))},
				{op: "inc", r: req("bob", nil, leaf, "shared", res(t, "cpu", "1")), errSub: `already charged to user "sue" in queue root.a.leaf`},
				{op: "inc", r: req("sue", nil, "root.default", "shared", res(t, "cpu", "1")), errSub: "already charged"},
			}
		}},
		{name: "decrease of an unknown application", steps: func(t *testing.T) []step {
			return []step{
				{op: "dec", r: req("sue", nil, leaf, "ghost", res(t, "cpu", "1")), errSub: "not tracked"},
			}
		}},
		{name: "first violation order: user before group before queue", steps: func(t *testing.T) []step {
			return []step{
				{op: "inc", r: req("sue", []string{"test"}, leaf, "s1", res(t, "cpu", "5"))},
				{op: "inc", r: req("sue", []string{"test"}, leaf, "s1", res(t, "cpu", "2")), refuse: &Refusal{Who: "user", Name: "sue", Queue: leaf, Limit: "resources", Resource: "cpu", Usage: 5000, Request: 2000, Max: 5000}},
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := withConfig(t, limitsConfig)
			run(t, m, tc.steps(t))
		})
	}
}

func TestGroupResolution(t *testing.T) {
	var cfg = queueconfigtest.Root(`
limits:
- limit: named high
  groups: [dev]
  maxresources: {vcore: 2}
queues:
- name: mid
  limits:
  - limit: named first
    groups: [ops, dev]
    maxresources: {vcore: 2}
  - limit: named second
    groups: [qa]
    maxresources: {vcore: 20}
  - limit: wild
    groups: ["*"]
    maxresources: {vcore: 20}
  queues:
  - name: leaf
- name: wildlow
  limits:
  - limit: some
    groups: [nobodys]
    maxresources: {vcore: 1}
  - limit: wild
    groups: ["*"]
    maxresources: {vcore: 20}
- name: plain
`)
	tests := []struct {
		name   string
		groups []string
		queue  string
		want   string
	}{
		{name: "first limit entry wins over group order", groups: []string{"qa", "dev"}, queue: "root.mid.leaf", want: "dev"},
		{name: "entry order within one entry", groups: []string{"dev", "ops"}, queue: "root.mid.leaf", want: "ops"},
		{name: "named before wildcard on one level", groups: []string{"qa"}, queue: "root.mid.leaf", want: "qa"},
		{name: "wildcard when no named match", groups: []string{"x"}, queue: "root.mid.leaf", want: "*"},
		{name: "wildcard low hides named high", groups: []string{"dev"}, queue: "root.wildlow", want: "*"},
		{name: "walk up to root", groups: []string{"dev"}, queue: "root.plain", want: "dev"},
		{name: "no match anywhere", groups: []string{"x"}, queue: "root.plain", want: ""},
		{name: "no groups", groups: nil, queue: "root.mid.leaf", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := withConfig(t, cfg)
			r := req("u", tc.groups, tc.queue, "app", res(t, "cpu", "1"))
			// What a new application would be tracked against, as the
			// hold's barrier asks it (TrackedGroup, Decide).
			if got := m.TrackedGroup(r); got != tc.want {
				t.Errorf("TrackedGroup = %q, want %q", got, tc.want)
			}
			if d := m.Decide("p1", func(*InForce, Queues) (Request, error) { return *r, nil }, false); d.Err != nil || d.Group != tc.want {
				t.Errorf("Decide = group %q, %v; want %q", d.Group, d.Err, tc.want)
			}
			if err := m.Increase(r); err != nil {
				t.Fatal(err)
			}
			u, ok := m.User("u")
			if !ok {
				t.Fatal("user not tracked")
			}
			if got := u.Groups["ns/app"]; got != tc.want {
				t.Fatalf("group = %q, want %q", got, tc.want)
			}
			// The group is fixed for the application's life, even if the
			// user's groups change on its next pod.
			r2 := req("u", []string{"qa"}, tc.queue, "app", res(t, "cpu", "1"))
			if err := m.Increase(r2); err != nil {
				t.Fatal(err)
			}
			if u, _ := m.User("u"); u.Groups["ns/app"] != tc.want {
				t.Fatalf("group changed to %q", u.Groups["ns/app"])
			}
			if got := m.TrackedGroup(r2); got != tc.want {
				t.Errorf("TrackedGroup of the running application = %q, want %q", got, tc.want)
			}
			if tc.want != "" {
				if _, ok := m.Group(tc.want); !ok {
					t.Fatalf("group %q not tracked", tc.want)
				}
			}
			if tc.want == "dev" && tc.queue == "root.plain" {
				// dev's root limit (2) now binds dev: 2 cpu used.
				err := m.Check(req("v", []string{"dev"}, "root.plain", "other", res(t, "cpu", "1")))
				var r *Refusal
				if !errors.As(err, &r) || r.Who != "group" || r.Name != "dev" || r.Queue != "root" {
					t.Fatalf("Check = %v, want a group dev refusal at root", err)
				}
			}
		})
	}
}

func TestConfigReloadKeepsUsage(t *testing.T) {
	m := withConfig(t, limitsConfig)
	leaf := "root.a.leaf"
	for _, app := range []string{"s1", "s2"} {
		if err := m.Increase(req("sue", nil, leaf, app, res(t, "cpu", "2"))); err != nil {
			t.Fatal(err)
		}
	}
	tighter := strings.Replace(limitsConfig, "maxresources: {vcore: 5}", "maxresources: {vcore: 3}", 1)
	m.SetConfig(queueconfigtest.MustPartition(t, tighter))
	u, _ := m.User("sue")
	if got := u.Queues.ResourceUsage.Get(0); got != 4000 {
		t.Fatalf("usage after reload = %d, want 4000", got)
	}
	err := m.Increase(req("sue", nil, leaf, "s1", res(t, "cpu", "100m")))
	var r *Refusal
	if !errors.As(err, &r) || r.Max != 3000 || r.Usage != 4000 {
		t.Fatalf("increase over new limit = %v", err)
	}
	// A request that does not add cpu is not blocked by cpu usage above the limit.
	if err := m.Increase(req("sue", nil, leaf, "s1", res(t, "memory", "1Gi"))); err != nil {
		t.Fatalf("memory-only increase refused: %v", err)
	}
	// Releases go through and trackers disappear when empty.
	for _, d := range []*Request{
		req("sue", nil, leaf, "s1", res(t, "cpu", "2")),
		req("sue", nil, leaf, "s1", res(t, "memory", "1Gi")),
		req("sue", nil, leaf, "s2", res(t, "cpu", "2")),
	} {
		if err := m.Decrease(d); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.Users()) != 0 || !m.Queues().ResourceUsage.IsZero() {
		t.Fatalf("not empty after release: %+v", m.Users())
	}
}

func TestQueueRemovedFromConfig(t *testing.T) {
	m := withConfig(t, limitsConfig)
	r := req("bob", nil, "root.a.open", "b1", res(t, "cpu", "1"))
	if err := m.Increase(r); err != nil {
		t.Fatal(err)
	}
	without := strings.Replace(limitsConfig, "      - name: open\n        maxapplications: 4\n", "", 1)
	m.SetConfig(queueconfigtest.MustPartition(t, without))
	if err := m.Increase(req("bob", nil, "root.a.open", "b2", res(t, "cpu", "1"))); err == nil {
		t.Fatal("increase in a removed queue allowed")
	}
	if q := findQueue(m.Queues(), "root.a.open"); q == nil || q.ResourceUsage.Get(0) != 1000 {
		t.Fatalf("removed queue lost its usage: %+v", q)
	}
	if err := m.Decrease(r); err != nil {
		t.Fatal(err)
	}
	if q := findQueue(m.Queues(), "root.a.open"); q != nil {
		t.Fatal("removed queue kept after it emptied")
	}
}

func findQueue(q *QueueUsage, path string) *QueueUsage {
	if q == nil {
		return nil
	}
	if q.QueuePath == path {
		return q
	}
	for _, c := range q.Children {
		if f := findQueue(c, path); f != nil {
			return f
		}
	}
	return nil
}

func TestNoConfigTracksEverything(t *testing.T) {
	m := New()
	r := req("sue", []string{"dev"}, "root.anything.at.all", "a", res(t, "cpu", "1000"))
	if err := m.Increase(r); err != nil {
		t.Fatal(err)
	}
	if u, ok := m.User("sue"); !ok || u.Queues.ResourceUsage.Get(0) != 1_000_000 {
		t.Fatalf("user = %+v", u)
	}
	if len(m.Groups()) != 0 {
		t.Fatal("group tracked without any group limit")
	}
	if err := m.Decrease(r); err != nil || len(m.Users()) != 0 {
		t.Fatalf("decrease: %v, users %v", err, m.Users())
	}
}

func TestForceIncreaseIgnoresLimits(t *testing.T) {
	m := withConfig(t, limitsConfig)
	r := req("bob", nil, "root.a.leaf", "b1", res(t, "cpu", "50"))
	if err := m.ForceIncrease(r); err != nil {
		t.Fatal(err)
	}
	if err := m.ForceIncrease(req("bob", nil, "root.gone", "b2", res(t, "cpu", "1"))); err != nil {
		t.Fatalf("force into a queue missing from config: %v", err)
	}
	if err := m.ForceIncrease(req("ann", nil, "root.a.leaf", "b1", res(t, "cpu", "1"))); err == nil {
		t.Fatal("force with an application conflict allowed")
	}
}

// TestForceCommitReportsOver: a forced charge is made whatever the limits
// say and reports the first one it took over, as Commit's check would
// have refused it, on usage alone: room held by admissions (the pod's own
// or another's) is no usage. A queue the config lacks counts its
// ancestors' limits, a dynamic queue its child template's max; no config
// has no limit to be over.
func TestForceCommitReportsOver(t *testing.T) {
	type over struct{ Who, Name, Queue, Limit string }
	for _, tc := range []struct {
		name  string
		m     func(t *testing.T) *Manager // with what runs and is held
		key   string
		force *Request
		want  *over
	}{
		{name: "fits", m: func(t *testing.T) *Manager { return withConfig(t, limitsConfig) },
			force: req("sue", nil, "root.a.leaf", "s1", res(t, "cpu", "5"))},
		{name: "over the user's resources", m: func(t *testing.T) *Manager {
			m := withConfig(t, limitsConfig)
			mustIncrease(t, m, req("sue", nil, "root.a.leaf", "s1", res(t, "cpu", "4")))
			return m
		}, force: req("sue", nil, "root.a.leaf", "s2", res(t, "cpu", "2")),
			want: &over{WhoUser, "sue", "root.a.leaf", LimitResources}},
		{name: "over the user's applications", m: func(t *testing.T) *Manager {
			m := withConfig(t, limitsConfig)
			mustIncrease(t, m, req("sue", nil, "root.a.leaf", "s1", res(t, "cpu", "1")))
			mustIncrease(t, m, req("sue", nil, "root.a.leaf", "s2", res(t, "cpu", "1")))
			return m
		}, force: req("sue", nil, "root.a.leaf", "s3", res(t, "cpu", "1")),
			want: &over{WhoUser, "sue", "root.a.leaf", LimitApplications}},
		{name: "over a parent queue's max", m: func(t *testing.T) *Manager {
			m := withConfig(t, limitsConfig)
			mustIncrease(t, m, req("sue", nil, "root.a.leaf", "s1", res(t, "cpu", "5")))
			mustIncrease(t, m, req("ann", nil, "root.a.open", "a1", res(t, "cpu", "4")))
			return m
		}, force: req("carl", nil, "root.a.open", "c1", res(t, "cpu", "1")),
			want: &over{WhoQueue, "root.a", "root.a", LimitResources}},
		{name: "its own held room does not count", m: func(t *testing.T) *Manager {
			m := withConfig(t, limitsConfig)
			mustAdmit(t, m, "p", req("sue", nil, "root.a.leaf", "s1", res(t, "cpu", "5")))
			return m
		}, key: "p", force: req("sue", nil, "root.a.leaf", "s1", res(t, "cpu", "5"))},
		{name: "another pod's held room is no usage", m: func(t *testing.T) *Manager {
			m := withConfig(t, limitsConfig)
			mustAdmit(t, m, "q", req("sue", nil, "root.a.leaf", "s1", res(t, "cpu", "4")))
			return m
		}, key: "p", force: req("sue", nil, "root.a.leaf", "s2", res(t, "cpu", "2"))},
		{name: "another pod's held room is no usage, nor its application", m: func(t *testing.T) *Manager {
			m := withConfig(t, limitsConfig)
			mustIncrease(t, m, req("sue", nil, "root.a.leaf", "s1", res(t, "cpu", "1")))
			mustAdmit(t, m, "q", req("sue", nil, "root.a.leaf", "s2", res(t, "cpu", "1")))
			return m
		}, key: "p", force: req("sue", nil, "root.a.leaf", "s3", res(t, "cpu", "1"))},
		{name: "a queue missing from the config: its parents' limits", m: func(t *testing.T) *Manager {
			m := withConfig(t, limitsConfig)
			mustIncrease(t, m, req("sue", nil, "root.a.leaf", "s1", res(t, "cpu", "5")))
			mustIncrease(t, m, req("ann", nil, "root.a.open", "a1", res(t, "cpu", "4")))
			return m
		}, force: req("bob", nil, "root.a.gone", "b1", res(t, "cpu", "1")),
			want: &over{WhoQueue, "root.a", "root.a", LimitResources}},
		{name: "a queue missing from the config: root's user limit", m: func(t *testing.T) *Manager { return withConfig(t, limitsConfig) },
			force: req("bob", nil, "root.gone", "b1", res(t, "cpu", "50")),
			want:  &over{WhoUser, "bob", "root", LimitResources}},
		{name: "a dynamic queue created: its child template's max", m: func(t *testing.T) *Manager { return withConfig(t, templateConfig) },
			force: &Request{User: "bob", Queue: "root.dyn.bob", Create: true, App: AppKey{Namespace: "ns", ID: "b1"}, Resources: res(t, "cpu", "3")},
			want:  &over{WhoQueue, "root.dyn.bob", "root.dyn.bob", LimitResources}},
		{name: "a dynamic queue created within its child template's max", m: func(t *testing.T) *Manager { return withConfig(t, templateConfig) },
			force: &Request{User: "bob", Queue: "root.dyn.bob", Create: true, App: AppKey{Namespace: "ns", ID: "b1"}, Resources: res(t, "cpu", "2")}},
		{name: "no config", m: func(*testing.T) *Manager { return New() },
			force: req("bob", nil, "root.a.leaf", "b1", res(t, "cpu", "50"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m(t)
			r, err := m.ForceCommit(tc.key, tc.force)
			if err != nil {
				t.Fatalf("ForceCommit: %v", err)
			}
			var got *over
			if r != nil {
				got = &over{r.Who, r.Name, r.Queue, r.Limit}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("over (-want,+got):\n%s", diff)
			}
			if _, ok := m.User(tc.force.User); !ok {
				t.Errorf("%s not charged", tc.force.User)
			}
		})
	}
}

// templateConfig creates root.dyn's children with a max of 2 cpu.
var templateConfig = queueconfigtest.Root(`
queues:
- name: dyn
  parent: true
  childtemplate:
    resources:
      max: {vcore: 2}
`)

func mustIncrease(t *testing.T, m *Manager, r *Request) {
	t.Helper()
	if err := m.Increase(r); err != nil {
		t.Fatal(err)
	}
}

func mustAdmit(t *testing.T, m *Manager, key string, r *Request) {
	t.Helper()
	if err := m.Admit(key, r); err != nil {
		t.Fatal(err)
	}
}

func TestResize(t *testing.T) {
	m := withConfig(t, limitsConfig)
	r := req("sue", nil, "root.a.leaf", "s1", res(t, "cpu", "2"))
	if err := m.Increase(r); err != nil {
		t.Fatal(err)
	}
	// Growing to 4 fits (limit 5).
	if err := m.Resize(r, res(t, "cpu", "4")); err != nil {
		t.Fatal(err)
	}
	r.Resources = res(t, "cpu", "4")
	// Asked first (an admission webhook), growing to 7 meets the refusal
	// Resize reports, and nothing changes.
	var asked *Refusal
	if err := m.CheckResize(r, res(t, "cpu", "7")); !errors.As(err, &asked) || asked.Request != 3000 {
		t.Fatalf("check of a resize over the limit = %v", err)
	}
	if u, _ := m.User("sue"); u.Queues.ResourceUsage.Get(0) != 4000 {
		t.Fatalf("usage after the check = %d, want 4000 (unchanged)", u.Queues.ResourceUsage.Get(0))
	}
	// Growing to 7 goes over: applied anyway, refusal reported.
	err := m.Resize(r, res(t, "cpu", "7"))
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Request != 3000 {
		t.Fatalf("resize over limit = %v", err)
	}
	if u, _ := m.User("sue"); u.Queues.ResourceUsage.Get(0) != 7000 {
		t.Fatalf("usage after resize = %d", u.Queues.ResourceUsage.Get(0))
	}
	r.Resources = res(t, "cpu", "7")
	if err := m.Decrease(r); err != nil || len(m.Users()) != 0 {
		t.Fatalf("decrease after resize: %v", err)
	}
}
