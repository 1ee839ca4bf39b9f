package fairshare

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// TestEntriesModel charges and releases pods of a few users and groups
// at random across leaves of different depths, without decay (no
// half-life: a history is kept exactly while it has usage), and after
// every step compares each history's usage and their number with a
// model that sums the charges by Key. Histories of one name share a
// slice, found by scan or, past scanUpTo, by index, and are removed by
// swapping the last in; a removal that loses or keeps the wrong one, or
// leaves the index stale, shows here.
func TestEntriesModel(t *testing.T) {
	h, _ := newHistory(t, queueconfigtest.Root(`
submitacl: "*"
queues:
- name: a
  resources: {max: {vcore: 100}}
  properties: {userquota.fairness: user}
  queues:
  - name: x
    queues:
    - name: deep
  - name: y
- name: b
  resources: {guaranteed: {vcore: 100}}
  properties: {userquota.fairness: group}
  queues:
  - name: z
- name: c
- name: d
  queues: [{name: d1}, {name: d2}, {name: d3}, {name: d4}, {name: d5}, {name: d6}]
`))
	// Enough queues for a name's histories to pass scanUpTo (an index).
	leaves := []string{"root.a.x.deep", "root.a.y", "root.b.z", "root.c", "root.a.x",
		"root.d.d1", "root.d.d2", "root.d.d3", "root.d.d4", "root.d.d5", "root.d.d6"}
	users := []string{"ann", "bob", "cy"}
	groups := [][]string{nil, {"dev"}, {"ops", "dev"}}
	rng := rand.New(rand.NewSource(7))
	var running []*ugm.Request
	model := map[Key]int64{} // millicpu
	cpu := resources.Intern("cpu")
	indexed := false
	charge := func(r *ugm.Request, sign int64) {
		for q := r.Queue; q != "root"; q = q[:lastDot(q)] {
			model[Key{Queue: q, Name: r.User}] += sign * r.Resources.Get(cpu)
			if len(r.Groups) > 0 {
				model[Key{Queue: q, Group: true, Name: r.Groups[0]}] += sign * r.Resources.Get(cpu)
			}
		}
	}
	for step := 0; step < 2000; step++ {
		if len(running) == 0 || rng.Intn(5) < 3 {
			u := rng.Intn(len(users))
			r := req(users[u], leaves[rng.Intn(len(leaves))], fmt.Sprint(1+rng.Intn(3)), groups[u]...)
			h.Charged(r)
			charge(r, 1)
			running = append(running, r)
		} else {
			i := rng.Intn(len(running))
			r := running[i]
			running[i] = running[len(running)-1]
			running = running[:len(running)-1]
			h.Released(r)
			charge(r, -1)
		}
		live := 0
		for k, want := range model {
			usage, _, _ := h.Usage(k)
			if got := usage["cpu"]; got != want {
				t.Fatalf("step %d: %+v has cpu %d, want %d", step, k, got, want)
			}
			if want != 0 {
				live++
			} else if usage != nil {
				t.Fatalf("step %d: %+v kept with no usage", step, k)
			}
		}
		if h.Len() != live {
			t.Fatalf("step %d: %d histories, want %d", step, h.Len(), live)
		}
		for _, n := range h.entries.groups {
			indexed = indexed || n.index != nil
		}
	}
	if !indexed {
		t.Fatal("no name's histories were indexed: the test covers the scan only")
	}
	for _, r := range running {
		h.Released(r)
	}
	if h.Len() != 0 || len(h.entries.users) != 0 || len(h.entries.groups) != 0 {
		t.Fatalf("all released: %d histories, %d users and %d groups kept", h.Len(), len(h.entries.users), len(h.entries.groups))
	}
}

func lastDot(q string) int {
	for i := len(q) - 1; i >= 0; i-- {
		if q[i] == '.' {
			return i
		}
	}
	return 0
}

// TestEntriesZeroCharge: a charge of nothing at a queue with a half-life
// keeps the history it made (its decayed usage is kept), on every queue
// of the path, even where the queue below it kept none.
func TestEntriesZeroCharge(t *testing.T) {
	h, _ := newHistory(t, queueconfigtest.Root(`
submitacl: "*"
queues:
- name: top
  resources: {max: {vcore: 10}}
  properties: {userquota.fairness: user, userquota.fairness.halflife: 1h}
  queues:
  - name: leaf
`))
	r := req("ann", "root.top.leaf", "0")
	r.Resources = r.Resources[:0]
	h.Charged(r)
	if _, _, at := h.Usage(Key{Queue: "root.top", Name: "ann"}); at.IsZero() {
		t.Fatal("root.top: no history kept for a zero charge under a half-life")
	}
	if u, _, _ := h.Usage(Key{Queue: "root.top.leaf", Name: "ann"}); u != nil {
		t.Fatalf("root.top.leaf (no half-life of its own): kept %v", u)
	}
	if h.Len() != 1 {
		t.Fatalf("%d histories, want 1", h.Len())
	}
}
