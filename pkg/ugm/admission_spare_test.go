package ugm

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
)

// spareConfig: two tiers of queues, loose limits, so that admissions come
// and go at every level.
const spareConfig = `
partitions:
- name: default
  queues:
  - name: root
    submitacl: "*"
    limits:
    - limit: groups
      groups: [g0, g1, g2]
      maxresources: {vcore: 10000, memory: 10000Gi}
    queues:
    - name: t
      queues: [{name: a}, {name: b}]
    - name: u
      queues: [{name: c}]
`

// TestHeldRoomAfterReuse: the room the admissions' book holds at every
// place (user, group and queue, at every level) is the sum of the live
// admissions there, and no place or per-name map is kept empty, through
// random admits, commits, unadmits and releases, which empty places and
// fill them again from the spare lists. A spare place or map that kept
// what it held, or went back to the list while still in a map, fails it.
func TestHeldRoomAfterReuse(t *testing.T) {
	m := withConfig(t, spareConfig)
	rng := rand.New(rand.NewSource(7))
	leaves := []string{"root.t.a", "root.t.b", "root.u.c"}
	type pod struct {
		key string
		r   *Request
	}
	var admitted, running []pod
	for step := range 4000 {
		switch op := rng.Intn(4); {
		case op == 0 || len(admitted) == 0:
			u := rng.Intn(5)
			r := req(fmt.Sprintf("u%d", u), []string{fmt.Sprintf("g%d", u%3)}, leaves[rng.Intn(len(leaves))],
				fmt.Sprintf("app%d-%d", u, rng.Intn(3)), res(t, "cpu", fmt.Sprint(1+rng.Intn(3)), "memory", "1Gi"))
			key := fmt.Sprintf("p%d", step)
			if err := m.Admit(key, r); err == nil {
				admitted = append(admitted, pod{key, r})
			}
		case op == 1:
			i := rng.Intn(len(admitted))
			p := admitted[i]
			admitted = append(admitted[:i], admitted[i+1:]...)
			if err := m.Commit(p.key, p.r); err != nil {
				t.Fatalf("step %d: commit %s: %v", step, p.key, err)
			}
			running = append(running, p)
		case op == 2:
			i := rng.Intn(len(admitted))
			m.Unadmit(admitted[i].key)
			admitted = append(admitted[:i], admitted[i+1:]...)
		case len(running) > 0:
			i := rng.Intn(len(running))
			if err := m.Decrease(running[i].r); err != nil {
				t.Fatalf("step %d: release: %v", step, err)
			}
			running = append(running[:i], running[i+1:]...)
		}
		checkHeldRoom(t, m, step)
	}
	if len(m.adm.groups) == 0 && len(admitted) > 0 {
		t.Fatal("no group holds room: the groups' places were not exercised")
	}
	if len(m.adm.spare) == 0 || len(m.adm.spareMaps) == 0 {
		t.Fatalf("no spare place or map kept (%d, %d): the reuse was not exercised", len(m.adm.spare), len(m.adm.spareMaps))
	}
}

// checkHeldRoom compares the book's places with the sums of its live
// admissions' requests.
func checkHeldRoom(t *testing.T, m *Manager, step int) {
	t.Helper()
	m.mu.RLock()
	defer m.mu.RUnlock()
	want := map[string]resources.Vector{}
	add := func(key string, v resources.Vector) {
		w := want[key].Clone()
		w.AddUnchecked(v)
		want[key] = w
	}
	for _, ad := range m.adm.byKey {
		for p := ad.req.Queue; p != ""; p = queueconfig.ParentPath(p) {
			add("user "+ad.req.User+" "+p, ad.req.Resources)
			if ad.group != "" {
				add("group "+ad.group+" "+p, ad.req.Resources)
			}
			add("queue "+p, ad.req.Resources)
		}
	}
	got := map[string]resources.Vector{}
	spare := map[*held]bool{}
	for _, h := range m.adm.spare {
		spare[h] = true
	}
	place := func(key string, h *held) {
		if h.empty() {
			t.Fatalf("step %d: %s kept empty", step, key)
		}
		if spare[h] {
			t.Fatalf("step %d: %s is also on the spare list", step, key)
		}
		if !h.res.IsZero() {
			got[key] = h.res
		}
	}
	for name, byPath := range m.adm.users {
		if len(byPath) == 0 {
			t.Fatalf("step %d: user %s's map kept empty", step, name)
		}
		for p, h := range byPath {
			place("user "+name+" "+p, h)
		}
	}
	for name, byPath := range m.adm.groups {
		if len(byPath) == 0 {
			t.Fatalf("step %d: group %s's map kept empty", step, name)
		}
		for p, h := range byPath {
			place("group "+name+" "+p, h)
		}
	}
	for p, h := range m.adm.queues {
		place("queue "+p, h)
	}
	for key, w := range want {
		if !got[key].Equal(w) {
			t.Fatalf("step %d: %s holds %v, its admissions %v", step, key, got[key], w)
		}
	}
	for key, g := range got {
		if _, ok := want[key]; !ok {
			t.Fatalf("step %d: %s holds %v, no admission there", step, key, g)
		}
	}
	for _, h := range m.adm.spare {
		if !h.empty() {
			t.Fatalf("step %d: a spare place holds %v", step, h.res)
		}
	}
}
