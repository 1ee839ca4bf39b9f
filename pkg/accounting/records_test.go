package accounting

import (
	"bytes"
	"math"
	"math/rand"
	"sort"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/cmshard"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// throughShards is what a restarted replica reads: Records, encoded in
// shards, decoded.
func throughShards(t *testing.T, b *Books) []Record {
	t.Helper()
	tail, days, _, _ := b.Records(-1)
	shards := encode(t, days, tail)
	var back []Record
	for _, s := range shards {
		r, bad := Decode(s)
		if bad != 0 {
			t.Fatalf("%d lines do not decode:\n%s", bad, s)
		}
		back = append(back, r...)
	}
	return back
}

// encode is the shards of each part of the records, in order.
func encode(t *testing.T, parts ...[]Record) [][]byte {
	t.Helper()
	var out [][]byte
	for _, recs := range parts {
		s, err := Shards(recs, cmshard.TargetShardBytes, cmshard.MaxShardBytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s...)
	}
	return out
}

// rows is a report's values by "kind queue name resource".
func rows(t *testing.T, b *Books, from, to time.Time) map[string]Values {
	t.Helper()
	out := map[string]Values{}
	for _, by := range []Kind{Queue, Group, User} {
		if by == User && !b.Users() {
			continue
		}
		r, err := b.Report(from, to, by)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range r.Rows {
			out[by.String()+" "+row.Key.Queue+" "+row.Key.Name+" "+row.Resource.Name()] = row.Values
		}
	}
	return out
}

func sameRows(t *testing.T, what string, got, want map[string]Values, tol float64) {
	t.Helper()
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	for k := range keys {
		for p := range want[k] {
			if math.Abs(got[k][p]-want[k][p]) > tol*math.Max(1, math.Abs(want[k][p])) {
				t.Errorf("%s: %s: %v, want %v", what, k, got[k], want[k])
				break
			}
		}
	}
}

// TestRestore: a replica restarted 20 minutes after a snapshot (15 s
// after a checkpoint) reads the records, the running pods are charged
// again, and from then on its books say what books never restarted say:
// exactly, for windows from the daily snapshots, the last checkpoint
// before the restart and the snapshots after it (nothing changed since
// the checkpoint); the hourly snapshots before the restart are not kept
// across it (a window from one starts at the day's snapshot).
func TestRestore(t *testing.T) {
	start := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)
	c := testingclock.NewFakeClock(start)
	b := New(c, Options{Users: true})
	b.SetGuaranteed(map[string]resources.Vector{"root.a": cpu(t, "2")})
	alice := req(t, "alice", "dev", "root.a", "3")
	bob := req(t, "bob", "ops", "root.b", "1")
	b.Charged(alice)
	c.SetTime(start.Add(26 * time.Hour))
	b.Charged(bob)
	c.SetTime(start.Add(50 * time.Hour))
	b.Released(bob)
	c.SetTime(start.Add(3*24*time.Hour + 20*time.Minute))
	recs := throughShards(t, b)
	tail, days, _, _ := b.Records(-1)
	written := encode(t, days, tail)

	restart := c.Now().Add(15 * time.Second)
	c.SetTime(restart)
	c2 := testingclock.NewFakeClock(restart)
	b2 := New(c2, Options{Users: true})
	b2.Restore(recs)
	b2.SetGuaranteed(map[string]resources.Vector{"root.a": cpu(t, "2")})
	b2.Charged(alice) // found running
	b2.Settle()

	end := restart.Add(2 * time.Hour)
	c.SetTime(end)
	c2.SetTime(end)
	lastBefore := restart.Truncate(time.Hour)
	checkpoint := restart.Truncate(CheckpointEvery)
	for _, from := range []time.Time{start, start.Truncate(day).Add(day), start.Truncate(day).Add(2 * day), lastBefore.Add(time.Hour)} {
		got, want := rows(t, b2, from, time.Time{}), rows(t, b, from, time.Time{})
		sameRows(t, "from "+from.Format(time.RFC3339), got, want, 1e-9)
	}
	// The checkpoint is a snapshot of the restored books (only).
	for _, from := range []time.Time{start, checkpoint} {
		r, err := b2.Report(from, time.Time{}, Queue)
		if err != nil {
			t.Fatal(err)
		}
		if from == checkpoint && !r.From.Equal(checkpoint) {
			t.Errorf("a window from the checkpoint starts at %s", r.From)
		}
		for _, row := range r.Rows {
			if want := end.Sub(r.From).Seconds() * 3000; row.Key.Queue == "root.a" && row.Values.Total() != want {
				t.Errorf("root.a's cpu %v millicore-seconds from %s, want %v", row.Values, r.From, want)
			}
		}
	}
	r, err := b2.Report(start, time.Time{}, Queue)
	if err != nil {
		t.Fatal(err)
	}
	r, err = b2.Report(lastBefore, time.Time{}, Queue)
	if err != nil {
		t.Fatal(err)
	}
	if want := lastBefore.Truncate(day); !r.From.Equal(want) {
		t.Errorf("a window from the last hourly snapshot before the restart starts at %s, want the day's snapshot %s", r.From, want)
	}
	// What the restored books write is what they read, until their next
	// snapshot (an unchanged shard is not written again).
	c2.SetTime(restart)
	b3 := New(testingclock.NewFakeClock(restart), Options{Users: true})
	b3.Restore(recs)
	tail3, days3, _, _ := b3.Records(-1)
	s1, s2 := written, encode(t, days3, tail3)
	if len(s1) != len(s2) || !bytes.Equal(bytes.Join(s1, nil), bytes.Join(s2, nil)) {
		t.Errorf("restored books write other records than they read:\n%s\n%s", bytes.Join(s1, nil), bytes.Join(s2, nil))
	}
	// Without the restore the history is lost: the same window is 2h15s.
	b4 := New(testingclock.NewFakeClock(restart), Options{Users: true})
	if got := rows(t, b4, start, time.Time{}); len(got) != 0 {
		t.Errorf("fresh books: %v", got)
	}
}

