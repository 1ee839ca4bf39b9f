package hold

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/userquota/userquota/pkg/fairshare"
	"github.com/userquota/userquota/pkg/ugm"
)

// fakeFair: queues under root.fair order users by keys, which change
// only when set says so (as fairshare.History's change only on events).
type fakeFair struct {
	keys    map[string]float64
	changed map[string]bool
	reset   bool
	lanes   int // Lane calls
}

func newFakeFair(keys map[string]float64) *fakeFair {
	return &fakeFair{keys: keys, changed: map[string]bool{}}
}

func (f *fakeFair) Lane(req *ugm.Request) (fairshare.Key, float64, bool) {
	f.lanes++
	if !strings.HasPrefix(req.Queue, "root.fair") {
		return fairshare.Key{}, 0, false
	}
	return fairshare.Key{Queue: "root.fair", Name: req.User}, f.keys[req.User], true
}

func (f *fakeFair) Changes(fn func(fairshare.Key, float64)) bool {
	for u := range f.changed {
		fn(fairshare.Key{Queue: "root.fair", Name: u}, f.keys[u])
	}
	clear(f.changed)
	r := f.reset
	f.reset = false
	return r
}

func (f *fakeFair) set(user string, key float64) {
	f.keys[user] = key
	f.changed[user] = true
}

// TestFairOrder: in a fair queue the held pods of the user whose key is
// lowest go first, after priority and before the application order and
// age; keys move only when the Fair says they changed.
func TestFairOrder(t *testing.T) {
	f := newFakeFair(map[string]float64{"flood": 0.9, "ann": 0, "bob": 0.1})
	b := NewBook(0)
	b.SetFair(f)
	q := func(request int64) error { return queueMax("root.fair", request) }
	b.Hold(held("flood-1", "flood", "root.fair", "f", 0, 0, q(1000)), t0)
	b.Hold(held("flood-2", "flood", "root.fair", "f", 0, 1, q(1000)), t0)
	b.Hold(held("bob-1", "bob", "root.fair", "b", 0, 5, q(1000)), t0)
	b.Hold(held("ann-1", "ann", "root.fair", "a", 0, 9, q(1000)), t0)
	b.Hold(held("ann-2", "ann", "root.fair", "a2", 0, 8, q(1000)), t0)
	b.Hold(held("flood-urgent", "flood", "root.fair", "f", 10, 3, q(1000)), t0)
	rel := &ugm.Request{User: "flood", Queue: "root.fair", App: ugm.AppKey{Namespace: "ns", ID: "f"}}
	if got, want := keys(b.Released(rel, Window, nil)), "flood-urgent ann-2 ann-1 bob-1 flood-1 flood-2"; got != want {
		t.Errorf("released: %s\nwant       %s", got, want)
	}
	// The application order applies within a user: fair by application
	// usage puts ann's a before a2 despite age.
	if got, want := keys(b.Released(rel, Window, fairOrder{"a": 0, "a2": 0.5})), "flood-urgent ann-1 ann-2 bob-1 flood-1 flood-2"; got != want {
		t.Errorf("with application order: %s\nwant                   %s", got, want)
	}
	// ann is charged: her key rises above flood's; only after Changes
	// says so does the order move.
	f.keys["ann"] = 2
	if got, want := keys(b.Released(rel, Window, nil)), "flood-urgent ann-2 ann-1 bob-1 flood-1 flood-2"; got != want {
		t.Errorf("before the change is told: %s, want %s", got, want)
	}
	f.changed["ann"] = true
	if got, want := keys(b.Released(rel, Window, nil)), "flood-urgent bob-1 flood-1 flood-2 ann-2 ann-1"; got != want {
		t.Errorf("after: %s\nwant  %s", got, want)
	}
	// The starvation barrier follows the same order: a starving pod of
	// bob's keeps its room from flood's younger pods and from ann's (her
	// key is higher), not from a user whose key is lower.
	b2 := NewBook(time.Minute)
	b2.SetFair(f)
	b2.Hold(held("bob-big", "bob", "root.fair", "b", 0, 5, queueMax("root.fair", 3000)), t0)
	now := t0.Add(time.Hour)
	for user, want := range map[string]string{"flood": "bob-big", "ann": "bob-big", "low": ""} {
		asker := held(user+"-x", user, "root.fair", "x", 0, 10, nil)
		got := ""
		if p := b2.Barrier(asker.Key, asker.Request, "", 0, asker.Created, now); p != nil {
			got = p.Key
		}
		if got != want {
			t.Errorf("Barrier for %s = %q, want %q", user, got, want)
		}
	}
}

