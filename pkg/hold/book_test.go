package hold

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

var t0 = time.Unix(1_000_000, 0)

// held is a test pod of user in queue and app, created minutes after t0,
// held by reason.
func held(name, user, queue, app string, prio int32, minutes int, reason error) *Pod {
	return &Pod{Key: name, Name: "ns/" + name, Priority: prio, Created: t0.Add(time.Duration(minutes) * time.Minute), Reason: reason,
		Request: &ugm.Request{User: user, Groups: []string{"dev"}, Queue: queue, App: ugm.AppKey{Namespace: "ns", ID: app},
			Resources: resources.FromMap(map[string]int64{"cpu": 1000})}}
}

func userLimit(user string) error {
	return &ugm.Refusal{Who: ugm.WhoUser, Name: user, Queue: "root.a", Limit: ugm.LimitResources, Resource: "cpu", Usage: 2000, Request: 1000, Max: 2000}
}

func queueMax(queue string, request int64) error {
	return &ugm.Refusal{Who: ugm.WhoQueue, Name: queue, Queue: queue, Limit: ugm.LimitResources, Resource: "cpu", Usage: 4000, Request: request, Max: 4000}
}

func keys(ps []*Pod) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Key)
	}
	return strings.Join(out, " ")
}

// fairOrder: root.fair is fair with the given usage per application.
type fairOrder map[string]float64

func (f fairOrder) Fair(queue string) bool { return queue == "root.fair" }
func (f fairOrder) Usage(app ugm.AppKey, _ string) float64 {
	return f[app.ID]
}

