package accounting

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/resources"
)

// TestWindow: a window's ends resolve to the latest snapshot at or before
// each (on the hour), the end to now when it is not in the past, a start
// before the oldest snapshot to the oldest; the report says which it
// took. One user runs 1 cpu unshared from 10:20 (the books' start).
func TestWindow(t *testing.T) {
	start := time.Date(2026, 11, 2, 10, 20, 0, 0, time.UTC)
	at := func(hhmm string) time.Time {
		tm, err := time.Parse("15:04", hhmm)
		if err != nil {
			t.Fatal(err)
		}
		return time.Date(2026, 11, 2, tm.Hour(), tm.Minute(), 0, 0, time.UTC)
	}
	c := testingclock.NewFakeClock(start)
	b := New(c, Options{})
	b.Charged(req(t, "sue", "", "root.a", "1"))
	c.SetTime(at("13:45"))
	for _, tc := range []struct {
		name, from, to   string
		wantFrom, wantTo string
		live             bool
		cpuSeconds       float64
		err              string
	}{
		{name: "both ends between snapshots", from: "11:30", to: "13:10", wantFrom: "11:00", wantTo: "13:00", cpuSeconds: 7200},
		{name: "ends on snapshots", from: "11:00", to: "12:00", wantFrom: "11:00", wantTo: "12:00", cpuSeconds: 3600},
		{name: "to now", from: "11:00", to: "", wantFrom: "11:00", wantTo: "13:45", live: true, cpuSeconds: 9900},
		{name: "to in the future is now", from: "12:59", to: "23:00", wantFrom: "12:00", wantTo: "13:45", live: true, cpuSeconds: 6300},
		{name: "from the start", from: "", to: "", wantFrom: "10:20", wantTo: "13:45", live: true, cpuSeconds: 12300},
		{name: "from before the oldest snapshot: the oldest", from: "08:00", to: "11:00", wantFrom: "10:20", wantTo: "11:00", cpuSeconds: 2400},
		{name: "between the start and the first snapshot", from: "10:40", to: "10:50", wantFrom: "10:20", wantTo: "10:20", cpuSeconds: 0},
		{name: "to before the oldest snapshot", from: "", to: "09:00", err: "to 2026-11-02T09:00:00Z is before the oldest snapshot kept, 2026-11-02T10:20:00Z"},
		{name: "from after to", from: "12:00", to: "11:00", err: "from 2026-11-02T12:00:00Z is after to 2026-11-02T11:00:00Z"},
		{name: "from in the future", from: "14:00", to: "", err: "from 2026-11-02T14:00:00Z is in the future (now 2026-11-02T13:45:00Z)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var from, to time.Time
			if tc.from != "" {
				from = at(tc.from)
			}
			if tc.to != "" {
				to = at(tc.to)
			}
			r, err := b.Report(from, to, Queue)
			if tc.err != "" {
				var we *WindowError
				if !errors.As(err, &we) || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.From != at(tc.wantFrom) || r.To != at(tc.wantTo) || r.Live != tc.live {
				t.Errorf("window %s..%s live %v, want %s..%s live %v", r.From.Format("15:04"), r.To.Format("15:04"), r.Live, tc.wantFrom, tc.wantTo, tc.live)
			}
			got := 0.0
			for _, row := range r.Rows {
				if row.Key.Queue == "root.a" && row.Resource.Name() == "cpu" {
					got = row.Values[Unshared] / 1000
				}
			}
			if got != tc.cpuSeconds {
				t.Errorf("root.a %v cpu-seconds, want %v", got, tc.cpuSeconds)
			}
			if r.Oldest != start {
				t.Errorf("oldest snapshot %s, want the start", r.Oldest)
			}
		})
	}
}

