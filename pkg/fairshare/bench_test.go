package fairshare

import (
	"fmt"
	"math/rand"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/ugm"
)

// BenchmarkChargeRelease is what the history adds to a charge (Reserve,
// a pod found running) and a release: one op is the charge and the
// release of one pod of one of 10,000 users, three queues deep (histories
// kept at root.org and root.org.team, and at the leaf), with decay. The
// check path (PreFilter) does not call the history at all.
//
//	go test -run='^$' -bench=ChargeRelease -benchmem ./pkg/fairshare
func BenchmarkChargeRelease(b *testing.B) {
	h, c, rqs := newBenchHistory(b, 10000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rq := rqs[i%len(rqs)]
		c.Step(1)
		h.Charged(rq)
		h.Released(rq)
	}
}

// BenchmarkChargeReleaseRandom is BenchmarkChargeRelease among 100,000
// users picked at random, so that each charge finds its histories out of
// cache, as a scheduler's charges do between scheduling cycles.
func BenchmarkChargeReleaseRandom(b *testing.B) {
	h, c, rqs := newBenchHistory(b, 100000)
	benchRandomChargeRelease(b, h, c, rqs)
}

// benchRandomChargeRelease charges and releases rqs picked at random.
func benchRandomChargeRelease(b *testing.B, h *History, c *testingclock.FakeClock, rqs []*ugm.Request) {
	rng := rand.New(rand.NewSource(1))
	order := make([]int32, 1<<16)
	for i := range order {
		order[i] = int32(rng.Intn(len(rqs)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rq := rqs[order[i&(len(order)-1)]]
		c.Step(1)
		h.Charged(rq)
		h.Released(rq)
	}
}

// newBenchHistory is a history of users users, each running one pod in
// a fair queue three deep, and a second request per user to charge.
func newBenchHistory(b *testing.B, users int) (*History, *testingclock.FakeClock, []*ugm.Request) {
	h, c := newHistory(b, queueconfigtest.Root(`
submitacl: "*"
queues:
- name: org
  queues:
  - name: team
    resources: {max: {vcore: 1000}}
    properties: {userquota.fairness: user, userquota.fairness.halflife: 24h}
    queues:
    - name: leaf
`))
	rqs := make([]*ugm.Request, users)
	for i := range rqs {
		user := fmt.Sprintf("user-%06d", i)
		h.Charged(req(user, "root.org.team.leaf", "1", "dev"))
		rqs[i] = req(user, "root.org.team.leaf", "1", "dev")
	}
	return h, c, rqs
}

// BenchmarkChargeReleaseScale is BenchmarkChargeReleaseRandom at the
// scale run's shape (10,000 users in 1,000 leaf queues under three
// levels, 20 groups): a group's histories span hundreds of queues, so a
// charge must find its group's without scanning them.
func BenchmarkChargeReleaseScale(b *testing.B) {
	shape := queueconfigtest.Synthetic{Users: 10000, Queues: 1000, Groups: 20, Levels: 3}
	h, c := newHistory(b, shape.Config(nil))
	rqs := make([]*ugm.Request, shape.Users)
	for u := range rqs {
		h.Charged(req(shape.User(u), shape.QueuePath(u), "1", shape.Group(u)))
		rqs[u] = req(shape.User(u), shape.QueuePath(u), "1", shape.Group(u))
	}
	benchRandomChargeRelease(b, h, c, rqs)
}