// TestLateRestore: a replica whose restore at start failed, and that
// booked the running pods meanwhile, reads records written since by the
// leader (after its start): it keeps what it booked and takes from them
// only what was booked before its start.
func TestLateRestore(t *testing.T) {
	start := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)
	c := testingclock.NewFakeClock(start)
	leader := New(c, Options{})
	alice := req(t, "alice", "dev", "root.a", "2")
	leader.Charged(alice)
	c.SetTime(start.Add(30*time.Hour + 10*time.Minute))
	follower := New(testingclock.NewFakeClock(c.Now()), Options{})
	fc := follower.clock.(*testingclock.FakeClock)
	follower.Charged(alice) // found running; its restore failed
	for _, x := range []*testingclock.FakeClock{c, fc} {
		x.SetTime(start.Add(32*time.Hour + 5*time.Minute))
	}
	recs := throughShards(t, leader) // as of 32h (after the follower began)
	follower.Restore(recs)
	sameRows(t, "late restore", rows(t, follower, start, time.Time{}), rows(t, leader, start, time.Time{}), 1e-9)
}

// TestRestoreError: the error a restart brings, measured. 52 users run
// pods of 1 to 4 cpu (about one a minute, 20 minutes each on average) in
// root.a (guaranteed 10 cpu) for three days; the leader is lost at a
// random moment of day 3 and a new one starts at the next event (within 2
// minutes), reads the records of the last checkpoint and charges the
// running pods again. At the end (an hour later) each account's total
// from the start is compared with books never restarted. The records
// stand for what ran from the checkpoint to the restart at the rate of
// the checkpoint, so an account's total is off by at most (restart -
// checkpoint) x the largest change of its usage in between; parts
// (guaranteed, borrowed) move between each other with the queue's split.
func TestRestoreError(t *testing.T) {
	worst, worstRel := 0.0, 0.0
	for seed := int64(1); seed <= 5; seed++ {
		rng := rand.New(rand.NewSource(seed))
		start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		c := testingclock.NewFakeClock(start)
		b := New(c, Options{Users: true})
		guar := map[string]resources.Vector{"root.a": cpu(t, "10")}
		b.SetGuaranteed(guar)
		type pod struct {
			r   *ugm.Request
			end time.Time
		}
		var running []pod
		restartAt := start.Add(2*24*time.Hour + time.Duration(rng.Int63n(int64(24*time.Hour))))
		end := restartAt.Add(time.Hour)
		var b2 *Books
		var c2 *testingclock.FakeClock
		// Each user's usage after the events of each moment, up to the
		// restart.
		type state struct {
			at    time.Time
			usage map[string]float64
		}
		var history []state
		usage := map[string]float64{}
		var snap time.Time
		for tm := start; tm.Before(end); tm = tm.Add(time.Duration(rng.Intn(120)) * time.Second) {
			c.SetTime(tm)
			if b2 != nil {
				c2.SetTime(tm)
			}
			if b2 == nil && !tm.Before(restartAt) {
				// The new leader starts now, from the records of the
				// last checkpoint.
				recs := throughShards(t, b)
				c2 = testingclock.NewFakeClock(tm)
				b2 = New(c2, Options{Users: true})
				b2.Restore(recs)
				b2.SetGuaranteed(guar)
				for _, p := range running {
					b2.Charged(p.r)
				}
				b2.Settle()
				restartAt, snap = tm, tm.Truncate(CheckpointEvery)
			}
			// Ends first, then perhaps a new pod.
			kept := running[:0]
			for _, p := range running {
				if !p.end.After(tm) {
					b.Released(p.r)
					if b2 != nil {
						b2.Released(p.r)
					}
					usage[p.r.User] -= float64(p.r.Resources.Get(resources.ID(0)))
				} else {
					kept = append(kept, p)
				}
			}
			running = kept
			u := "u" + string(rune('a'+rng.Intn(26))) + string(rune('a'+rng.Intn(2)))
			r := req(t, u, "", "root.a", "1")
			r.Resources = resources.FromMap(map[string]int64{"cpu": int64(1+rng.Intn(4)) * 1000})
			b.Charged(r)
			if b2 != nil {
				b2.Charged(r)
			}
			usage[u] += float64(r.Resources.Get(resources.ID(0)))
			running = append(running, pod{r: r, end: tm.Add(time.Duration(rng.ExpFloat64() * float64(20*time.Minute)))})
			if b2 == nil {
				cp := map[string]float64{}
				for k, x := range usage {
					cp[k] = x
				}
				history = append(history, state{at: tm, usage: cp})
			}
		}
		// The usage at the checkpoint (after the last events before it),
		// and the largest change from it until the restart.
		atSnap, change := map[string]float64{}, map[string]float64{}
		for _, s := range history {
			if s.at.Before(snap) {
				atSnap = s.usage
				continue
			}
			for user, x := range s.usage {
				change[user] = math.Max(change[user], math.Abs(x-atSnap[user]))
			}
		}
		c.SetTime(end)
		c2.SetTime(end)
		got, want := rows(t, b2, start, time.Time{}), rows(t, b, start, time.Time{})
		gap := restartAt.Sub(snap).Seconds()
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !bytes.HasPrefix([]byte(k), []byte("user ")) {
				continue
			}
			user := k[len("user root.a ") : len(k)-len(" cpu")]
			d := math.Abs(got[k].Total() - want[k].Total())
			bound := change[user]*gap + 1 // + rounding of the records
			if d > bound {
				t.Errorf("seed %d %s: off by %.0f millicore-seconds, bound %.0f (got %v want %v; at snap %v)", seed, k, d, bound, got[k], want[k], atSnap[user])
			}
			worst = math.Max(worst, d)
			worstRel = math.Max(worstRel, d/want[k].Total())
		}
		q := "queue root.a  cpu"
		t.Logf("seed %d: restart %s after the checkpoint; root.a %.0f cpu-seconds, off by %.1f (%.2e)", seed,
			time.Duration(gap*float64(time.Second)), want[q].Total()/1000, math.Abs(got[q].Total()-want[q].Total())/1000,
			math.Abs(got[q].Total()-want[q].Total())/want[q].Total())
	}
	t.Logf("largest error of a user's total: %.1f cpu-seconds, %.2e of it", worst/1000, worstRel)
}

