package ugm

import (
	"testing"

	"github.com/userquota/userquota/pkg/resources"
)

// countsReq is a request of user in queue for cpu millicores.
func countsReq(user, queue string, cpu int64, groups ...string) *Request {
	return &Request{User: user, Groups: groups, Queue: queue, App: AppKey{Namespace: "ns", ID: user + "-app"},
		Resources: resources.FromMap(map[string]int64{"cpu": cpu, "pods": 1})}
}

func TestRefusalCounts(t *testing.T) {
	// sue at 4 of her 5 cpu in root.a, asking 2.
	sue := &Refusal{Who: WhoUser, Name: "sue", Queue: "root.a", Limit: LimitResources, Resource: "cpu", Usage: 4000, Request: 2000, Max: 5000}
	queueMax := &Refusal{Who: WhoQueue, Name: "root.a", Queue: "root.a", Limit: LimitResources, Resource: "cpu"}
	dev := &Refusal{Who: WhoGroup, Name: "dev", Queue: "root", Limit: LimitResources, Resource: "cpu"}
	anyGroup := &Refusal{Who: WhoGroup, Name: "*", Queue: "root", Limit: LimitResources, Resource: "cpu"}
	for _, tc := range []struct {
		name string
		r    *Refusal
		req  *Request
		want bool
	}{
		{"the user in the queue", sue, countsReq("sue", "root.a", 1), true},
		{"the user below the queue", sue, countsReq("sue", "root.a.x", 1), true},
		{"the user in a queue that only shares a prefix", sue, countsReq("sue", "root.ab", 1), false},
		{"the user elsewhere", sue, countsReq("sue", "root.b", 1), false},
		{"another user in the queue", sue, countsReq("bob", "root.a", 1), false},
		{"a queue's max: anyone in it", queueMax, countsReq("bob", "root.a", 1), true},
		{"a queue's max: not its parent", queueMax, countsReq("bob", "root", 1), false},
		{"a group: a member", dev, countsReq("ann", "root.a", 1, "ops", "dev"), true},
		{"a group: not a member", dev, countsReq("ann", "root.a", 1, "ops"), false},
		{"group *: anyone with a group", anyGroup, countsReq("ann", "root.a", 1, "ops"), true},
		{"group *: not without groups", anyGroup, countsReq("ann", "root.a", 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Counts(tc.req); got != tc.want {
				t.Errorf("Counts = %v, want %v", got, tc.want)
			}
		})
	}
}

// CountsFor: a group's limit counts only for the group the application is
// tracked against; other limits as Counts.
func TestRefusalCountsFor(t *testing.T) {
	sue := &Refusal{Who: WhoUser, Name: "sue", Queue: "root.a", Limit: LimitResources, Resource: "cpu"}
	dev := &Refusal{Who: WhoGroup, Name: "dev", Queue: "root.a", Limit: LimitResources, Resource: "cpu"}
	anyGroup := &Refusal{Who: WhoGroup, Name: "*", Queue: "root", Limit: LimitResources, Resource: "cpu"}
	for _, tc := range []struct {
		name  string
		r     *Refusal
		req   *Request
		group string
		want  bool
	}{
		{"a user's limit: as Counts", sue, countsReq("sue", "root.a", 1, "dev"), "dev", true},
		{"a user's limit: another user", sue, countsReq("bob", "root.a", 1, "dev"), "dev", false},
		{"the tracked group", dev, countsReq("ann", "root.a.x", 1, "ops", "dev"), "dev", true},
		{"the tracked group outside the limit's queue", dev, countsReq("ann", "root.b", 1, "dev"), "dev", false},
		{"a member tracked against another group", dev, countsReq("ann", "root.a", 1, "ops", "dev"), "ops", false},
		{"a member tracked against none", dev, countsReq("ann", "root.a", 1, "dev"), "", false},
		{"group *: tracked as *", anyGroup, countsReq("ann", "root.a", 1, "guests"), "*", true},
		{"group *: tracked against a named group", anyGroup, countsReq("ann", "root.a", 1, "dev"), "dev", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.CountsFor(tc.req, tc.group); got != tc.want {
				t.Errorf("CountsFor = %v, want %v", got, tc.want)
			}
		})
	}
}
