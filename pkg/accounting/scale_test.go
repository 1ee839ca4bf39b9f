package accounting

import (
	"os"
	"runtime"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/cmshard"
)

// scaleMaxShards is the plugin's limit on the books' ConfigMaps
// (accountingKind.max: userquota-accounting-0 .. -63).
const scaleMaxShards = 64

// TestScale measures the books at 1,000 leaf queues (elastic, guaranteed
// cpu and memory) and 10,000 users (20 groups), every user running all
// the time and each one's usage changing every hour, so that every
// account keeps a point at every snapshot: the worst case of retention
// (49 hourly and 35 daily points each). It reports the heap the books
// hold, the points, what the records take in ConfigMaps and how many
// daily snapshots fit in the 64 the plugin writes. It can take longer
// than go test's default 10-minute timeout; run it by hand:
//
//	ACCOUNTING_SCALE=1 go test -timeout 60m -run '^TestScale$' -v ./pkg/accounting
func TestScale(t *testing.T) {
	if os.Getenv("ACCOUNTING_SCALE") == "" {
		t.Skip("set ACCOUNTING_SCALE=1 to measure (about a minute)")
	}
	for _, users := range []bool{false, true} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := testingclock.NewFakeClock(time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC))
		b := scaleBooks(c, users)
		end := c.Now().Add(DailyFor + 3*24*time.Hour)
		for c.Now().Before(end) {
			c.Step(SnapshotEvery)
			b.Tick()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		queues, members := b.Len()
		points := 0
		for _, a := range b.queues {
			points += len(a.pt)
		}
		for _, m := range b.members {
			points += len(m.pt)
		}
		tail, days, _, _ := b.Records(-1)
		tailShards, err := Shards(tail, cmshard.TargetShardBytes, cmshard.MaxShardBytes)
		if err != nil {
			t.Fatal(err)
		}
		dayShards, err := Shards(days, cmshard.TargetShardBytes, cmshard.MaxShardBytes)
		if err != nil {
			t.Fatal(err)
		}
		size := func(shards [][]byte) (n int) {
			for _, s := range shards {
				n += len(s)
			}
			return n
		}
		t.Logf("users=%v: %d queue and %d group/user accounts, %d snapshots kept, %d points; heap %.1f MB; records: tail %.2f MB in %d shards, days %.2f MB in %d shards",
			users, queues, members, len(b.grid), points, float64(after.HeapAlloc-before.HeapAlloc)/1e6,
			float64(size(tailShards))/1e6, len(tailShards), float64(size(dayShards))/1e6, len(dayShards))
		// The plugin writes at most 64 ConfigMaps (accountingKind), the
		// days' shards and the tail's, leaving out the oldest daily
		// snapshots until they fit: how many are kept across a restart.
		fits := func(keep int) bool {
			tail, days, _, _ := b.Records(keep)
			ts, err1 := Shards(tail, cmshard.TargetShardBytes, cmshard.MaxShardBytes)
			ds, err2 := Shards(days, cmshard.TargetShardBytes, cmshard.MaxShardBytes)
			return err1 == nil && err2 == nil && len(ts)+len(ds) <= scaleMaxShards
		}
		lo, hi := 0, len(tail[0].Grid) // fits(lo); the largest that fits
		for lo < hi {
			if mid := (lo + hi + 1) / 2; fits(mid) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		t.Logf("users=%v: in %d ConfigMaps the records keep %d of the %d daily snapshots", users, scaleMaxShards, lo, len(tail[0].Grid))
		runtime.KeepAlive(b)
	}
}
