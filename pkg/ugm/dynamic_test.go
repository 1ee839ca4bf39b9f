package ugm

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// dynamicConfig has a root wildcard user limit, a child template on root
// (inherited by root.tenants, which has none) and one on root.capped, and
// a configured leaf root.fixed.
var dynamicConfig = queueconfigtest.Root(`
limits:
- limit: everyone
  users: ["*"]
  maxresources: {vcore: 3}
childtemplate:
  maxapplications: 2
  resources:
    max: {vcore: 2}
queues:
- name: fixed
- name: tenants
  parent: true
- name: capped
  parent: true
  childtemplate:
    resources:
      max: {vcore: 1}
`)

// queuePaths lists every queue ugm holds, with its max and maxapplications.
func queuePaths(m *Manager) []string {
	var out []string
	var walk func(q *QueueUsage)
	walk = func(q *QueueUsage) {
		out = append(out, q.QueuePath+" max="+q.MaxResources.String()+" apps="+itoa(q.MaxApplications))
		for _, c := range q.Children {
			walk(c)
		}
	}
	walk(m.Queues())
	sort.Strings(out)
	return out
}

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestDynamicQueues(t *testing.T) {
	m := withConfig(t, dynamicConfig)
	base := queuePaths(m)
	one := res(t, "cpu", "1", "pods", "1")
	mk := func(user, queue, app string) *Request {
		r := req(user, nil, queue, app, one)
		r.Create = true
		return r
	}

	// A check creates nothing.
	if err := m.Check(mk("sue", "root.team-a", "a1")); err != nil {
		t.Fatalf("check: %v", err)
	}
	if diff := cmp.Diff(base, queuePaths(m)); diff != "" {
		t.Fatalf("a check created queues (-before,+after):\n%s", diff)
	}
	// Without Create the queue must exist.
	plain := req("sue", nil, "root.team-a", "a1", one)
	var qe *QueueError
	if err := m.Check(plain); !errors.As(err, &qe) || qe.Reason != "does not exist in the queue config" {
		t.Fatalf("check without create: %v", err)
	}

	// Increases create the leaf with root's template, and missing parents.
	for _, r := range []*Request{mk("sue", "root.team-a", "a1"), mk("sue", "root.tenants.acme.web", "a2"), mk("bob", "root.capped.x", "b1")} {
		if err := m.Increase(r); err != nil {
			t.Fatalf("increase %s: %v", r.Queue, err)
		}
	}
	want := []string{
		"root max= apps=0",
		"root.capped max= apps=0",
		"root.capped.x max=cpu=1 apps=0",
		"root.fixed max= apps=0",
		"root.team-a max=cpu=2 apps=2",
		"root.tenants max= apps=0",
		"root.tenants.acme max= apps=0",
		"root.tenants.acme.web max=cpu=2 apps=2",
	}
	if diff := cmp.Diff(want, queuePaths(m)); diff != "" {
		t.Fatalf("queues (-want,+got):\n%s", diff)
	}
	for path, w := range map[string][3]bool{
		"root.team-a":         {true, true, false},
		"root.tenants.acme":   {true, false, false},
		"root.tenants":        {false, false, false}, // configured
		"root.nope":           {false, false, false},
		"root.tenants.acme.w": {false, false, false},
	} {
		e, l, d := m.DynamicQueue(path)
		if [3]bool{e, l, d} != w {
			t.Errorf("DynamicQueue(%s) = %v %v %v, want %v", path, e, l, d, w)
		}
	}

	run(t, m, []step{
		// The root wildcard user limit binds across dynamic queues: sue
		// holds 2 cpu in two of them, 3 with a third.
		{op: "check", r: mk("sue", "root.team-b", "a3")},
		{op: "inc", r: mk("sue", "root.team-b", "a3")},
		{op: "inc", r: mk("sue", "root.team-c", "a4"), refuse: &Refusal{Who: WhoUser, Name: "sue", Queue: "root", Limit: LimitResources, Resource: "cpu", Usage: 3000, Request: 1000, Max: 3000}},
		// The template's max on the new leaf, before anything exists.
		{op: "inc", r: func() *Request {
			r := mk("ann", "root.capped.y", "c1")
			r.Resources = res(t, "cpu", "2", "pods", "1")
			return r
		}(),
			refuse: &Refusal{Who: WhoQueue, Name: "root.capped.y", Queue: "root.capped.y", Limit: LimitResources, Resource: "cpu", Usage: 0, Request: 2000, Max: 1000}},
		// ... and on an existing dynamic leaf, with its maxapplications.
		{op: "inc", r: mk("ann", "root.team-a", "c2")},
		{op: "inc", r: mk("cy", "root.team-a", "c3"), refuse: &Refusal{Who: WhoQueue, Name: "root.team-a", Queue: "root.team-a", Limit: LimitResources, Resource: "cpu", Usage: 2000, Request: 1000, Max: 2000}},
		// Below a leaf nothing can be created.
		{op: "inc", r: mk("ann", "root.fixed.x", "c4"), errSub: `queue "root.fixed.x" cannot be created: root.fixed is a leaf queue`},
		{op: "inc", r: mk("ann", "root.team-a.x", "c4"), errSub: `queue "root.team-a.x" cannot be created: root.team-a is a leaf queue`},
		// A dynamic parent takes no pods.
		{op: "inc", r: mk("ann", "root.tenants.acme", "c5"), errSub: "is a parent queue"},
		// An application runs in one queue.
		{op: "inc", r: mk("sue", "root.team-z", "a1"), errSub: "application ns/a1 is already charged"},
	})
	if _, ok := m.queues.byPath["root.capped.y"]; ok {
		t.Error("a refused increase left root.capped.y behind")
	}
	if _, ok := m.queues.byPath["root.team-z"]; ok {
		t.Error("an application conflict left root.team-z behind")
	}

	// Emptied dynamic queues go, with their dynamic parents.
	for _, r := range []*Request{mk("sue", "root.tenants.acme.web", "a2"), mk("bob", "root.capped.x", "b1"), mk("sue", "root.team-b", "a3")} {
		if err := m.Decrease(r); err != nil {
			t.Fatal(err)
		}
	}
	want = []string{
		"root max= apps=0",
		"root.capped max= apps=0",
		"root.fixed max= apps=0",
		"root.team-a max=cpu=2 apps=2",
		"root.tenants max= apps=0",
	}
	if diff := cmp.Diff(want, queuePaths(m)); diff != "" {
		t.Fatalf("queues after releases (-want,+got):\n%s", diff)
	}
}