// TestRetention: after 40 days every snapshot of the last 48 hours is
// kept, and those at 00:00 UTC for 35 days; a window starting between
// daily snapshots resolves to the one before it; the books' start is
// gone; one account keeps no more points than the snapshots kept.
func TestRetention(t *testing.T) {
	start := time.Date(2026, 10, 1, 7, 30, 0, 0, time.UTC)
	c := testingclock.NewFakeClock(start)
	b := New(c, Options{})
	b.Charged(req(t, "sue", "", "root.a", "1"))
	now := start.Add(40 * 24 * time.Hour)
	for c.Now().Before(now) {
		c.Step(time.Hour)
		b.Tick()
	}
	c.SetTime(now)
	b.Tick()
	hourly, daily := 0, 0
	last := now.Truncate(SnapshotEvery) // the last snapshot: retention counts from it
	for _, ts := range b.grid {
		tm := time.Unix(ts, 0)
		switch {
		case last.Sub(tm) <= HourlyFor:
			hourly++
		case tm.Truncate(day).Equal(tm) && last.Sub(tm) <= DailyFor:
			daily++
		default:
			t.Errorf("snapshot %s kept", tm.UTC())
		}
	}
	if hourly != 49 || daily != 33 {
		t.Errorf("%d hourly and %d daily snapshots kept, want 49 (48 hours, both ends) and 33", hourly, daily)
	}
	a := b.queues["root.a"]
	// Points no snapshot reads are dropped in batches of staleMax.
	if len(a.pt) > len(b.grid)+staleMax {
		t.Errorf("%d points for %d snapshots, want at most %d more", len(a.pt), len(b.grid), staleMax)
	}
	// From 20 days ago at 15:00: the day's 00:00.
	from := now.Add(-20 * 24 * time.Hour).Truncate(day).Add(15 * time.Hour)
	r, err := b.Report(from, time.Time{}, Queue)
	if err != nil {
		t.Fatal(err)
	}
	if want := from.Truncate(day); !r.From.Equal(want) {
		t.Errorf("from %s, want %s", r.From, want)
	}
	if want := now.Add(-DailyFor).Truncate(day).Add(day); !r.Oldest.Equal(want) {
		t.Errorf("oldest snapshot %s, want %s", r.Oldest, want)
	}
	for _, row := range r.Rows {
		if row.Key.Queue == "root.a" && row.Resource.Name() == "cpu" {
			if got, want := row.Values[Unshared]/1000, now.Sub(r.From).Seconds(); got != want {
				t.Errorf("%v cpu-seconds, want %v", got, want)
			}
		}
	}
}

