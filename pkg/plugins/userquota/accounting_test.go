package userquota

import (
	"context"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/accounting"
	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// elasticB3 is elasticConfig with root.b guaranteed 3 cpu (and root.a 1,
// so that they fit a 4-cpu node).
var elasticB3 = queueconfigtest.Root(`
properties: {quota.sharing: elastic}
queues:
- name: a
  resources: {guaranteed: {vcore: 1}, max: {vcore: 10}}
- name: b
  resources: {guaranteed: {vcore: 3}, max: {vcore: 10}}
`)

// cpuBooked is the books' cpu-seconds of root.b from the start, by part.
func cpuBooked(t *testing.T, b *accounting.Books, by accounting.Kind, queue, name string) accounting.Values {
	t.Helper()
	r, err := b.Report(time.Time{}, time.Time{}, by)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range r.Rows {
		if row.Key.Queue == queue && row.Key.Name == name && row.Resource.Name() == resources.CPU {
			for i := range row.Values {
				row.Values[i] /= 1000
			}
			return row.Values
		}
	}
	return accounting.Values{}
}

// TestAccounting: the plugin books every charge and release (the
// ledger's observer) and every share table it puts in force (the
// recompute's hook), on its clock. One 4-cpu node; bob runs 3 cpu in
// root.b (guaranteed 2) for an hour: 7200 cpu-seconds within, 3600
// borrowed; then root.b's guaranteed becomes 3 (a new config): the next
// hour is all within; then his pods go: root.b's guaranteed idles.
func TestAccounting(t *testing.T) {
	c := testingclock.NewFakeClock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	e := newEnv(t, envOptions{config: elasticConfig, clock: c, args: &Args{PerUserAccounting: true}, objects: []runtime.Object{readyNode(testNode, "4")}})
	logger := klog.Background()
	e.waitFor("the capacity", e.pl.elastic.capacitySynced)
	e.pl.elastic.recompute(logger)
	run, more := userPod("b-run", "bob", "", "root.b", "2"), userPod("b-more", "bob", "", "root.b", "1")
	e.bind(run)
	e.bind(more)
	e.waitFor("bob's pods charged", func() bool { return e.pl.ledger.Len() == 2 })
	e.pl.elastic.recompute(logger)
	c.Step(time.Hour)
	steps := []struct {
		name        string
		do          func()
		queue, user accounting.Values
	}{
		{name: "an hour at 3 cpu, 2 guaranteed", queue: accounting.Values{7200, 3600}, user: accounting.Values{7200, 3600}},
		{name: "root.b guaranteed 3: an hour within", do: func() {
			e.setConfig(elasticB3)
			e.waitConfig(elasticB3)
			e.waitFor("root.b's new guaranteed share in force", func() bool {
				return e.pl.ugm.Shares().Get("root.b").Guaranteed.Get(resources.ID(0)) == 3000
			})
			// The recompute that put it in force told the books under
			// the lock it holds.
			e.pl.elastic.mu.Lock()
			e.pl.elastic.mu.Unlock()
			c.Step(time.Hour)
		}, queue: accounting.Values{7200 + 10800, 3600}, user: accounting.Values{18000, 3600}},
		{name: "bob's pods gone: root.b's guaranteed idles", do: func() {
			e.delete(run)
			e.delete(more)
			e.waitFor("bob's pods released", func() bool { return e.pl.ledger.Len() == 0 })
			c.Step(time.Hour)
		}, queue: accounting.Values{18000, 3600, 0, 10800}, user: accounting.Values{18000, 3600}},
	}
	for _, s := range steps {
		if s.do != nil {
			s.do()
		}
		if got := cpuBooked(t, e.pl.books, accounting.Queue, "root.b", ""); got != s.queue {
			t.Errorf("%s: root.b %v cpu-seconds (guaranteed, borrowed, unshared, idle), want %v", s.name, got, s.queue)
		}
		if got := cpuBooked(t, e.pl.books, accounting.User, "root.b", "bob"); got != s.user {
			t.Errorf("%s: bob in root.b %v cpu-seconds, want %v", s.name, got, s.user)
		}
	}
	// The same on /metrics (the plugin shows its books there).
	metrics.Register()
	want := []string{
		`userquota_queue_resource_seconds_total{queue="root.b",resource="cpu",share="borrowed",unit="core"} 3600`,
		`userquota_queue_resource_seconds_total{queue="root.b",resource="cpu",share="guaranteed",unit="core"} 18000`,
	}
	var got string
	e.waitFor("the books on /metrics", func() bool {
		rec := httptest.NewRecorder()
		legacyregistry.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		got = rec.Body.String()
		return strings.Contains(got, want[0]) && strings.Contains(got, want[1])
	})
}

// TestAccountingOff: without perUserAccounting the books keep no user
// accounts (and do no per-user work): groups and queues only.
func TestAccountingOff(t *testing.T) {
	e := newEnv(t, envOptions{config: elasticConfig, objects: []runtime.Object{readyNode(testNode, "4")}})
	e.waitFor("the capacity", e.pl.elastic.capacitySynced)
	e.pl.elastic.recompute(klog.Background())
	e.bind(userPod("b-run", "bob", "dev", "root.b", "2"))
	e.waitFor("bob's pod charged", func() bool { return e.pl.ledger.Len() == 1 })
	if _, err := e.pl.books.Report(time.Time{}, time.Time{}, accounting.User); err != accounting.ErrNoUsers {
		t.Errorf("a report by user: %v, want ErrNoUsers", err)
	}
	queues, members := e.pl.books.Len()
	if queues != 3 || members != 1 {
		t.Errorf("%d queue and %d member accounts, want root, root.a (its guaranteed idle) and root.b, and group dev in root.b", queues, members)
	}
}

// TestAccountingStore: the leader writes the books to ConfigMaps
// userquota-accounting-N once it has read them; a new replica restores
// them and reports what the leader reports; when they need more
// ConfigMaps than allowed the oldest daily snapshots are left out.
func TestAccountingStore(t *testing.T) {
	ctx, logger := context.Background(), klog.Background()
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	c := testingclock.NewFakeClock(start)
	client := fake.NewClientset()
	leads := true
	b := accounting.New(c, accounting.Options{Users: true})
	st := newAccountingStore(client, "ns", b, func() bool { return leads })
	for u := range 40 {
		b.Charged(&ugm.Request{User: fmt.Sprintf("user-%02d", u), Groups: []string{"dev"}, Queue: "root.q",
			Resources: resources.FromMap(map[string]int64{"cpu": 1000, "memory": 1 << 30, "pods": 1})})
	}
	c.SetTime(start.Add(5*24*time.Hour + 7*time.Minute))
	if err := st.restore(ctx, logger); err != nil {
		t.Fatal(err)
	}
	st.write(ctx, logger)
	list, err := client.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{LabelSelector: labelComponent + "=" + accountingComponent})
	if err != nil || len(list.Items) == 0 || list.Items[0].Name != "userquota-accounting-0" {
		t.Fatalf("ConfigMaps %v %v", list.Items, err)
	}

	restart := c.Now().Add(15 * time.Second)
	c2 := testingclock.NewFakeClock(restart)
	b2 := accounting.New(c2, accounting.Options{Users: true})
	st2 := newAccountingStore(client, "ns", b2, func() bool { return false })
	if err := st2.restore(ctx, logger); err != nil {
		t.Fatal(err)
	}
	c.SetTime(restart)
	for _, day := range []time.Time{start.Add(24 * time.Hour), start.Add(4 * 24 * time.Hour)} {
		want, err := b.Report(day, time.Time{}, accounting.User)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b2.Report(day, time.Time{}, accounting.User)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Rows) != len(want.Rows) || !got.From.Equal(want.From) {
			t.Fatalf("restored from %s: %d rows from %s, want %d from %s", day, len(got.Rows), got.From, len(want.Rows), want.From)
		}
		for i := range want.Rows {
			if w, g := want.Rows[i].Values.Total(), got.Rows[i].Values.Total(); g < w-1 || g > w+1 {
				t.Errorf("restored from %s: %v %s %v, want %v", day, got.Rows[i].Key, got.Rows[i].Resource, g, w)
			}
		}
	}

	// Shards of 16 KiB, at most 3: the days do not all fit, so the oldest
	// are left out (a window from them starts later) and everything else
	// is kept.
	small := &booksState{books: b, max: 3, target: 8 << 10, limit: 16 << 10}
	shards, err := small.shards()
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) > 3 {
		t.Fatalf("%d shards, want at most 3", len(shards))
	}
	b3 := accounting.New(testingclock.NewFakeClock(restart), accounting.Options{Users: true})
	if recs, bad := (&booksState{books: b3}).restore(shards); recs == 0 || bad != 0 {
		t.Fatalf("restored %d records, %d bad", recs, bad)
	}
	r, err := b3.Report(start, time.Time{}, accounting.User)
	if err != nil {
		t.Fatal(err)
	}
	if !r.From.After(start.Add(24*time.Hour)) || len(r.Rows) != 3*40 {
		t.Errorf("with the oldest days left out: from %s, %d rows; want a later start, 120 rows", r.From, len(r.Rows))
	}
	t.Logf("in 3 shards of at most 16 KiB the books keep the days from %s", r.From)
}

