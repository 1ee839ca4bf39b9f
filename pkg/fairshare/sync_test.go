package fairshare

import (
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/ugm"
)

var plainConfig = queueconfigtest.Root(`
submitacl: "*"
queues:
- name: q
- name: g
  queues:
  - name: a
  - name: b
- name: plain
`)

// TestSyncDormant: a Sync under a config without a fair queue forgets
// every history, reports a reset, and nothing is recorded after it.
func TestSyncDormant(t *testing.T) {
	h, _ := newHistory(t, plainConfig)
	h.Charged(req("sue", "root.q", "1"))
	if !h.Recording() || h.Len() == 0 {
		t.Fatalf("before the first Sync: recording %v, %d histories", h.Recording(), h.Len())
	}
	h.Changes(func(Key, float64) {})
	h.Sync(maps.Values(map[string]*ugm.Request{"p": req("sue", "root.q", "1")}))
	if h.Recording() || h.Len() != 0 {
		t.Fatalf("after Sync without fairness: recording %v, %d histories", h.Recording(), h.Len())
	}
	if reset := h.Changes(func(Key, float64) {}); !reset {
		t.Error("Sync reported no reset")
	}
	h.Charged(req("ann", "root.g.a", "2", "dev"))
	h.Released(req("sue", "root.q", "1"))
	if h.Len() != 0 {
		t.Errorf("dormant, yet %d histories", h.Len())
	}
}

// TestSyncReplaysUsage: a history that slept while no queue was fair
// and was synced from the live charges each time fairness came back
// holds what one that always recorded holds (usage and keys; the
// config has no half-life, so no decayed usage differs), through random
// charges and releases of users and groups in fair and plain queues.
func TestSyncReplaysUsage(t *testing.T) {
	fair := strings.Replace(fairConfig, "\n        userquota.fairness.halflife: 24h", "", 1)
	if fair == fairConfig {
		t.Fatal("the test config still has a half-life")
	}
	c := testingclock.NewFakeClock(t0)
	fairP, plainP := queueconfigtest.MustPartition(t, fair), queueconfigtest.MustPartition(t, plainConfig)
	ref := New(c, func() *queueconfig.Partition { return fairP })
	p := plainP
	h := New(c, func() *queueconfig.Partition { return p })
	live := map[int]*ugm.Request{}
	sync := func(to *queueconfig.Partition) {
		p = to
		h.Sync(maps.Values(live))
	}
	users := []string{"sue", "ann", "bob", "lee", "tim"}
	groups := [][]string{{"dev"}, {"dev", "ops"}, {"ops"}, nil, {"x"}}
	queues := []string{"root.q", "root.g.a", "root.g.b", "root.plain"}
	rng := rand.New(rand.NewPCG(3, 5))
	next := 0
	step := func(n int) {
		for range n {
			if len(live) > 0 && rng.IntN(3) == 0 {
				for id, r := range live {
					ref.Released(r)
					h.Released(r)
					delete(live, id)
					break
				}
				continue
			}
			u := rng.IntN(len(users))
			r := req(users[u], queues[rng.IntN(len(queues))], []string{"1", "2", "500m"}[rng.IntN(3)], groups[u]...)
			live[next] = r
			next++
			ref.Charged(r)
			h.Charged(r)
		}
	}
	compare := func(phase string) {
		t.Helper()
		for _, q := range []string{"root.q", "root.g", "root.g.a", "root.g.b", "root.plain"} {
			for _, name := range append(users, "dev", "ops", "x") {
				for _, group := range []bool{false, true} {
					k := Key{Queue: q, Group: group, Name: name}
					gotU, _, _ := h.Usage(k)
					wantU, _, _ := ref.Usage(k)
					if !maps.Equal(gotU, wantU) || h.Key(k) != ref.Key(k) {
						t.Errorf("%s: %+v: usage %v key %v, want %v %v", phase, k, gotU, h.Key(k), wantU, ref.Key(k))
					}
				}
			}
		}
	}
	sync(plainP)
	step(200)
	sync(fairP)
	compare("turned on")
	step(200)
	compare("on")
	sync(plainP)
	step(100)
	sync(fairP)
	step(100)
	compare("on again")
	if len(live) == 0 {
		t.Fatal("nothing live: the test compares nothing")
	}
}
