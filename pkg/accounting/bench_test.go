package accounting

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// BenchmarkChargeRelease is what the books add to a charge (Reserve, a pod
// found running) and a release: one op is the charge and the release of
// one pod of one of 10,000 users, three queues deep below root (accounts
// at root, root.org, root.org.team and the leaf, the user's group's, and
// with users=true the user's), a second later each time, the leaf
// elastic. The check path (PreFilter) does not call the books at all.
// The checkpoints and snapshots are not in it (BenchmarkSnapshot).
//
//	go test -run='^$' -bench=ChargeRelease -benchmem ./pkg/accounting
func BenchmarkChargeRelease(b *testing.B) {
	for _, users := range []bool{false, true} {
		b.Run(fmt.Sprintf("users=%v", users), func(b *testing.B) {
			c := testingclock.NewFakeClock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
			bk := New(c, Options{Users: users})
			bk.SetGuaranteed(map[string]resources.Vector{"root.org.team.leaf": resources.FromMap(map[string]int64{"cpu": 100000})})
			const n = 10000
			rqs := make([]*ugm.Request, n)
			for i := range rqs {
				rqs[i] = &ugm.Request{User: fmt.Sprintf("user-%05d", i), Groups: []string{fmt.Sprintf("group-%02d", i%20)},
					Queue: "root.org.team.leaf", Resources: resources.FromMap(map[string]int64{"cpu": 1000, "memory": 1 << 30, "pods": 1})}
				bk.Charged(rqs[i])
			}
			// Far from a checkpoint: a op's second never reaches one.
			start := c.Now().Truncate(CheckpointEvery).Add(time.Minute)
			c.SetTime(start)
			bk.Tick()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rq := rqs[i%n]
				c.SetTime(start.Add(time.Duration(i%180) * time.Second))
				bk.Charged(rq)
				bk.Released(rq)
			}
		})
	}
}

// BenchmarkCheckpoint and BenchmarkSnapshot are the work the books do
// every 5 minutes (a checkpoint: every account brought up to the moment,
// its values and rate kept) and on the hour (a checkpoint and a
// snapshot: every account's point, the snapshots and points no longer
// kept dropped), at 1,000 leaf queues and 10,000 users each running a pod
// (cpu, memory, pods), 20 groups of 500 users spread over the queues:
// accounts of the 1,000 queues and root, of 10,000 groups in leaf queues,
// and with users=true of the 10,000 users. They run on the books' own
// goroutine, off the scheduling path, but under the books' lock: a charge
// or release waits for them.
//
//	go test -run='^$' -bench='Checkpoint|Snapshot' -benchmem ./pkg/accounting
func BenchmarkCheckpoint(b *testing.B) { benchTick(b, false) }

func BenchmarkSnapshot(b *testing.B) { benchTick(b, true) }

func benchTick(b *testing.B, snapshot bool) {
	for _, users := range []bool{false, true} {
		b.Run(fmt.Sprintf("users=%v", users), func(b *testing.B) {
			c, bk := twoDayBooks(users)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if snapshot {
					// The 11 checkpoints before the hour, not timed.
					b.StopTimer()
					for range 11 {
						c.Step(CheckpointEvery)
						bk.Tick()
					}
					b.StartTimer()
				} else if c.Now().Add(CheckpointEvery).Truncate(SnapshotEvery).Equal(c.Now().Add(CheckpointEvery)) {
					// Not the hour's: one more, not timed.
					b.StopTimer()
					c.Step(CheckpointEvery)
					bk.Tick()
					b.StartTimer()
				}
				c.Step(CheckpointEvery)
				bk.Tick()
			}
		})
	}
}

// twoDayBooks are scaleBooks after two days of hourly snapshots: every
// account has its points.
func twoDayBooks(users bool) (*testingclock.FakeClock, *Books) {
	c := testingclock.NewFakeClock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	bk := scaleBooks(c, users)
	for range 48 {
		c.Step(SnapshotEvery)
		bk.Tick()
	}
	return c, bk
}

// scaleBooks are books at 1,000 leaf queues and 10,000 users (groups of
// 500 users, 20 groups, each user in the leaf i%1000), each user running
// cpu, memory and a pod in an elastic leaf.
func scaleBooks(c *testingclock.FakeClock, users bool) *Books {
	bk := New(c, Options{Users: users})
	g := map[string]resources.Vector{}
	for q := range 1000 {
		g[fmt.Sprintf("root.q%04d", q)] = resources.FromMap(map[string]int64{"cpu": 8000, "memory": 32 << 30})
	}
	bk.SetGuaranteed(g)
	for u := range 10000 {
		bk.Charged(&ugm.Request{User: fmt.Sprintf("user-%05d", u), Groups: []string{fmt.Sprintf("group-%02d", u/500)},
			Queue: fmt.Sprintf("root.q%04d", u%1000), Resources: resources.FromMap(map[string]int64{"cpu": 1000 + int64(u%7)*500, "memory": 4 << 30, "pods": 1})})
	}
	return bk
}

// BenchmarkRecords is what a checkpoint's write asks of the books
// (Records: every account's record, at the scale of scaleBooks after two
// days of hourly snapshots) while a charge and a release run beside it in
// a loop, as the scheduler's Reserve and the pod handler do. Beside ns/op
// it reports the longest a charge or release waited in an op
// (max-wait-ns/op): Records holds the books' lock only while it copies
// the numbers, not while it builds and sorts the records.
//
//	go test -run='^$' -bench=Records -benchmem ./pkg/accounting
func BenchmarkRecords(b *testing.B) {
	for _, users := range []bool{false, true} {
		b.Run(fmt.Sprintf("users=%v", users), func(b *testing.B) {
			_, bk := twoDayBooks(users)
			rq := &ugm.Request{User: "user-00001", Groups: []string{"group-00"}, Queue: "root.q0001",
				Resources: resources.FromMap(map[string]int64{"cpu": 1000, "pods": 1})}
			var worst time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var stop atomic.Bool
				done := make(chan time.Duration)
				go func() {
					var longest time.Duration
					for !stop.Load() {
						t := time.Now()
						bk.Charged(rq)
						bk.Released(rq)
						longest = max(longest, time.Since(t))
					}
					done <- longest
				}()
				if tail, _, _, _ := bk.Records(-1); len(tail) == 0 {
					b.Fatal("no records")
				}
				stop.Store(true)
				worst = max(worst, <-done)
			}
			b.ReportMetric(float64(worst.Nanoseconds()), "max-wait-ns/op")
		})
	}
}
