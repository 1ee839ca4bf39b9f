package fairshare

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// fairConfig: root.q measures users against 10 cpu (and 100 units of
// memory-free gpu: 4), half-life 24h, bob weighs 2; root.g measures
// groups against 8 cpu without decay; root.plain orders nobody.
var fairConfig = queueconfigtest.Root(`
submitacl: "*"
queues:
- name: q
  resources: {max: {vcore: 10, nvidia.com/gpu: 4}}
  properties:
    userquota.fairness: user
    userquota.fairness.halflife: 24h
    userquota.fairness.weights: "bob=2"
- name: g
  resources: {guaranteed: {vcore: 8}}
  properties: {userquota.fairness: group}
  queues:
  - name: a
  - name: b
- name: plain
`)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func newHistory(t testing.TB, config string) (*History, *testingclock.FakeClock) {
	t.Helper()
	p := queueconfigtest.MustPartition(t, config)
	c := testingclock.NewFakeClock(t0)
	return New(c, func() *queueconfig.Partition { return p }), c
}

func req(user, queue, cpu string, groups ...string) *ugm.Request {
	v, err := resources.Parse(map[string]string{"cpu": cpu})
	if err != nil {
		panic(err)
	}
	v.Set(resources.Intern("pods"), 1)
	return &ugm.Request{User: user, Groups: groups, Queue: queue, App: ugm.AppKey{Namespace: "ns", ID: user}, Resources: v}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func laneKey(t *testing.T, h *History, r *ugm.Request) (Key, float64) {
	t.Helper()
	k, key, ok := h.Lane(r)
	if !ok {
		t.Fatalf("Lane(%s in %s): not fair", r.User, r.Queue)
	}
	return k, key
}

func TestKeysWithoutDecay(t *testing.T) {
	h, _ := newHistory(t, fairConfig)
	// Group fairness in root.g (its guaranteed 8 cpu): dev's two users
	// count together, in both leaves; ops apart; a user without groups
	// as a group of their own.
	h.Charged(req("sue", "root.g.a", "2", "dev", "x"))
	h.Charged(req("ann", "root.g.b", "2", "dev"))
	h.Charged(req("bob", "root.g.a", "1", "ops", "dev"))
	h.Charged(req("lee", "root.g.a", "4"))
	for _, tc := range []struct {
		r    *ugm.Request
		want Key
		key  float64
	}{
		{req("sue", "root.g.b", "1", "dev"), Key{Queue: "root.g", Group: true, Name: "dev"}, 0.5},
		{req("tim", "root.g.a", "1", "ops"), Key{Queue: "root.g", Group: true, Name: "ops"}, 0.125},
		{req("lee", "root.g.a", "1"), Key{Queue: "root.g", Name: "lee"}, 0.5},
		{req("new", "root.g.a", "1", "new"), Key{Queue: "root.g", Group: true, Name: "new"}, 0},
	} {
		k, key := laneKey(t, h, tc.r)
		if k != tc.want || !near(key, tc.key) {
			t.Errorf("Lane(%s %v) = %+v %v, want %+v %v", tc.r.User, tc.r.Groups, k, key, tc.want, tc.key)
		}
	}
	if _, _, ok := h.Lane(req("sue", "root.plain", "1")); ok {
		t.Error("root.plain orders users")
	}
	// Released: the key falls with it; a history without usage and
	// without decay is forgotten.
	h.Released(req("lee", "root.g.a", "4"))
	if _, key := laneKey(t, h, req("lee", "root.g.a", "1")); key != 0 {
		t.Errorf("lee after release: %v", key)
	}
	if _, _, at := h.Usage(Key{Queue: "root.g", Name: "lee"}); !at.IsZero() {
		t.Error("lee's history kept without usage or decay")
	}
}

func TestChangesReportsOnlyEvents(t *testing.T) {
	h, c := newHistory(t, fairConfig)
	drain := func() (map[Key]float64, bool) {
		got := map[Key]float64{}
		reset := h.Changes(func(k Key, key float64) { got[k] = key })
		return got, reset
	}
	if _, reset := drain(); !reset {
		t.Error("the first Changes is a reset (the config is new)")
	}
	h.Charged(req("sue", "root.q", "5"))
	got, reset := drain()
	if reset || len(got) != 1 || !near(got[Key{Queue: "root.q", Name: "sue"}], 0.5) {
		t.Errorf("after sue's charge: %v reset %v, want root.q/sue 0.5 only", got, reset)
	}
	// Time alone changes no key, however long.
	c.Step(48 * time.Hour)
	if got, reset := drain(); len(got) != 0 || reset {
		t.Errorf("time alone: %v %v", got, reset)
	}
	if _, key := laneKey(t, h, req("sue", "root.q", "1")); !near(key, 0.5) {
		t.Errorf("sue's key moved with the clock: %v", key)
	}
	// Plain queues report nothing.
	h.Charged(req("sue", "root.plain", "5"))
	if got, _ := drain(); len(got) != 0 {
		t.Errorf("a charge in root.plain: %v", got)
	}
}

// TestDecay: a user who ran 8 of 10 cpu for one half-life and stopped
// counts 4 cpu (0.4) at the stop, half of that one half-life later (at
// her next event), and a steady user tends to twice their usage.
func TestDecay(t *testing.T) {
	h, c := newHistory(t, fairConfig)
	sue := req("sue", "root.q", "8")
	h.Charged(sue)
	c.Step(24 * time.Hour)
	h.Released(sue)
	k := Key{Queue: "root.q", Name: "sue"}
	if got := h.Key(k); !near(got, 0.4) {
		t.Errorf("at the stop: %v, want 0.4 (H = 8 * (1 - 1/2))", got)
	}
	c.Step(24 * time.Hour)
	if got := h.Key(k); !near(got, 0.4) {
		t.Errorf("a day later without an event: %v, want 0.4 still", got)
	}
	h.Charged(req("sue", "root.q", "1"))
	if got := h.Key(k); !near(got, 0.2+0.1) {
		t.Errorf("a day later, charged 1 cpu: %v, want 0.3 (H 2 + U 1)", got)
	}
	// Weights divide: bob weighs 2.
	bob := req("bob", "root.q", "4")
	h.Charged(bob)
	c.Step(10 * 24 * time.Hour)
	h.Charged(req("bob", "root.q", "0"))
	want := (4 + 4*(1-math.Exp2(-10))) / 10 / 2
	if got := h.Key(Key{Queue: "root.q", Name: "bob"}); math.Abs(got-want) > 1e-9 {
		t.Errorf("bob after 10 half-lives at 4 cpu: %v, want %v (about twice his usage, halved by his weight)", got, want)
	}
	// The dominant resource counts: 1 gpu of 4 is more than 1 cpu of 10.
	g := req("gil", "root.q", "1")
	g.Resources.Set(resources.Intern("nvidia.com/gpu"), 1)
	h.Charged(g)
	if got := h.Key(Key{Queue: "root.q", Name: "gil"}); !near(got, 0.25) {
		t.Errorf("gil: %v, want 0.25 (gpu)", got)
	}
}

// TestConfigChangeResets: a config change is reported as a reset and the
// keys are computed under the new config (its weights, its base).
func TestConfigChangeResets(t *testing.T) {
	p := queueconfigtest.MustPartition(t, fairConfig)
	c := testingclock.NewFakeClock(t0)
	h := New(c, func() *queueconfig.Partition { return p })
	h.Changes(func(Key, float64) {})
	h.Charged(req("sue", "root.q", "5"))
	h.Changes(func(Key, float64) {})
	p = queueconfigtest.MustPartition(t, strings.Replace(fairConfig, `"bob=2"`, `"sue=5"`, 1))
	if reset := h.Changes(func(Key, float64) {}); !reset {
		t.Error("no reset after a config change")
	}
	if got := h.Key(Key{Queue: "root.q", Name: "sue"}); !near(got, 0.1) {
		t.Errorf("sue weighs 5 now: %v, want 0.1", got)
	}
}

// TestRecordsRoundTrip: what Records writes, Shards and Decode carry,
// and Restore puts back as it was.
func TestRecordsRoundTrip(t *testing.T) {
	h, c := newHistory(t, fairConfig)
	h.Charged(req("sue", "root.q", "8"))
	h.Charged(req("ann", "root.q", "2"))
	c.Step(6 * time.Hour)
	h.Released(req("sue", "root.q", "8"))
	c.Step(time.Minute)
	recs := h.Records()
	if len(recs) != 2 {
		t.Fatalf("records: %+v, want sue's and ann's in root.q", recs)
	}
	shards, err := Shards(recs, TargetShardBytes, MaxShardBytes)
	if err != nil || len(shards) != 1 {
		t.Fatalf("shards: %d %v", len(shards), err)
	}
	back, bad := Decode(shards[0])
	if bad != 0 || len(back) != 2 {
		t.Fatalf("decoded %d records, %d bad", len(back), bad)
	}
	h2 := New(c, h.config)
	h2.Restore(back)
	h2.Charged(req("ann", "root.q", "2")) // ann's running pod, charged again at start
	h2.Settle()
	c.Step(3 * time.Hour)
	h.Charged(req("sue", "root.q", "1"))
	h2.Charged(req("sue", "root.q", "1"))
	h.Charged(req("ann", "root.q", "1"))
	h2.Charged(req("ann", "root.q", "1"))
	for _, name := range []string{"sue", "ann"} {
		k := Key{Queue: "root.q", Name: name}
		if a, b := h.Key(k), h2.Key(k); math.Abs(a-b) > 1e-6 {
			t.Errorf("%s: %v before the restart, %v after", name, a, b)
		}
	}
	// Bad lines are skipped, counted.
	recs, bad = Decode([]byte("{\"q\":\"root.q\",\"n\":\"x\",\"t\":1,\"h\":{\"cpu\":1}}\nnot json\n{\"q\":\"\",\"n\":\"y\",\"t\":1,\"h\":{}}\n{\"q\":\"root.q\",\"n\":\"z\",\"t\":1,\"u\":{\"cpu\":-1},\"h\":{}}\n"))
	if len(recs) != 1 || bad != 3 {
		t.Errorf("decoded %d, bad %d; want 1 and 3", len(recs), bad)
	}
}

// TestForgets: a history without usage is forgotten once its decayed
// usage is below a millionth of its queue's base.
func TestForgets(t *testing.T) {
	h, c := newHistory(t, fairConfig)
	h.Charged(req("sue", "root.q", "10"))
	c.Step(time.Hour)
	h.Released(req("sue", "root.q", "10"))
	if len(h.Records()) != 1 {
		t.Fatal("sue's history not kept")
	}
	// 10 cpu for 1h of a 24h half-life: 284m, 0.0284 of root.q's 10 cpu.
	c.Step(14 * 24 * time.Hour)
	if len(h.Records()) != 1 {
		t.Fatal("forgotten after 14 half-lives (1.7e-6 of the base)")
	}
	c.Step(24 * time.Hour)
	if n := len(h.Records()); n != 0 || h.Len() != 0 {
		t.Fatalf("not forgotten after 15 half-lives (8.7e-7 of the base): %d records, %d histories", n, h.Len())
	}
}

// TestShardsScale: the history of 10,000 users in one fair queue (cpu,
// memory and gpu each) fits in a few ConfigMaps; each shard is under the
// bound, and a change of one user rewrites one shard.
func TestShardsScale(t *testing.T) {
	for _, users := range []int{100, 10000, 40000} {
		recs := make([]Record, users)
		for i := range recs {
			recs[i] = Record{Queue: "root.research.batch", Name: fmt.Sprintf("user-%05d", i), At: t0.UnixMilli(),
				Usage:   map[string]int64{"cpu": 16000, "memory": 64 << 30, "nvidia.com/gpu": 2},
				Decayed: map[string]float64{"cpu": 12345.678901, "memory": 4.567890123e10, "nvidia.com/gpu": 1.2345678}}
		}
		shards, err := Shards(recs, TargetShardBytes, MaxShardBytes)
		if err != nil {
			t.Fatal(err)
		}
		total, most := 0, 0
		for _, s := range shards {
			total += len(s)
			most = max(most, len(s))
		}
		if most > MaxShardBytes {
			t.Errorf("%d users: a shard of %d bytes", users, most)
		}
		t.Logf("%d users: %d bytes (%d per user), %d shards, the largest %d bytes", users, total, total/users, len(shards), most)
		// One user changes: only its shard differs.
		recs[users/2].Decayed = map[string]float64{"cpu": 1}
		again, _ := Shards(recs, TargetShardBytes, MaxShardBytes)
		changed := 0
		for i := range shards {
			if string(shards[i]) != string(again[i]) {
				changed++
			}
		}
		if changed != 1 {
			t.Errorf("%d users: one change rewrote %d shards", users, changed)
		}
	}
}
