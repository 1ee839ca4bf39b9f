package ugm

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// treeLines renders a usage tree one node a line, parents first: what
// TestReservedInSnapshots compares.
func treeLines(q *QueueUsage) []string {
	if q == nil {
		return nil
	}
	out := []string{fmt.Sprintf("%s max=%s/%d: used=%s apps=%v reserved=%s gangs=%v", q.QueuePath, q.MaxResources, q.MaxApplications,
		q.ResourceUsage, q.RunningApplications, q.ReservedResource, q.ReservedGangs)}
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
	gang := func(app, cpu string) *Request {
		return req("ann", dev, "root.sandbox", app, res(t, "cpu", cpu, "pods", cpu))
	}
	pod := func(user, app string) *Request {
		return req(user, dev, "root.sandbox", app, res(t, "cpu", "1", "pods", "1"))
	}
	const idle = "used= apps=[] reserved= gangs=[]"
	// sandbox is the snapshot under queueconfigtest.Sandbox when ann (group
	// dev, no user limit there) is the only one with anything in
	// root.sandbox, and every node on her path shows ann ("" for nothing:
	// then neither ann nor dev is listed).
	sandbox := func(ann string) (users, groups map[string][]string, queues []string) {
		users, groups = map[string][]string{}, map[string][]string{}
		onPath := ann
		if ann == "" {
			onPath = idle
		} else {
			users["ann"] = []string{"root max=/0: " + ann, "root.sandbox max=/0: " + ann}
			groups["dev"] = []string{"root max=/0: " + ann, "root.sandbox max=cpu=3/0: " + ann}
		}
		return users, groups, []string{"root max=/0: " + onPath, "root.default max=/0: " + idle, "root.sandbox max=cpu=4,memory=8Gi/3: " + onPath}
	}
	for _, tc := range []struct {
		name string
		ops  []admitOp
		// ann: what every node on ann's path shows (queueconfigtest.Sandbox).
		ann string
		// config, users, groups, queues: a scenario of its own instead.
		config        string
		users, groups map[string][]string
		queues        []string
	}{
		{name: "a gang reserved before any pod runs shows its user, group and queues", ops: []admitOp{
			{op: "reserve", key: "ann-1", r: gang("a1", "2")},
		}, ann: "used= apps=[] reserved=cpu=2,pods=2 gangs=[ann-1]"},
		{name: "two gangs add up, listed by key", ops: []admitOp{
			{op: "reserve", key: "ann-2", r: gang("a2", "1")},
			{op: "reserve", key: "ann-1", r: gang("a1", "2")},
		}, ann: "used= apps=[] reserved=cpu=3,pods=3 gangs=[ann-1 ann-2]"},
		{name: "a drawn and committed pod moves its part from reserved to usage", ops: []admitOp{
			{op: "reserve", key: "ann-1", r: gang("a1", "2")},
			{op: "draw", key: "ann-1/p1", r: pod("ann", "a1")},
			{op: "commit", key: "ann-1/p1", r: pod("ann", "a1")},
		}, ann: "used=cpu=1,pods=1 apps=[ns/a1] reserved=cpu=1,pods=1 gangs=[ann-1]"},
		{name: "a minimum all drawn by pods not running yet is neither used nor reserved", ops: []admitOp{
			{op: "reserve", key: "ann-1", r: gang("a1", "2")},
			{op: "draw", key: "ann-1/p1", r: pod("ann", "a1")},
			{op: "draw", key: "ann-1/p2", r: pod("ann", "a1")},
		}, ann: "used= apps=[] reserved= gangs=[ann-1]"},
		{name: "the whole minimum running ends the reservation", ops: []admitOp{
			{op: "reserve", key: "ann-1", r: gang("a1", "2")},
			{op: "draw", key: "ann-1/p1", r: pod("ann", "a1")},
			{op: "draw", key: "ann-1/p2", r: pod("ann", "a1")},
			{op: "commit", key: "ann-1/p1", r: pod("ann", "a1")},
			{op: "commit", key: "ann-1/p2", r: pod("ann", "a1")},
		}, ann: "used=cpu=2,pods=2 apps=[ns/a1] reserved= gangs=[]"},
		{name: "a released reservation shows nowhere", ops: []admitOp{
			{op: "reserve", key: "ann-1", r: gang("a1", "2")},
			{op: "releaseGang", key: "ann-1"},
		}},
		{name: "a pod's admission is not a reservation", ops: []admitOp{
			{op: "admit", key: "p1", r: pod("ann", "a1")},
		}},
		{name: "a gang in a queue not created yet shows the queue with its template's max", config: admitConfig, ops: []admitOp{
			{op: "reserve", key: "ann-1", r: withCreate(req("ann", nil, "root.dyn.ann", "a1", res(t, "cpu", "2")))},
		}, users: map[string][]string{"ann": {
			"root max=/0: used= apps=[] reserved=cpu=2 gangs=[ann-1]",
			"root.dyn max=/0: used= apps=[] reserved=cpu=2 gangs=[ann-1]",
			"root.dyn.ann max=/0: used= apps=[] reserved=cpu=2 gangs=[ann-1]",
		}}, groups: map[string][]string{}, queues: []string{
			"root max=/0: used= apps=[] reserved=cpu=2 gangs=[ann-1]",
			"root.a max=/2: " + idle,
			"root.dyn max=/0: used= apps=[] reserved=cpu=2 gangs=[ann-1]",
			"root.dyn.ann max=cpu=3/0: used= apps=[] reserved=cpu=2 gangs=[ann-1]",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.config == "" {
				tc.config = queueconfigtest.Sandbox
				tc.users, tc.groups, tc.queues = sandbox(tc.ann)
			}
			m := withConfig(t, tc.config)
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
			if diff := cmp.Diff(tc.users, users); diff != "" {
				t.Errorf("users (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.groups, groups); diff != "" {
				t.Errorf("groups (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.queues, treeLines(m.Queues())); diff != "" {
				t.Errorf("queues (-want,+got):\n%s", diff)
			}
			for _, name := range []string{"zed", "ann"} {
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