func TestReleased(t *testing.T) {
	release := func(user, queue string) *ugm.Request {
		return &ugm.Request{User: user, Queue: queue, App: ugm.AppKey{Namespace: "ns", ID: "gone"}}
	}
	for _, tc := range []struct {
		name     string
		pods     []*Pod
		released *ugm.Request
		window   int
		order    Order
		want     string
	}{
		{
			name: "only pods the release may help, in priority then age order",
			pods: []*Pod{
				held("sue-old", "sue", "root.a", "x", 0, 1, userLimit("sue")),
				held("sue-new", "sue", "root.a", "y", 0, 5, userLimit("sue")),
				held("sue-urgent", "sue", "root.a", "z", 10, 9, userLimit("sue")),
				held("bob", "bob", "root.a", "b", 0, 0, userLimit("bob")),
				held("b-queue", "ann", "root.b", "q", 0, 0, queueMax("root.b", 1000)),
				held("a-queue", "ann", "root.a", "q2", 0, 3, queueMax("root.a", 1000)),
			},
			released: release("sue", "root.a"),
			window:   10,
			want:     "sue-urgent sue-old a-queue sue-new",
		},
		{
			name: "fifo: the application whose oldest held pod is oldest first",
			pods: []*Pod{
				held("y-1", "sue", "root.a", "y", 0, 2, userLimit("sue")),
				held("x-2", "sue", "root.a", "x", 0, 3, userLimit("sue")),
				held("x-1", "sue", "root.a", "x", 0, 1, userLimit("sue")),
				held("y-2", "sue", "root.a", "y", 0, 4, userLimit("sue")),
			},
			released: release("sue", "root.a"),
			window:   10,
			want:     "x-1 x-2 y-1 y-2",
		},
		{
			name: "fair: the application using least first",
			pods: []*Pod{
				held("big-1", "sue", "root.fair", "big", 0, 1, userLimit("sue")),
				held("small-1", "sue", "root.fair", "small", 0, 2, userLimit("sue")),
				held("big-2", "sue", "root.fair", "big", 0, 3, userLimit("sue")),
			},
			released: release("sue", "root.fair"),
			window:   10,
			order:    fairOrder{"big": 0.5, "small": 0.1},
			want:     "small-1 big-1 big-2",
		},
		{
			name: "at most window pods from each limit touched",
			pods: []*Pod{
				held("q-1", "u1", "root.a", "1", 0, 1, queueMax("root.a", 1000)),
				held("q-2", "u2", "root.a", "2", 0, 2, queueMax("root.a", 1000)),
				held("q-3", "u3", "root.a", "3", 0, 3, queueMax("root.a", 1000)),
			},
			released: release("sue", "root.a"),
			window:   2,
			want:     "q-1 q-2",
		},
		{
			name:     "placement waits for a config change",
			pods:     []*Pod{{Key: "lost", Reason: &ugm.QueueError{Queue: "root.x", Reason: "does not exist"}}},
			released: release("sue", "root.a"),
			window:   10,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBook(0)
			for _, p := range tc.pods {
				b.Hold(p, t0)
			}
			if diff := cmp.Diff(tc.want, keys(b.Released(tc.released, tc.window, tc.order))); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestHoldKeepsSinceAndCounts(t *testing.T) {
	b := NewBook(0)
	p := held("p", "sue", "root.a", "x", 0, 0, userLimit("sue"))
	if old := b.Hold(p, t0); old != nil {
		t.Fatalf("first hold returned %v", old)
	}
	again := held("p", "sue", "root.a", "x", 0, 0, queueMax("root.a", 1000))
	if old := b.Hold(again, t0.Add(time.Hour)); old != p || !again.Since.Equal(t0) {
		t.Fatalf("re-hold: old %v, since %v; want the first entry and its time", old, again.Since)
	}
	if diff := cmp.Diff(map[Kind]int{KindQueue: 1}, b.Kinds()); diff != "" {
		t.Errorf("kinds (-want,+got):\n%s", diff)
	}
	if b.Remove("p") != again || b.Len() != 0 || len(b.Kinds()) != 0 || len(b.byBlock) != 0 {
		t.Errorf("not empty after remove: %d pods, kinds %v, %d blocks", b.Len(), b.Kinds(), len(b.byBlock))
	}
	if b.Remove("p") != nil {
		t.Error("removed twice")
	}
}

// TestHoldSeq: the book numbers pods in the order it first takes them,
// whatever the clock says; a pod held again keeps its number, and one
// held anew after it left takes the next.
func TestHoldSeq(t *testing.T) {
	b := NewBook(0)
	steps := []struct {
		key  string
		at   time.Time
		want uint64
	}{
		{"a", t0, 1},
		{"b", t0, 2},                   // the same instant: still after a
		{"c", t0.Add(-time.Minute), 3}, // a clock behind: still after b
		{"a", t0.Add(time.Hour), 1},    // held again: keeps its place
	}
	for _, st := range steps {
		p := held(st.key, "sue", "root.a", "x", 0, 0, userLimit("sue"))
		b.Hold(p, st.at)
		if p.Seq != st.want {
			t.Errorf("%s held at %v: seq %d, want %d", st.key, st.at, p.Seq, st.want)
		}
	}
	b.Remove("a")
	p := held("a", "sue", "root.a", "x", 0, 0, userLimit("sue"))
	if b.Hold(p, t0); p.Seq != 4 {
		t.Errorf("a held anew: seq %d, want 4", p.Seq)
	}
}

// TestOldestKeepsTheCurrentEntry: a pod held again by the same kind keeps
// its place in its kind's order under its new entry; the old one, with
// its reason and request, is not kept reachable from there.
func TestOldestKeepsTheCurrentEntry(t *testing.T) {
	b := NewBook(0)
	b.Hold(held("a", "sue", "root.a", "x", 0, 0, userLimit("sue")), t0)
	again := held("a", "sue", "root.a", "x", 0, 0, userLimit("sue"))
	b.Hold(again, t0.Add(time.Minute))
	first, ok := b.bySince[KindUser].Min()
	if !ok || first != again || b.bySince[KindUser].Len() != 1 {
		t.Fatalf("the order of kind %s has %d entries, the first %p, want only the current entry %p", KindUser, b.bySince[KindUser].Len(), first, again)
	}
	if got := b.Oldest()[KindUser]; !got.Equal(t0) {
		t.Errorf("oldest %v, want %v (first held)", got, t0)
	}
}

// TestOldest: per kind, when the pod held longest was first held; a pod
// held again keeps its first time, under its new kind when that changed;
// a kind whose last pod leaves is gone.
func TestOldest(t *testing.T) {
	at := func(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }
	type step struct {
		hold   *Pod // nil: remove key
		key    string
		minute int
	}
	for _, tc := range []struct {
		name  string
		steps []step
		want  map[Kind]time.Time
	}{
		{name: "empty", want: map[Kind]time.Time{}},
		{
			name: "the first held of each kind",
			steps: []step{
				{hold: held("a", "sue", "root.a", "x", 0, 0, userLimit("sue")), minute: 5},
				{hold: held("b", "bob", "root.a", "y", 0, 0, userLimit("bob")), minute: 3},
				{hold: held("c", "ann", "root.a", "z", 0, 0, queueMax("root.a", 1000)), minute: 7},
			},
			want: map[Kind]time.Time{KindUser: at(3), KindQueue: at(7)},
		},
		{
			name: "held again by another kind: it moves, with its first time",
			steps: []step{
				{hold: held("a", "sue", "root.a", "x", 0, 0, userLimit("sue")), minute: 1},
				{hold: held("b", "bob", "root.a", "y", 0, 0, userLimit("bob")), minute: 2},
				{hold: held("a", "sue", "root.a", "x", 0, 0, queueMax("root.a", 1000)), minute: 9},
			},
			want: map[Kind]time.Time{KindUser: at(2), KindQueue: at(1)},
		},
		{
			name: "held again by the same kind: it keeps its place",
			steps: []step{
				{hold: held("a", "sue", "root.a", "x", 0, 0, userLimit("sue")), minute: 1},
				{hold: held("a", "sue", "root.a", "x", 0, 0, userLimit("sue")), minute: 9},
			},
			want: map[Kind]time.Time{KindUser: at(1)},
		},
		{
			name: "the oldest let in: the next oldest; the last gone: no kind",
			steps: []step{
				{hold: held("a", "sue", "root.a", "x", 0, 0, userLimit("sue")), minute: 1},
				{hold: held("b", "bob", "root.a", "y", 0, 0, userLimit("bob")), minute: 4},
				{hold: held("c", "ann", "root.a", "z", 0, 0, queueMax("root.a", 1000)), minute: 2},
				{key: "a"},
				{key: "c"},
			},
			want: map[Kind]time.Time{KindUser: at(4)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBook(0)
			for _, s := range tc.steps {
				if s.hold == nil {
					if b.Remove(s.key) == nil {
						t.Fatalf("remove %s: not held", s.key)
					}
					continue
				}
				b.Hold(s.hold, at(s.minute))
			}
			if diff := cmp.Diff(tc.want, b.Oldest()); diff != "" {
				t.Errorf("Oldest (-want,+got):\n%s", diff)
			}
			n := 0
			for _, c := range b.Kinds() {
				n += c
			}
			if n != b.Len() || len(b.Kinds()) != len(tc.want) {
				t.Errorf("kinds %v for %d pods, want %d kinds", b.Kinds(), b.Len(), len(tc.want))
			}
		})
	}
}

func TestBarrier(t *testing.T) {
	const wait = time.Minute
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name  string
		head  *Pod
		since time.Time // when the head was held
		asker *Pod
		want  string
	}{
		{"a starving pod keeps its room from a younger one", held("big", "ann", "root.a", "x", 0, 0, queueMax("root.a", 3000)), now.Add(-2 * wait),
			held("small", "bob", "root.a", "y", 0, 5, nil), "big"},
		{"not starving yet: no room kept", held("big", "ann", "root.a", "x", 0, 0, queueMax("root.a", 3000)), now.Add(-wait / 2),
			held("small", "bob", "root.a", "y", 0, 5, nil), ""},
		{"a pod that can never fit keeps no room", held("huge", "ann", "root.a", "x", 0, 0, queueMax("root.a", 5000)), now.Add(-2 * wait),
			held("small", "bob", "root.a", "y", 0, 5, nil), ""},
		{"a higher priority pod goes first anyway", held("big", "ann", "root.a", "x", 0, 0, queueMax("root.a", 3000)), now.Add(-2 * wait),
			held("urgent", "bob", "root.a", "y", 5, 5, nil), ""},
		{"a pod of another queue is not held back", held("big", "ann", "root.a", "x", 0, 0, queueMax("root.a", 3000)), now.Add(-2 * wait),
			held("other", "bob", "root.b", "y", 0, 5, nil), ""},
		{"the starving pod itself is not held back", held("big", "ann", "root.a", "x", 0, 0, queueMax("root.a", 3000)), now.Add(-2 * wait),
			held("big", "ann", "root.a", "x", 0, 0, nil), ""},
		// userLimit is ann's limit on root.a.
		{"a user's pod under the queue of the user's limit is held back", held("big", "ann", "root.a", "x", 0, 0, userLimit("ann")), now.Add(-2 * wait),
			held("small", "ann", "root.a.c", "y", 0, 5, nil), "big"},
		{"a user's pod elsewhere takes nothing from that limit", held("big", "ann", "root.a", "x", 0, 0, userLimit("ann")), now.Add(-2 * wait),
			held("small", "ann", "root.b", "y", 0, 5, nil), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBook(wait)
			b.Hold(tc.head, tc.since)
			got := ""
			if p := b.Barrier(tc.asker.Key, tc.asker.Request, "", tc.asker.Priority, tc.asker.Created, now); p != nil {
				got = p.Key
			}
			if got != tc.want {
				t.Errorf("Barrier = %q, want %q", got, tc.want)
			}
		})
	}
	if b := NewBook(0); b.Barrier("x", held("x", "a", "root.a", "x", 0, 0, nil).Request, "", 0, t0, now) != nil {
		t.Error("a book without a starvation wait keeps room")
	}
}

// groupLimit is group's limit on root.
func groupLimit(group string) error {
	return &ugm.Refusal{Who: ugm.WhoGroup, Name: group, Queue: "root", Limit: ugm.LimitResources, Resource: "cpu", Usage: 2000, Request: 1000, Max: 2000}
}

// TestBarrierKeepsToTheTrackedGroup: a starving pod held by a group's
// limit keeps its room only from pods whose applications are tracked
// against that group, not from every user who is a member of it or, for
// the cumulative group "*", of any group.
func TestBarrierKeepsToTheTrackedGroup(t *testing.T) {
	const wait = time.Minute
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name    string
		limit   string   // the group whose limit holds the starving pod
		groups  []string // the asker's user's groups
		tracked string   // the group its application is tracked against
		want    string
	}{
		{`tracked as "*": held back by "*"'s limit`, "*", []string{"guests"}, "*", "big"},
		{`tracked as a named group: "*"'s limit is not its own`, "*", []string{"dev"}, "dev", ""},
		{"tracked as the group: held back", "ops", []string{"ops"}, "ops", "big"},
		{"a member tracked as another of its groups: not held back", "ops", []string{"dev", "ops"}, "dev", ""},
		{"tracked against no group: not held back", "ops", []string{"ops"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBook(wait)
			b.Hold(held("big", "ann", "root.a", "x", 0, 0, groupLimit(tc.limit)), now.Add(-2*wait))
			asker := held("small", "bob", "root.a", "y", 0, 5, nil)
			asker.Request.Groups = tc.groups
			got := ""
			if p := b.Barrier(asker.Key, asker.Request, tc.tracked, 0, asker.Created, now); p != nil {
				got = p.Key
			}
			if got != tc.want {
				t.Errorf("Barrier = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	behind := &BehindError{Pod: held("big", "ann", "root.a", "x", 0, 0, queueMax("root.a", 3000))}
	for _, tc := range []struct {
		err  error
		want Kind
	}{
		{userLimit("sue"), KindUser},
		{&ugm.Refusal{Who: ugm.WhoGroup, Name: "dev", Limit: ugm.LimitResources}, KindGroup},
		{queueMax("root.a", 1), KindQueue},
		{&ugm.Refusal{Who: ugm.WhoUser, Limit: ugm.LimitApplications}, KindApplications},
		{&ugm.Refusal{Who: ugm.WhoQueue, Limit: ugm.LimitShare}, KindShare},
		{&ugm.Refusal{Who: ugm.WhoQueue, Limit: ugm.LimitGuaranteed}, KindGuaranteed},
		{&ugm.AppConflict{}, KindApplication},
		{&ugm.QueueError{}, KindPlacement},
		{errors.New("annotation is not JSON"), KindPlacement},
		{behind, KindBehind},
		{fmt.Errorf("wrapped: %w", userLimit("sue")), KindUser},
		{StartingError{}, KindStarting},
		{&ConfigError{Err: errors.New("bad yaml")}, KindConfig},
		{&gang.Error{}, KindGang},
		{&gang.FailedError{}, KindGang},
		{&ugm.Refusal{Who: ugm.WhoTree, Limit: ugm.LimitResources}, KindTree},
	} {
		if got := KindOf(tc.err); got != tc.want {
			t.Errorf("KindOf(%v) = %s, want %s", tc.err, got, tc.want)
		}
		// Told by its type or found in a chain: the same kind.
		if got := KindOf(fmt.Errorf("wrapped: %w", tc.err)); got != tc.want {
			t.Errorf("KindOf(wrapped %v) = %s, want %s", tc.err, got, tc.want)
		}
	}
	if !strings.Contains(behind.Error(), "waiting behind pod ns/big") {
		t.Errorf("behind reason: %s", behind.Error())
	}
	// A reason the type switch does not name, unwrapped, is read in place
	// (errors.As would allocate its target at each reading).
	for _, err := range []error{&ugm.QueueError{}, &ConfigError{Err: errors.New("bad yaml")}, errors.New("annotation is not JSON")} {
		if n := testing.AllocsPerRun(100, func() { KindOf(err) }); n != 0 {
			t.Errorf("KindOf(%v): %v allocations, want 0", err, n)
		}
	}
}

func TestAffects(t *testing.T) {
	req := &ugm.Request{User: "sue", Groups: []string{"dev"}, Queue: "root.a.b", App: ugm.AppKey{Namespace: "ns", ID: "x"}}
	for _, tc := range []struct {
		reason error
		want   bool
	}{
		{userLimit("sue"), true},
		{userLimit("bob"), false},
		{&ugm.Refusal{Who: ugm.WhoGroup, Name: "dev", Queue: "root.a"}, true},
		{&ugm.Refusal{Who: ugm.WhoGroup, Name: "ops", Queue: "root.a"}, false},
		{&ugm.Refusal{Who: ugm.WhoGroup, Name: "*", Queue: "root"}, true},
		// A limit on another queue, or on a queue whose name is a prefix.
		{&ugm.Refusal{Who: ugm.WhoUser, Name: "sue", Queue: "root.b"}, false},
		{&ugm.Refusal{Who: ugm.WhoGroup, Name: "dev", Queue: "root.a.bc"}, false},
		{&ugm.Refusal{Who: ugm.WhoGroup, Name: "dev", Queue: "root.a.b"}, true},
		{queueMax("root.a", 1), true},
		{queueMax("root.ab", 1), false},
		{&ugm.AppConflict{App: ugm.AppKey{Namespace: "ns", ID: "x"}}, true},
		{&ugm.QueueError{Queue: "root.a.b"}, false},
	} {
		if got := Affects(tc.reason, req); got != tc.want {
			t.Errorf("Affects(%v) = %v, want %v", tc.reason, got, tc.want)
		}
	}
}

// TestBehind: the pods held behind a starving pod are found by its key,
// in let-in order, whichever limit holds it now; a pod held again for
// another reason, or taken out, is behind it no more.
func TestBehind(t *testing.T) {
	b := NewBook(time.Minute)
	big := held("big", "ann", "root.b", "x", 0, 0, userLimit("ann"))
	b.Hold(big, t0)
	behind := func(name string, minutes int) *Pod {
		return held(name, "ann", "root.a", name, 0, minutes, &BehindError{Pod: b.Get("big")})
	}
	b.Hold(behind("s2", 2), t0)
	b.Hold(behind("s1", 1), t0)
	b.Hold(behind("s3", 3), t0)
	b.Hold(held("other", "bob", "root.a", "o", 0, 0, userLimit("bob")), t0)
	check := func(step, want string) {
		t.Helper()
		if got := keys(b.Behind("big", nil)); got != want {
			t.Errorf("%s: Behind = %q, want %q", step, got, want)
		}
		if got := b.HasBehind("big"); got != (want != "") {
			t.Errorf("%s: HasBehind = %v", step, got)
		}
	}
	check("held behind big", "s1 s2 s3")
	// Held again by root.b's max: the pods behind it are still found.
	b.Hold(held("big", "ann", "root.b", "x", 0, 0, queueMax("root.b", 1000)), t0)
	check("big held by another limit", "s1 s2 s3")
	b.Hold(held("s2", "ann", "root.a", "s2", 0, 2, userLimit("ann")), t0)
	check("s2 held by a limit", "s1 s3")
	b.Remove("s3")
	check("s3 let in", "s1")
	b.SetFair(nil) // lanes rebuilt
	check("after the lanes are rebuilt", "s1")
	b.Remove("s1")
	check("s1 let in", "")
	if got := keys(b.Behind("other", nil)); got != "" {
		t.Errorf("Behind(other) = %q, want none", got)
	}
}

// TestBarrierPassesOtherQueuesLimits: in a user's block, the barrier
// passes over the user's starving pods held by limits on other queues and
// stops at the first whose limit the asker counts against.
func TestBarrierPassesOtherQueuesLimits(t *testing.T) {
	now := t0.Add(time.Hour)
	b := NewBook(time.Minute)
	atB := &ugm.Refusal{Who: ugm.WhoUser, Name: "ann", Queue: "root.b", Limit: ugm.LimitResources, Resource: "cpu", Usage: 2000, Request: 1000, Max: 2000}
	atRoot := &ugm.Refusal{Who: ugm.WhoUser, Name: "ann", Queue: "root", Limit: ugm.LimitResources, Resource: "cpu", Usage: 8000, Request: 1000, Max: 8000}
	b.Hold(held("first", "ann", "root.b", "x", 0, 0, atB), t0)
	b.Hold(held("second", "ann", "root.b", "y", 0, 1, atRoot), t0)
	small := held("small", "ann", "root.a", "z", 0, 5, nil)
	if p := b.Barrier(small.Key, small.Request, "", 0, small.Created, now); p == nil || p.Key != "second" {
		t.Errorf("Barrier = %v, want second (ann's limit on root)", p)
	}
}

func TestSameLimit(t *testing.T) {
	at := func(mod func(r *ugm.Refusal)) error {
		r := &ugm.Refusal{Who: ugm.WhoUser, Name: "ann", Queue: "root.a", Limit: ugm.LimitResources, Resource: "cpu", Usage: 2000, Request: 1000, Max: 2000}
		if mod != nil {
			mod(r)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		a, b error
		want bool
	}{
		{"other usage and request", at(nil), at(func(r *ugm.Refusal) { r.Usage, r.Request = 1500, 600 }), true},
		{"another user", at(nil), at(func(r *ugm.Refusal) { r.Name = "bob" }), false},
		{"another queue", at(nil), at(func(r *ugm.Refusal) { r.Queue = "root.b" }), false},
		{"another resource", at(nil), at(func(r *ugm.Refusal) { r.Resource = "memory" }), false},
		{"another max", at(nil), at(func(r *ugm.Refusal) { r.Max = 3000 }), false},
		{"applications", at(nil), at(func(r *ugm.Refusal) { r.Limit = ugm.LimitApplications }), false},
		{"a limit and another reason", at(nil), errors.New("x"), false},
		{"the same message", errors.New("x"), errors.New("x"), true},
		{"another message", errors.New("x"), errors.New("y"), false},
	} {
		if got := SameLimit(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: SameLimit = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBehindIndexMatchesReasons: through random holds, re-holds and
// removals, Behind(k) is exactly the held pods whose reason is a
// *BehindError naming k, and HasBehind agrees.
func TestBehindIndexMatchesReasons(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	b := NewBook(time.Minute)
	names := []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"}
	for step := range 5000 {
		name := names[rng.Intn(len(names))]
		switch rng.Intn(4) {
		case 0:
			b.Remove(name)
		case 1:
			b.Hold(held(name, "ann", "root.a", name, 0, rng.Intn(5), userLimit("ann")), t0)
		default:
			ahead := names[rng.Intn(len(names))]
			if ahead == name {
				continue
			}
			b.Hold(held(name, "ann", "root.a", name, 0, rng.Intn(5), &BehindError{Pod: &Pod{Key: ahead, Name: "ns/" + ahead, Reason: userLimit("ann")}}), t0)
		}
		if step%7 == 0 {
			b.SetFair(nil)
		}
		for _, k := range names {
			var want []string
			for _, n := range names {
				var e *BehindError
				if p := b.Get(n); p != nil && errors.As(p.Reason, &e) && e.Pod.Key == k {
					want = append(want, n)
				}
			}
			var got []string
			for _, p := range b.Behind(k, nil) {
				got = append(got, p.Key)
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) || b.HasBehind(k) != (len(want) > 0) {
				t.Fatalf("step %d: Behind(%s) = %v (HasBehind %v), want %v", step, k, got, b.HasBehind(k), want)
			}
		}
	}
}

// TestReleasedWithNothingHeld: a release while no pod is held lets nothing
// in and allocates nothing (most releases of a cluster within its quotas;
// BenchmarkPodPath counts a pod's allocations).
func TestReleasedWithNothingHeld(t *testing.T) {
	b := NewBook(0)
	req := &ugm.Request{User: "sue", Groups: []string{"dev"}, Queue: "root.a.b", App: ugm.AppKey{Namespace: "ns", ID: "app"}}
	var got []*Pod
	allocs := testing.AllocsPerRun(100, func() { got = b.Released(req, 10, nil) })
	if len(got) != 0 || allocs != 0 {
		t.Fatalf("Released with nothing held: %d pods, %v allocations a call; want none", len(got), allocs)
	}
}

// TestLanesIndex holds, moves and removes pods of a few limits at random
// priorities (each priority a lane of its own), and checks after each step
// that every limit's lanes are indexed exactly once (its one lane, or its
// map once it has more) and that each limit lists its pods in the book's
// order; nothing is left once every pod is gone.
func TestLanesIndex(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	b := NewBook(0)
	limits := []error{userLimit("u1"), userLimit("u2"), queueMax("root.a", 1000)}
	model := map[string]*Pod{}
	check := func(step int) {
		t.Helper()
		for k, ls := range b.byBlock {
			n := 0
			ls.tree.Ascend(func(l *lane) bool {
				n += l.pods.Len()
				if got := ls.get(l.laneID); got != l {
					t.Fatalf("step %d: limit %v: lane %+v indexed as %p, want %p", step, k, l.laneID, got, l)
				}
				return true
			})
			if indexed := len(ls.byID); ls.one != nil && indexed != 0 || ls.one == nil && indexed != ls.tree.Len() || ls.one != nil && ls.tree.Len() != 1 {
				t.Fatalf("step %d: limit %v: one %v, %d in the map, %d lanes", step, k, ls.one != nil, indexed, ls.tree.Len())
			}
			if n != ls.n {
				t.Fatalf("step %d: limit %v counts %d pods, its lanes hold %d", step, k, ls.n, n)
			}
		}
		for i, reason := range limits {
			var want []*Pod
			for _, p := range model {
				if SameLimit(p.Reason, reason) {
					want = append(want, p)
				}
			}
			slices.SortFunc(want, func(a, b *Pod) int {
				if inOrder(a, b) {
					return -1
				}
				return 1
			})
			var got []*Pod
			b.ascend(blockOf(reason), func(p *Pod) bool { got = append(got, p); return true })
			if keys(got) != keys(want) {
				t.Fatalf("step %d: limit %d lists %q, want %q", step, i, keys(got), keys(want))
			}
		}
	}
	for step := 0; step < 3000; step++ {
		name := fmt.Sprintf("p%02d", rng.Intn(40))
		if rng.Intn(4) == 0 {
			b.Remove(name)
			delete(model, name)
		} else {
			p := held(name, "u1", "root.a", "app", int32(rng.Intn(3)), 0, limits[rng.Intn(len(limits))])
			b.Hold(p, t0.Add(time.Duration(step)*time.Second))
			model[name] = p
		}
		check(step)
	}
	for name := range model {
		b.Remove(name)
	}
	if len(b.byBlock) != 0 || b.Len() != 0 {
		t.Fatalf("%d limits and %d pods left after every pod went", len(b.byBlock), b.Len())
	}
}

// TestReasonsReadInPlace: the book reads its own reasons by type, without
// an allocation (a hold reads them several times: blockOf, the sieve, the
// barrier's scan; an application's block names it, which allocates), and
// a reason wrapped in a chain (a gang's hold, an error wrapped with %w)
// the same way as unwrapped.
func TestReasonsReadInPlace(t *testing.T) {
	req := &ugm.Request{User: "sue", Groups: []string{"dev"}, Queue: "root.a", App: ugm.AppKey{Namespace: "ns", ID: "x"},
		Resources: resources.FromMap(map[string]int64{"cpu": 1000})}
	starving := held("big", "sue", "root.a", "x", 0, 0, userLimit("sue"))
	for _, tc := range []struct {
		name   string
		reason error
		block  block
	}{
		{"user limit", userLimit("sue"), block{'u', "sue"}},
		{"group limit", groupLimit("dev"), block{'g', "dev"}},
		{"queue limit", queueMax("root.a", 1000), block{'q', "root.a"}},
		{"behind a starving pod", &BehindError{Pod: starving}, block{'u', "sue"}},
		{"application conflict", &ugm.AppConflict{App: ugm.AppKey{Namespace: "ns", ID: "x"}}, block{'a', "ns/x"}},
		{"no queue", &ugm.QueueError{Queue: "root.a"}, block{'p', ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wrapped := []error{fmt.Errorf("wrapped: %w", tc.reason), &gang.HeldError{Err: tc.reason}}
			s := Sieve{}
			s.Refused(tc.reason)
			read := func(reason error) string {
				k, req0, ok := refusalKey(reason)
				return fmt.Sprint(blockOf(reason), affects(reason, req, nil), takes(reason, req, "dev"), canEverFit(reason), s.Skip(reason), k, req0, ok)
			}
			if got := blockOf(tc.reason); got != tc.block {
				t.Errorf("blockOf = %v, want %v", got, tc.block)
			}
			want := read(tc.reason)
			for _, w := range wrapped {
				if got := read(w); got != want {
					t.Errorf("read wrapped in %T: %s, unwrapped: %s", w, got, want)
				}
			}
			if n := testing.AllocsPerRun(100, func() {
				_ = blockOf(tc.reason)
				_, _, _ = refusalKey(tc.reason)
				_ = canEverFit(tc.reason)
				_ = s.Skip(tc.reason)
				_ = takes(tc.reason, req, "dev")
			}); n != 0 && tc.block.kind != 'a' {
				t.Errorf("%v allocations to read it, want 0", n)
			}
			if _, limit := tc.reason.(*ugm.Refusal); limit {
				if n := testing.AllocsPerRun(100, func() { _ = SameLimit(tc.reason, tc.reason) }); n != 0 {
					t.Errorf("%v allocations to compare limits, want 0", n)
				}
			}
		})
	}
}