// TestBooksStateUnchanged: the shards are written every 30 s, a checkpoint
// taken every 5 minutes; between two checkpoints the write returns what
// it encoded without asking the books for every account's record again
// (each Records call holds the books' lock, which every charge takes, and
// allocates per account), and after one it encodes the new records.
func TestBooksStateUnchanged(t *testing.T) {
	start := time.Date(2026, 11, 2, 9, 1, 0, 0, time.UTC)
	c := testingclock.NewFakeClock(start)
	b := accounting.New(c, accounting.Options{Users: true})
	for u := range 200 {
		b.Charged(&ugm.Request{User: fmt.Sprintf("user-%03d", u), Groups: []string{"dev"}, Queue: fmt.Sprintf("root.q%d", u%10),
			Resources: resources.FromMap(map[string]int64{"cpu": 1000, "pods": 1})})
	}
	c.Step(accounting.CheckpointEvery)
	b.Tick()
	st := &booksState{books: b, max: 64, target: 8 << 10, limit: 16 << 10}
	first, err := st.shards()
	if err != nil || len(first) == 0 {
		t.Fatalf("shards %d, %v", len(first), err)
	}
	c.Step(30 * time.Second)
	var again [][]byte
	if allocs := testing.AllocsPerRun(5, func() { again, err = st.shards() }); allocs > 10 {
		t.Errorf("between checkpoints a write allocates %.0f times, want the shards encoded before (a few)", allocs)
	}
	if err != nil || !reflect.DeepEqual(again, first) {
		t.Fatalf("between checkpoints: shards changed (%v)", err)
	}
	c.Step(accounting.CheckpointEvery)
	b.Tick()
	next, err := st.shards()
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(next, first) {
		t.Error("after a checkpoint the shards did not change")
	}
}