// TestFairWindow: a release looks at Window pods per limit in the book's
// order, so with a flood of one user's pods on the queue's limit, the
// pods of users whose key is lower are among them (first), where with no
// fair order they are beyond the window.
func TestFairWindow(t *testing.T) {
	for _, fair := range []bool{false, true} {
		b := NewBook(0)
		if fair {
			b.SetFair(newFakeFair(map[string]float64{"flood": 1}))
		}
		for i := range 3000 {
			b.Hold(held(fmt.Sprintf("flood-%04d", i), "flood", "root.fair", "f", 0, i, queueMax("root.fair", 1000)), t0)
		}
		b.Hold(held("late", "late", "root.fair", "l", 0, 5000, queueMax("root.fair", 1000)), t0)
		got := b.Released(&ugm.Request{User: "flood", Queue: "root.fair", App: ugm.AppKey{Namespace: "ns", ID: "f"}}, Window, nil)
		first := got[0].Key
		if fair && first != "late" || !fair && first != "flood-0000" {
			t.Errorf("fair %v: first %s", fair, first)
		}
		inWindow := false
		for _, p := range got {
			inWindow = inWindow || p.Key == "late"
		}
		if inWindow != fair || len(got) != Window {
			t.Errorf("fair %v: late among the %d pods looked at: %v", fair, len(got), inWindow)
		}
	}
}

// TestFairLanesMove: a key change moves the user's lanes, not each pod:
// no Lane call per held pod; a reset (a new config) puts every pod in
// its lane anew.
func TestFairLanesMove(t *testing.T) {
	f := newFakeFair(map[string]float64{"a": 0.5, "b": 0.6})
	b := NewBook(0)
	b.SetFair(f)
	for i := range 100 {
		for _, u := range []string{"a", "b"} {
			b.Hold(held(fmt.Sprintf("%s-%03d", u, i), u, "root.fair", u, 0, i, userLimit(u)), t0)
			b.Hold(held(fmt.Sprintf("%s-q%03d", u, i), u, "root.fair", u, 0, i, queueMax("root.fair", 1000)), t0)
		}
	}
	if n := len(b.lanesOf[fairshare.Key{Queue: "root.fair", Name: "a"}]); n != 2 {
		t.Fatalf("a has %d lanes, want 2 (its user limit's and the queue's)", n)
	}
	calls := f.lanes
	f.set("a", 0.9)
	rel := &ugm.Request{User: "x", Queue: "root.fair", App: ugm.AppKey{Namespace: "ns", ID: "x"}}
	got := b.Released(rel, 2, nil)
	if keys(got) != "b-q000 b-q001" || f.lanes != calls {
		t.Errorf("after a's key rose: %s, %d Lane calls; want b-q000 b-q001 and none", keys(got), f.lanes-calls)
	}
	f.reset = true
	f.keys["b"] = 1
	if got := keys(b.Released(rel, 2, nil)); got != "a-q000 a-q001" || f.lanes-calls != 400 {
		t.Errorf("after a reset: %s, %d Lane calls; want a-q000 a-q001 and 400", got, f.lanes-calls)
	}
	// Pods leave their lanes; empty lanes and limits go.
	for _, p := range b.All(nil) {
		b.Remove(p.Key)
	}
	if len(b.byBlock) != 0 || len(b.lanesOf) != 0 {
		t.Errorf("left %d limits, %d histories with lanes", len(b.byBlock), len(b.lanesOf))
	}
}