func TestDynamicQueuesReload(t *testing.T) {
	m := withConfig(t, dynamicConfig)
	one := res(t, "cpu", "1", "pods", "1")
	mk := func(user, queue, app string) *Request {
		r := req(user, nil, queue, app, one)
		r.Create = true
		return r
	}
	for _, r := range []*Request{mk("sue", "root.team-a", "a1"), mk("sue", "root.tenants.acme.web", "a2")} {
		if err := m.Increase(r); err != nil {
			t.Fatal(err)
		}
	}

	// Same tree, a new template on root: the dynamic queues in use stay
	// and take it.
	m.SetConfig(queueconfigtest.MustPartition(t, strings.Replace(dynamicConfig, "max: {vcore: 2}", "max: {vcore: 5}", 1)))
	if got := findQueue(m.Queues(), "root.team-a"); got == nil || got.MaxResources.String() != "cpu=5" {
		t.Fatalf("root.team-a after reload: %+v", got)
	}
	if got := findQueue(m.Queues(), "root.tenants.acme.web"); got == nil || got.MaxResources.String() != "cpu=5" {
		t.Fatalf("root.tenants.acme.web after reload: %+v", got)
	}

	// root.team-a now configured: its own limits, no longer dynamic.
	m.SetConfig(queueconfigtest.MustPartition(t, strings.Replace(dynamicConfig, "    - name: fixed\n", "    - name: fixed\n    - name: team-a\n      maxapplications: 7\n", 1)))
	if got := findQueue(m.Queues(), "root.team-a"); got == nil || got.MaxApplications != 7 || m.queues.byPath["root.team-a"].dynamic {
		t.Fatalf("root.team-a configured: %+v", got)
	}

	// root.tenants becomes a leaf: the dynamic queues below it drain.
	m.SetConfig(queueconfigtest.MustPartition(t, strings.Replace(dynamicConfig, "      parent: true\n    - name: capped", "    - name: capped", 1)))
	if e, _, d := m.DynamicQueue("root.tenants.acme.web"); !e || !d {
		t.Fatalf("below a leaf: DynamicQueue = exists %v, draining %v; want draining", e, d)
	}
	var qe *QueueError
	if err := m.Check(mk("bob", "root.tenants.acme.web", "b1")); !errors.As(err, &qe) {
		t.Fatalf("a draining queue took a pod: %v", err)
	}
	if err := m.Decrease(mk("sue", "root.tenants.acme.web", "a2")); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.queues.byPath["root.tenants.acme"]; ok {
		t.Error("the drained queues were not removed when empty")
	}

	// No config: a dynamic queue in use is just a queue.
	m.SetConfig(nil)
	if e, _, _ := m.DynamicQueue("root.team-a"); !e {
		t.Error("root.team-a lost its usage")
	}
}

func TestForceIncreaseDynamic(t *testing.T) {
	m := withConfig(t, dynamicConfig)
	one := res(t, "cpu", "5", "pods", "1")
	// Forced past the template's max: a running pod is never refused.
	r := req("sue", nil, "root.team-a", "a1", one)
	r.Create = true
	if err := m.ForceIncrease(r); err != nil {
		t.Fatal(err)
	}
	if e, l, d := m.DynamicQueue("root.team-a"); !e || !l || d {
		t.Errorf("forced with create: DynamicQueue = %v %v %v, want a dynamic leaf", e, l, d)
	}
	// Without create, or where nothing can be created: an unconfigured
	// queue that drains.
	for _, path := range []string{"root.other", "root.fixed.x"} {
		r := req("sue", nil, path, "x"+path, one)
		r.Create = path == "root.fixed.x"
		if err := m.ForceIncrease(r); err != nil {
			t.Fatal(err)
		}
		if e, _, d := m.DynamicQueue(path); !e || !d {
			t.Errorf("%s: DynamicQueue = exists %v draining %v, want a draining queue", path, e, d)
		}
	}
}
