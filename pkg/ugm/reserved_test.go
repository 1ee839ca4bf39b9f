package ugm

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// reservedConfig: in root.g (20 cpu, 3 applications) each user may use 16
// cpu and group dev 18; root.dyn creates leaves of at most 3 cpu.
const reservedConfig = `
partitions:
- name: default
  queues:
  - name: root
    submitacl: "*"
    queues:
    - name: g
      maxapplications: 3
      resources: {max: {vcore: 20}}
      limits:
      - limit: everyone
        users: ["*"]
        maxresources: {vcore: 16}
      - limit: dev
        groups: [dev]
        maxresources: {vcore: 18}
    - name: dyn
      parent: true
      childtemplate:
        resources: {max: {vcore: 3}}
`

// treeLines renders a usage tree one node a line, parents first: what
// TestReservedInSnapshots compares.
func treeLines(q *QueueUsage) []string {
	if q == nil {
		return nil
	}
	out := []string{fmt.Sprintf("%s: used=%s apps=%v max=%s/%d reserved=%s gangs=%v", q.QueuePath, q.ResourceUsage,
		q.RunningApplications, q.MaxResources, q.MaxApplications, q.ReservedResource, q.ReservedGangs)}
	for _, c := range q.Children {
		out = append(out, treeLines(c)...)
	}
	return out
}