// TestRestoreAfterShares: the plugin puts its first share table in force
// (which makes an account for each elastic queue with a guaranteed share)
// before it restores the books; the restore still lets what the records
// say ran stand for what ran until the running pods are charged again, as
// when it comes first (TestRestore), exactly.
func TestRestoreAfterShares(t *testing.T) {
	start := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)
	c := testingclock.NewFakeClock(start)
	guar := map[string]resources.Vector{"root.a": cpu(t, "2"), "root.c": cpu(t, "1")}
	b := New(c, Options{Users: true})
	b.SetGuaranteed(guar)
	alice := req(t, "alice", "dev", "root.a", "3")
	b.Charged(alice)
	c.SetTime(start.Add(26*time.Hour + 20*time.Minute))
	recs := throughShards(t, b)

	restart := c.Now().Add(15 * time.Second)
	c2 := testingclock.NewFakeClock(restart)
	b2 := New(c2, Options{Users: true})
	b2.SetGuaranteed(guar)
	c2.Step(10 * time.Second)
	b2.Restore(recs)
	c2.Step(10 * time.Second)
	b2.Charged(alice) // found running
	b2.Settle()

	end := restart.Add(2 * time.Hour)
	c.SetTime(end)
	c2.SetTime(end)
	for _, from := range []time.Time{start, start.Truncate(day).Add(day), restart.Truncate(time.Hour).Add(time.Hour)} {
		sameRows(t, "from "+from.Format(time.RFC3339), rows(t, b2, from, time.Time{}), rows(t, b, from, time.Time{}), 1e-9)
	}
}
