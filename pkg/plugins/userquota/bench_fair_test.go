package userquota

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/ugm"
)

// BenchmarkLetInFair measures one release and the let-in it causes in a
// queue whose held pods go in fair order among users (issue 21 point
// 5), beside the same queue in fifo order: every user runs one pod of 1
// cpu and has 10 more held, held either by the user's own limit (user) or
// all by the queue's max, which the running pods fill (queue: one limit
// holding every pod). One op is the release of a user's running pod (its
// history brought up to now, its key changed), the let-in (the book's
// lanes of that user moved, the window of the limits touched taken in
// order, one pod let in with its room held and activated, the next
// refused, the rest passed over), then, outside the timer, the pod let in
// dropped and the running pod charged again (its key back). The cost must
// not grow with the held pods of users the release did not touch:
// compare 10,000 held pods (1,000 users) with 100,000 (10,000 users).
//
//	go test -run='^$' -bench=LetInFair -benchmem ./pkg/plugins/userquota
func BenchmarkLetInFair(b *testing.B) {
	for _, by := range []string{"user", "queue"} {
		for _, order := range []string{"fifo", "fair"} {
			for _, users := range []int{1000, 10000} {
				b.Run(fmt.Sprintf("held-by=%s/order=%s/held=%d", by, order, users*10), func(b *testing.B) {
					benchLetInFair(b, by, order, users, 10)
				})
			}
		}
	}
}

// fairBenchConfig: root.q, whose max is the users' running pods (by
// queue) or far above them (by user, each user limited to 1 cpu), with
// user fairness and a half-life (fair) or none.
func fairBenchConfig(by, order string, users int) string {
	max := users
	limits := ""
	if by == "user" {
		max = 1000 * users
		limits = `
  limits:
  - limit: one each
    users: ["*"]
    maxresources: {vcore: 1}`
	}
	props := ""
	if order == "fair" {
		props = `
  properties: {userquota.fairness: user, userquota.fairness.halflife: 24h}`
	}
	return queueconfigtest.Root(fmt.Sprintf(`
queues:
- name: q
  resources: {max: {vcore: %d}}%s%s
`, max, props, limits))
}

func benchLetInFair(b *testing.B, by, order string, users, perUser int) {
	activated := 0
	pl, pods := barePlugin(b, fairBenchConfig(by, order, users), &activated)
	pl.newFairShare(clock.RealClock{})
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
	}
	for u := range all {
		name := fmt.Sprintf("u%05d", u)
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
		// Exactly one held pod is let in: in fair order, one of the
		// released user's (the only user below the others); in fifo
		// order by the queue, the oldest held pod; by the user's limit,
		// one of the user's.
		var in *v1.Pod
		for _, p := range u.held {
			if m.Admitted(string(p.UID)) {
				in = p
			}
		}
		if in == nil && (order == "fair" || by == "user") {
			b.Fatalf("no held pod of %s let in", u.running.Name)
		}
		if in == nil {
			for _, o := range all {
				for _, p := range o.held {
					if m.Admitted(string(p.UID)) {
						in = p
					}
				}
			}
		}
		if in == nil {
			b.Fatal("no held pod let in")
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