// TestReservedInSnapshots: a gang's reservation shows beside usage for
// its user, its group and every queue on its path, even before any of its
// pods runs; drawn and committed, it moves to usage; released, it goes.
func TestReservedInSnapshots(t *testing.T) {
	dev := []string{"dev"}
	gang := func(user, queue, app, cpu string) *Request {
		return req(user, dev, queue, app, res(t, "cpu", cpu, "pods", cpu))
	}
	pod := func(user, app string) *Request { return req(user, dev, "root.g", app, res(t, "cpu", "1", "pods", "1")) }
	for _, tc := range []struct {
		name string
		ops  []admitOp
		// users and groups: each one's tree; queues: the queue tree.
		users, groups map[string][]string
		queues        []string
	}{
		{name: "a gang reserved before any pod runs shows its user, group and queues", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "root.g", "s1", "8")},
		}, users: map[string][]string{"sue": {
			"root: used= apps=[] max=/0 reserved=cpu=8,pods=8 gangs=[sue-1]",
			"root.g: used= apps=[] max=cpu=16/0 reserved=cpu=8,pods=8 gangs=[sue-1]",
		}}, groups: map[string][]string{"dev": {
			"root: used= apps=[] max=/0 reserved=cpu=8,pods=8 gangs=[sue-1]",
			"root.g: used= apps=[] max=cpu=18/0 reserved=cpu=8,pods=8 gangs=[sue-1]",
		}}, queues: []string{
			"root: used= apps=[] max=/0 reserved=cpu=8,pods=8 gangs=[sue-1]",
			"root.dyn: used= apps=[] max=/0 reserved= gangs=[]",
			"root.g: used= apps=[] max=cpu=20/3 reserved=cpu=8,pods=8 gangs=[sue-1]",
		}},
		{name: "two gangs add up, listed by key", ops: []admitOp{
			{op: "reserve", key: "sue-2", r: gang("sue", "root.g", "s2", "3")},
			{op: "reserve", key: "sue-1", r: gang("sue", "root.g", "s1", "2")},
		}, users: map[string][]string{"sue": {
			"root: used= apps=[] max=/0 reserved=cpu=5,pods=5 gangs=[sue-1 sue-2]",
			"root.g: used= apps=[] max=cpu=16/0 reserved=cpu=5,pods=5 gangs=[sue-1 sue-2]",
		}}, groups: map[string][]string{"dev": {
			"root: used= apps=[] max=/0 reserved=cpu=5,pods=5 gangs=[sue-1 sue-2]",
			"root.g: used= apps=[] max=cpu=18/0 reserved=cpu=5,pods=5 gangs=[sue-1 sue-2]",
		}}, queues: []string{
			"root: used= apps=[] max=/0 reserved=cpu=5,pods=5 gangs=[sue-1 sue-2]",
			"root.dyn: used= apps=[] max=/0 reserved= gangs=[]",
			"root.g: used= apps=[] max=cpu=20/3 reserved=cpu=5,pods=5 gangs=[sue-1 sue-2]",
		}},
		{name: "a drawn and committed pod moves its part from reserved to usage", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "root.g", "s1", "2")},
			{op: "draw", key: "sue-1/p1", r: pod("sue", "s1")},
			{op: "commit", key: "sue-1/p1", r: pod("sue", "s1")},
		}, users: map[string][]string{"sue": {
			"root: used=cpu=1,pods=1 apps=[ns/s1] max=/0 reserved=cpu=1,pods=1 gangs=[sue-1]",
			"root.g: used=cpu=1,pods=1 apps=[ns/s1] max=cpu=16/0 reserved=cpu=1,pods=1 gangs=[sue-1]",
		}}, groups: map[string][]string{"dev": {
			"root: used=cpu=1,pods=1 apps=[ns/s1] max=/0 reserved=cpu=1,pods=1 gangs=[sue-1]",
			"root.g: used=cpu=1,pods=1 apps=[ns/s1] max=cpu=18/0 reserved=cpu=1,pods=1 gangs=[sue-1]",
		}}, queues: []string{
			"root: used=cpu=1,pods=1 apps=[ns/s1] max=/0 reserved=cpu=1,pods=1 gangs=[sue-1]",
			"root.dyn: used= apps=[] max=/0 reserved= gangs=[]",
			"root.g: used=cpu=1,pods=1 apps=[ns/s1] max=cpu=20/3 reserved=cpu=1,pods=1 gangs=[sue-1]",
		}},
		{name: "a minimum all drawn by pods not running yet is neither used nor reserved", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "root.g", "s1", "2")},
			{op: "draw", key: "sue-1/p1", r: pod("sue", "s1")},
			{op: "draw", key: "sue-1/p2", r: pod("sue", "s1")},
		}, users: map[string][]string{"sue": {
			"root: used= apps=[] max=/0 reserved= gangs=[sue-1]",
			"root.g: used= apps=[] max=cpu=16/0 reserved= gangs=[sue-1]",
		}}, groups: map[string][]string{"dev": {
			"root: used= apps=[] max=/0 reserved= gangs=[sue-1]",
			"root.g: used= apps=[] max=cpu=18/0 reserved= gangs=[sue-1]",
		}}, queues: []string{
			"root: used= apps=[] max=/0 reserved= gangs=[sue-1]",
			"root.dyn: used= apps=[] max=/0 reserved= gangs=[]",
			"root.g: used= apps=[] max=cpu=20/3 reserved= gangs=[sue-1]",
		}},
		{name: "the whole minimum running ends the reservation", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "root.g", "s1", "2")},
			{op: "draw", key: "sue-1/p1", r: pod("sue", "s1")},
			{op: "draw", key: "sue-1/p2", r: pod("sue", "s1")},
			{op: "commit", key: "sue-1/p1", r: pod("sue", "s1")},
			{op: "commit", key: "sue-1/p2", r: pod("sue", "s1")},
		}, users: map[string][]string{"sue": {
			"root: used=cpu=2,pods=2 apps=[ns/s1] max=/0 reserved= gangs=[]",
			"root.g: used=cpu=2,pods=2 apps=[ns/s1] max=cpu=16/0 reserved= gangs=[]",
		}}, groups: map[string][]string{"dev": {
			"root: used=cpu=2,pods=2 apps=[ns/s1] max=/0 reserved= gangs=[]",
			"root.g: used=cpu=2,pods=2 apps=[ns/s1] max=cpu=18/0 reserved= gangs=[]",
		}}, queues: []string{
			"root: used=cpu=2,pods=2 apps=[ns/s1] max=/0 reserved= gangs=[]",
			"root.dyn: used= apps=[] max=/0 reserved= gangs=[]",
			"root.g: used=cpu=2,pods=2 apps=[ns/s1] max=cpu=20/3 reserved= gangs=[]",
		}},
		{name: "a released reservation shows nowhere", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "root.g", "s1", "8")},
			{op: "releaseGang", key: "sue-1"},
		}, queues: []string{
			"root: used= apps=[] max=/0 reserved= gangs=[]",
			"root.dyn: used= apps=[] max=/0 reserved= gangs=[]",
			"root.g: used= apps=[] max=cpu=20/3 reserved= gangs=[]",
		}},
		{name: "a pod's admission is not a reservation", ops: []admitOp{
			{op: "admit", key: "p1", r: pod("bob", "b1")},
		}, queues: []string{
			"root: used= apps=[] max=/0 reserved= gangs=[]",
			"root.dyn: used= apps=[] max=/0 reserved= gangs=[]",
			"root.g: used= apps=[] max=cpu=20/3 reserved= gangs=[]",
		}},
		{name: "a gang in a queue not created yet shows the queue with its template's max", ops: []admitOp{
			{op: "reserve", key: "ann-1", r: withCreate(req("ann", nil, "root.dyn.ann", "a1", res(t, "cpu", "2")))},
		}, users: map[string][]string{"ann": {
			"root: used= apps=[] max=/0 reserved=cpu=2 gangs=[ann-1]",
			"root.dyn: used= apps=[] max=/0 reserved=cpu=2 gangs=[ann-1]",
			"root.dyn.ann: used= apps=[] max=/0 reserved=cpu=2 gangs=[ann-1]",
		}}, queues: []string{
			"root: used= apps=[] max=/0 reserved=cpu=2 gangs=[ann-1]",
			"root.dyn: used= apps=[] max=/0 reserved=cpu=2 gangs=[ann-1]",
			"root.dyn.ann: used= apps=[] max=cpu=3/0 reserved=cpu=2 gangs=[ann-1]",
			"root.g: used= apps=[] max=cpu=20/3 reserved= gangs=[]",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			m.SetConfig(queueconfigtest.MustPartition(t, reservedConfig))
			runOps(t, m, tc.ops)

			users := map[string][]string{}
			for _, u := range m.Users() {
				users[u.UserName] = treeLines(u.Queues)
				if one, ok := m.User(u.UserName); !ok || !cmp.Equal(one, u) {
					t.Errorf("User(%q) = %+v, %v; Users() has %+v", u.UserName, one, ok, u)
				}
			}
			groups := map[string][]string{}
			for _, g := range m.Groups() {
				groups[g.GroupName] = treeLines(g.Queues)
				if one, ok := m.Group(g.GroupName); !ok || !cmp.Equal(one, g) {
					t.Errorf("Group(%q) = %+v, %v; Groups() has %+v", g.GroupName, one, ok, g)
				}
			}
			if tc.users == nil {
				tc.users = map[string][]string{}
			}
			if tc.groups == nil {
				tc.groups = map[string][]string{}
			}
			if diff := cmp.Diff(tc.users, users); diff != "" {
				t.Errorf("users (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.groups, groups); diff != "" {
				t.Errorf("groups (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.queues, treeLines(m.Queues())); diff != "" {
				t.Errorf("queues (-want,+got):\n%s", diff)
			}
			for _, name := range []string{"zed", "sue", "ann"} {
				if _, ok := m.User(name); ok != (tc.users[name] != nil) {
					t.Errorf("User(%q) found %v, want %v", name, ok, !ok)
				}
			}
			if _, ok := m.Group("dev"); ok != (tc.groups["dev"] != nil) {
				t.Errorf("Group(dev) found %v, want %v", ok, !ok)
			}
		})
	}
}
