package userquota

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/ugm"
)

// barePlugin is a Plugin without a framework, for what needs none: ugm and
// the ledger under config, the placements kept for PreFilter, the hold
// book (each Activate adds to activated), a status writer that never leads, and a pod lister over the
// store it returns (a let-in finds held pods there).
func barePlugin(tb testing.TB, config string, activated *int) (*Plugin, cache.Store) {
	m := ugm.New()
	m.SetConfig(queueconfigtest.MustPartition(tb, config))
	args := Args{}
	args.SetDefaults()
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	activate := func(_ klog.Logger, ps map[string]*v1.Pod) { *activated += len(ps) }
	pl := &Plugin{args: args, profile: profileName, ugm: m, ledger: ledger.New(m), pods: newPodStore(pods), requests: testRequests, placed: newPlacedPods(),
		held:    newHolds(clock.RealClock{}, activate, 0),
		gangs:   newGangBook(clock.RealClock{}),
		reclaim: newReclaimBook(clock.RealClock{}, activate),
		status:  newStatusWriter(fake.NewClientset(), nil, &events.FakeRecorder{}, func() bool { return false }),
	}
	pl.elastic = newElasticQuotas(m, clock.RealClock{}, testRequests)
	return pl, pods
}

// letInConfig: every user may run 1 cpu in root.q.
var letInConfig = queueconfigtest.Root(`
queues:
- name: q
  limits:
  - limit: one each
    users: ["*"]
    maxresources: {vcore: 1}
`)

// BenchmarkLetIn measures one release and the let-in it causes with
// 10 held pods per user (each user at its limit): the held pods of the
// user whose pod was released are tried, one is let in (room held,
// activated), the others stay held. Run with held pods of 1,000 and of
// 10,000 users: the cost must not grow with the pods held on other users.
//
//	go test -run='^$' -bench=LetIn -benchmem ./pkg/plugins/userquota
func BenchmarkLetIn(b *testing.B) {
	for _, users := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("held=%d", users*10), func(b *testing.B) { benchLetIn(b, users, 10) })
	}
}

func benchLetIn(b *testing.B, users, perUser int) {
	activated := 0
	pl, pods := barePlugin(b, letInConfig, &activated)
	m := pl.ugm
	logger := klog.Background()
	type user struct {
		running *v1.Pod
		req     ugm.Request
		held    []*v1.Pod
	}
	all := make([]user, users)
	for u := range all {
		name := fmt.Sprintf("u%05d", u)
		run := userPod(name+"-run", name, "", "root.q", "1")
		req, err := pl.podRequest(run, m.InForce().Partition, m)
		if err != nil {
			b.Fatal(err)
		}
		if err := pl.ledger.Allocate(string(run.UID), req); err != nil {
			b.Fatal(err)
		}
		all[u] = user{running: run, req: req}
		for k := 0; k < perUser; k++ {
			p := userPod(fmt.Sprintf("%s-%d", name, k), name, "", "root.q", "1")
			d := m.Decide(string(p.UID), pl.placer(p), false)
			if d.Err == nil {
				b.Fatalf("%s fits", p.Name)
			}
			if err := pods.Add(p); err != nil {
				b.Fatal(err)
			}
			pl.holdPod(klog.Background(), p, &d.Request, d.Err, false)
			all[u].held = append(all[u].held, p)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		u := &all[i%users]
		c, ok, err := pl.ledger.Release(string(u.running.UID))
		if !ok || err != nil {
			b.Fatalf("release: %v %v", ok, err)
		}
		pl.onRelease(logger, c.Request)
		b.StopTimer()
		// Put it back: the let-in pod goes, the running pod runs again.
		// Which of the user's held pods is let in is the queue's order
		// (equal ages: by application); exactly one is.
		var in *v1.Pod
		for _, p := range u.held {
			if m.Admitted(string(p.UID)) {
				if in != nil {
					b.Fatalf("%s and %s both let in", in.Name, p.Name)
				}
				in = p
			}
		}
		if in == nil {
			b.Fatalf("no held pod of %s let in", u.running.Name)
		}
		m.Unadmit(string(in.UID))
		if err := pl.ledger.Allocate(string(u.running.UID), u.req); err != nil {
			b.Fatal(err)
		}
		d := m.Decide(string(in.UID), pl.placer(in), false)
		pl.holdPod(klog.Background(), in, &d.Request, d.Err, false)
		b.StartTimer()
	}
	b.StopTimer()
	if activated != b.N {
		b.Fatalf("%d pods let in for %d releases", activated, b.N)
	}
}

// BenchmarkStartUpLetIn is the start-up let-in (letInWaiting) of a backlog
// at issue 24's scale: 50,000 pending pods of 10,000 users in 1,000 leaf
// queues under three levels, every user limited to one pod, so that one
// pod per user is let in (room held, activated) and the other 40,000 are
// held, each with its reason. PreEnqueue held them all while the running
// pods were accounted; the pass books each and decides them in let-in
// order (test/perf's backlog at scale, docs/throughput.md open work 5).
//
//	go test -run='^$' -bench=StartUpLetIn -benchtime=3x -benchmem ./pkg/plugins/userquota
func BenchmarkStartUpLetIn(b *testing.B) {
	const perUser = 5
	shape := queueconfigtest.Synthetic{Users: 10000, Queues: 1000, Groups: 20, Levels: 3}
	cfg := shape.Config(func(int) (int, bool) { return 1, true })
	pending := make([]*v1.Pod, 0, shape.Users*perUser)
	for i := 0; i < shape.Users*perUser; i++ {
		pending = append(pending, shapePod(shape, i, ""))
	}
	logger := klog.Background()
	var cpu time.Duration
	var kept uint64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		activated := 0
		pl, store := barePlugin(b, cfg, &activated)
		for _, p := range pending {
			if err := store.Add(p); err != nil {
				b.Fatal(err)
			}
		}
		before := liveHeap()
		b.StartTimer()
		cpu0 := processCPU()
		pl.letInWaiting(logger, pending, queuedAll(pending))
		cpu += processCPU() - cpu0
		b.StopTimer()
		kept += liveHeap() - before
		runtime.KeepAlive(pl)
		if activated != shape.Users {
			b.Fatalf("%d pods let in, want one per user (%d)", activated, shape.Users)
		}
		held := 0
		for _, n := range pl.held.kinds() {
			held += n
		}
		if held != len(pending)-shape.Users {
			b.Fatalf("%d pods held, want %d", held, len(pending)-shape.Users)
		}
	}
	reportPerPod(b, len(pending), cpu)
	// What the pass leaves in the heap (holds, admissions, placements,
	// wanted statuses), per pod held: docs/throughput.md, "Memory at scale".
	b.ReportMetric(float64(kept)/float64(b.N)/float64(len(pending)-shape.Users), "kept-B/held")
}

// queuedAll marks every pod of pods as held by PreEnqueue at start-up
// (holds.started's queued), so that the start-up let-in activates each
// one it lets in.
func queuedAll(pods []*v1.Pod) map[string]bool {
	queued := make(map[string]bool, len(pods))
	for _, p := range pods {
		queued[p.Namespace+"/"+p.Name] = true
	}
	return queued
}