// TestReportAgainstReplay: 40 days of random charges, releases and
// guaranteed changes; every window between snapshots kept (and to now) is
// compared with a replay of the events that integrates each interval
// between them from scratch. The points pruned and the accounts forgotten
// must not change any window.
func TestReportAgainstReplay(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	start := time.Date(2026, 10, 1, 7, 30, 0, 0, time.UTC)
	end := start.Add(40 * 24 * time.Hour)
	type event struct {
		at   time.Time
		user string
		cpu  int64 // millicores, negative: a release
		guar int64 // root.a's guaranteed (-1: none), when user == ""
	}
	var events []event
	running := map[string][]int64{}
	users := []string{"u0", "u1", "u2", "u3", "u4"}
	for tm := start; tm.Before(end); tm = tm.Add(time.Duration(rng.Intn(6*3600)) * time.Second) {
		if tm.After(start.Add(5*24*time.Hour)) && len(running["u4"]) > 0 {
			for _, m := range running["u4"] {
				events = append(events, event{at: tm, user: "u4", cpu: -m})
			}
			delete(running, "u4")
			continue
		}
		switch x := rng.Intn(10); {
		case x == 0:
			g := int64(rng.Intn(4)) * 1000
			if rng.Intn(4) == 0 {
				g = -1
			}
			events = append(events, event{at: tm, guar: g})
		case x < 6 || len(running) == 0:
			u := users[rng.Intn(len(users)-1)]
			if rng.Intn(3) == 0 {
				u = "u4" // busy first, gone after day 5
				if tm.After(start.Add(5 * 24 * time.Hour)) {
					continue
				}
			}
			m := int64(1+rng.Intn(3)) * 500
			running[u] = append(running[u], m)
			events = append(events, event{at: tm, user: u, cpu: m})
		default:
			for u, pods := range running {
				events = append(events, event{at: tm, user: u, cpu: -pods[0]})
				if running[u] = pods[1:]; len(running[u]) == 0 {
					delete(running, u)
				}
				break
			}
		}
	}

	c := testingclock.NewFakeClock(start)
	b := New(c, Options{Users: true})
	for _, e := range events {
		c.SetTime(e.at)
		switch {
		case e.user == "" && e.guar < 0:
			b.SetGuaranteed(nil)
		case e.user == "":
			b.SetGuaranteed(map[string]resources.Vector{"root.a": resources.FromMap(map[string]int64{"cpu": e.guar})})
		default:
			r := req(t, e.user, "g", "root.a", "1")
			r.Resources = resources.FromMap(map[string]int64{"cpu": abs(e.cpu)})
			if e.cpu > 0 {
				b.Charged(r)
			} else {
				b.Released(r)
			}
		}
	}
	c.SetTime(end)
	b.Tick()

	// replay returns every account's cpu values at tm, integrated
	// interval by interval.
	replay := func(tm time.Time) map[string]Values {
		out := map[string]Values{}
		usage := map[string]int64{}
		var total int64
		guar, elastic := int64(0), false
		last := start
		add := func(k string, p Part, x float64) {
			v := out[k]
			v[p] += x
			out[k] = v
		}
		for i := 0; ; i++ {
			next := tm
			if i < len(events) && events[i].at.Before(tm) {
				next = events[i].at
			}
			dt := next.Sub(last).Seconds()
			u, g := float64(total), float64(guar)
			if !elastic {
				add("root.a", Unshared, u*dt)
			} else {
				bor := math.Max(0, u-g)
				add("root.a", Guaranteed, (u-bor)*dt)
				add("root.a", Borrowed, bor*dt)
				add("root.a", Idle, math.Max(0, g-u)*dt)
			}
			add("root", Unshared, u*dt)
			for user, x := range usage {
				for _, k := range []string{"user " + user, "group g"} {
					switch {
					case !elastic:
						add(k, Unshared, float64(x)*dt)
					default:
						frac := math.Max(0, u-g) / u
						add(k, Borrowed, float64(x)*frac*dt)
						add(k, Guaranteed, float64(x)*(1-frac)*dt)
					}
				}
			}
			last = next
			if i >= len(events) || !events[i].at.Before(tm) {
				return out
			}
			e := events[i]
			if e.user == "" {
				guar, elastic = e.guar, e.guar >= 0
				continue
			}
			usage[e.user] += e.cpu
			total += e.cpu
			if usage[e.user] == 0 {
				delete(usage, e.user)
			}
		}
	}

	report := func(from, to time.Time) map[string]Values {
		out := map[string]Values{}
		for _, by := range []Kind{Queue, Group, User} {
			r, err := b.Report(from, to, by)
			if err != nil {
				t.Fatal(err)
			}
			if !r.From.Equal(from) || !to.IsZero() && !r.To.Equal(to) {
				t.Fatalf("window %s..%s resolved to %s..%s", from, to, r.From, r.To)
			}
			for _, row := range r.Rows {
				if row.Resource.Name() != "cpu" {
					continue
				}
				k := row.Key.Queue
				if row.Key.Kind != Queue {
					k = row.Key.Kind.String() + " " + row.Key.Name
				}
				out[k] = row.Values
			}
		}
		return out
	}
	grid := append([]int64(nil), b.grid...)
	windows := 0
	for i := 0; i < len(grid); i += 1 + rng.Intn(4) {
		from := time.Unix(grid[i], 0).UTC()
		for _, to := range []time.Time{time.Unix(grid[i+rng.Intn(len(grid)-i)], 0).UTC(), {}} {
			toAt := to
			if to.IsZero() {
				toAt = end
			}
			got := report(from, to)
			a, z := replay(from), replay(toAt)
			keys := map[string]bool{}
			for k := range got {
				keys[k] = true
			}
			for k := range z {
				keys[k] = true
			}
			for k := range keys {
				var want Values
				for p := range want {
					want[p] = (z[k][p] - a[k][p]) / 1000
				}
				g := got[k]
				for p := range g {
					g[p] /= 1000
				}
				for p := range want {
					if math.Abs(g[p]-want[p]) > 1e-6*math.Max(1, math.Abs(want[p])) {
						t.Errorf("%s..%s %s: %v cpu-seconds, replay %v", from.Format(time.RFC3339), toAt.Format(time.RFC3339), k, g, want)
						break
					}
				}
			}
			windows++
		}
	}
	if windows < 20 {
		t.Fatalf("only %d windows", windows)
	}
	// u4 left on day 5: forgotten, its windows all 0.
	if _, ok := b.members[Key{Kind: User, Queue: "root.a", Name: "u4"}]; ok {
		t.Error("u4, idle for 35 days, is still in the books")
	}
	var names []string
	for k := range b.members {
		names = append(names, fmt.Sprint(k))
	}
	sort.Strings(names)
	t.Logf("%d windows checked over %d snapshots kept; accounts %v", windows, len(grid), names)
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
