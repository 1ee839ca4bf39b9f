package estimate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// t0 is the tests' clock at its start; times are passed in, never read.
var t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func req(user, queue string, cpu int64, groups ...string) *ugm.Request {
	return &ugm.Request{User: user, Groups: groups, Queue: queue, App: ugm.AppKey{Namespace: "ns", ID: user + "-app"},
		Resources: resources.FromMap(map[string]int64{"cpu": cpu, "pods": 1})}
}

// sueAt: sue at 4 of her 5 cpu in root.a, asking 2.
func sueAt() *ugm.Refusal {
	return &ugm.Refusal{Who: ugm.WhoUser, Name: "sue", Queue: "root.a", Limit: ugm.LimitResources, Resource: "cpu", Usage: 4000, Request: 2000, Max: 5000}
}

func TestRate(t *testing.T) {
	type rec struct {
		req *ugm.Request
		at  time.Duration
	}
	for _, tc := range []struct {
		name      string
		capacity  int
		lookback  time.Duration
		recs      []rec
		now       time.Duration
		wantFreed int64
		wantN     int
		wantSpan  time.Duration
	}{
		{name: "nothing seen", now: time.Hour},
		{name: "only completions in scope count", now: 10 * time.Minute, recs: []rec{
			{req("sue", "root.a", 1000), 1 * time.Minute},
			{req("bob", "root.a", 3000), 2 * time.Minute},
			{req("sue", "root.b", 3000), 3 * time.Minute},
			{req("sue", "root.a.x", 2000), 4 * time.Minute},
		}, wantFreed: 3000, wantN: 2, wantSpan: 9 * time.Minute},
		{name: "older than the lookback do not count", lookback: 30 * time.Minute, now: 40 * time.Minute, recs: []rec{
			{req("sue", "root.a", 1000), 1 * time.Minute},
			{req("sue", "root.a", 2000), 20 * time.Minute},
		}, wantFreed: 2000, wantN: 1, wantSpan: 20 * time.Minute},
		{name: "a full record forgets the oldest", capacity: 2, now: 10 * time.Minute, recs: []rec{
			{req("sue", "root.a", 1000), 1 * time.Minute},
			{req("sue", "root.a", 2000), 2 * time.Minute},
			{req("sue", "root.a", 4000), 3 * time.Minute},
		}, wantFreed: 6000, wantN: 2, wantSpan: 8 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capacity, lookback := tc.capacity, tc.lookback
			if capacity == 0 {
				capacity = DefaultCapacity
			}
			if lookback == 0 {
				lookback = DefaultLookback
			}
			c := NewCompletions(capacity, lookback)
			for _, r := range tc.recs {
				c.Record(r.req, "", at(r.at))
			}
			freed, n, span := c.Rate(sueAt(), at(tc.now))
			if freed != tc.wantFreed || n != tc.wantN || span != tc.wantSpan {
				t.Errorf("Rate = %d freed by %d over %s, want %d by %d over %s", freed, n, span, tc.wantFreed, tc.wantN, tc.wantSpan)
			}
		})
	}
}

// TestRateGroup: a group's limit is freed only by completions of
// applications tracked against that group, not by every member's (nor,
// for the cumulative group "*", by every user with a group).
func TestRateGroup(t *testing.T) {
	star := &ugm.Refusal{Who: ugm.WhoGroup, Name: "*", Queue: "root", Limit: ugm.LimitResources, Resource: "cpu", Usage: 4000, Request: 2000, Max: 5000}
	c := NewCompletions(DefaultCapacity, DefaultLookback)
	c.Record(req("gus", "root.a", 1000, "guests"), "*", at(time.Minute))
	c.Record(req("dan", "root.a", 3000, "dev", "guests"), "dev", at(2*time.Minute))
	c.Record(req("ann", "root.a", 5000), "", at(3*time.Minute))
	if freed, n, _ := c.Rate(star, at(10*time.Minute)); freed != 1000 || n != 1 {
		t.Errorf(`Rate of group "*"'s limit = %d freed by %d, want 1000 by 1 (gus's only)`, freed, n)
	}
}

// TestRateRecent: only the Recent most recent completions in scope give
// the rate, so a change of pace shows.
func TestRateRecent(t *testing.T) {
	c := NewCompletions(DefaultCapacity, DefaultLookback)
	for i := range Recent + 10 {
		c.Record(req("sue", "root.a", 1000), "", at(time.Duration(i)*time.Minute))
	}
	now := at(time.Duration(Recent+10) * time.Minute)
	freed, n, span := c.Rate(sueAt(), now)
	if n != Recent || freed != int64(Recent)*1000 || span != time.Duration(Recent)*time.Minute {
		t.Errorf("Rate = %d by %d over %s, want %d by %d over %s", freed, n, span, Recent*1000, Recent, time.Duration(Recent)*time.Minute)
	}
}

func TestLimit(t *testing.T) {
	starving := &hold.Pod{Key: "big", Name: "ns/big", Reason: sueAt(), Request: req("sue", "root.a", 2000)}
	for _, tc := range []struct {
		name    string
		reason  error
		req     *ugm.Request
		want    *ugm.Refusal
		wantOwn int64
	}{
		{"a refusal: its request", sueAt(), req("sue", "root.a", 2000), sueAt(), 2000},
		{"behind a starving pod: its limit, the pod's own request", &hold.BehindError{Pod: starving}, req("sue", "root.a", 500), sueAt(), 500},
		{"a gang: its minimum, as refused", &gang.HeldError{Err: sueAt()}, req("sue", "root.a", 500), sueAt(), 2000},
		{"no limit", &ugm.QueueError{Queue: "root.x", Reason: "does not exist"}, nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, own := Limit(tc.reason, tc.req)
			if diff := cmp.Diff(tc.want, got); diff != "" || own != tc.wantOwn {
				t.Errorf("Limit: own %d, want %d; refusal (-want,+got):\n%s", own, tc.wantOwn, diff)
			}
		})
	}
}

func TestOf(t *testing.T) {
	// Completions of sue in root.a: 1 cpu every 2 minutes, 10 of them
	// up to now (minute 20): 10 cpu freed in 20 minutes (from the oldest,
	// at minute 2... 20: 18 minutes, 10 of them).
	sueDone := func() *Completions {
		c := NewCompletions(DefaultCapacity, DefaultLookback)
		for i := 1; i <= 10; i++ {
			c.Record(req("sue", "root.a", 1000), "", at(time.Duration(2*i)*time.Minute))
		}
		return c
	}
	now := 20 * time.Minute
	aheadOf := func(reqs ...*ugm.Request) []*hold.Pod {
		var out []*hold.Pod
		for i, r := range reqs {
			out = append(out, &hold.Pod{Key: string(rune('a' + i)), Request: r})
		}
		return out
	}
	apps := &ugm.Refusal{Who: ugm.WhoUser, Name: "sue", Queue: "root.a", Limit: ugm.LimitApplications, Usage: 3, Request: 1, Max: 3}
	share := &ugm.Refusal{Who: ugm.WhoQueue, Name: "root.a", Queue: "root.a", Limit: ugm.LimitShare, Resource: "cpu", Usage: 4000, Request: 2000, Max: 5000}
	huge := sueAt()
	huge.Request = 6000
	for _, tc := range []struct {
		name   string
		r      *ugm.Refusal
		own    int64
		ahead  []*hold.Pod
		c      *Completions
		want   Estimate
		reason string // a substring of Unknown
	}{
		{name: "its own shortfall over the rate: 1 cpu at 10 cpu per 18 min", r: sueAt(), own: 2000, c: sueDone(),
			want: Estimate{Wait: 108 * time.Second, Resource: "cpu", Own: 1000, Need: 1000, Freed: 10000, Completions: 10, Span: 18 * time.Minute}},
		{name: "the pods ahead on the limit count, others not", r: sueAt(), own: 2000, c: sueDone(),
			ahead: aheadOf(req("sue", "root.a", 2000), req("sue", "root.b", 4000), req("sue", "root.a", 9000), nil),
			want:  Estimate{Wait: 324 * time.Second, Resource: "cpu", Own: 1000, Ahead: 2000, AheadPods: 1, Need: 3000, Freed: 10000, Completions: 10, Span: 18 * time.Minute}},
		{name: "behind a starving pod: its own request on that pod's limit, the slack counted (4+2+0.5-5)", r: sueAt(), own: 500, c: sueDone(),
			ahead: aheadOf(req("sue", "root.a", 2000)),
			want:  Estimate{Wait: 162 * time.Second, Resource: "cpu", Ahead: 2000, AheadPods: 1, Need: 1500, Freed: 10000, Completions: 10, Span: 18 * time.Minute}},
		{name: "too few completions: says so", r: sueAt(), own: 2000, c: NewCompletions(10, time.Hour),
			want: Estimate{Resource: "cpu", Own: 1000, Need: 1000, TooFew: true}, reason: "too few completions seen on this limit to estimate (0 in the last 1h0m0s, 3 needed)"},
		{name: "never: asks more than the limit", r: huge, own: 6000, c: sueDone(),
			want: Estimate{Resource: "cpu", Never: true}, reason: "never, unless the limit is raised"},
		{name: "maxapplications: not measured", r: apps, own: 1, c: sueDone(),
			want: Estimate{Own: 1, Need: 1}, reason: "held by maxapplications"},
		{name: "a share: moves with other queues", r: share, own: 2000, c: sueDone(),
			want: Estimate{Resource: "cpu", Own: 1000, Need: 1000}, reason: "runtime share"},
		{name: "no limit", c: sueDone(), reason: "no limit that completions free holds it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Of(tc.r, tc.own, tc.ahead, tc.c, at(now))
			if tc.reason != "" {
				if !strings.Contains(got.Unknown, tc.reason) {
					t.Errorf("Unknown = %q, want it to say %q", got.Unknown, tc.reason)
				}
				got.Unknown = ""
			} else if got.Unknown != "" {
				t.Errorf("Unknown = %q, want an estimate", got.Unknown)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Of (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestOfBurst: completions all at one instant read as a rate over a
// second at least, not an infinite one.
func TestOfBurst(t *testing.T) {
	c := NewCompletions(DefaultCapacity, DefaultLookback)
	for range 3 {
		c.Record(req("sue", "root.a", 1000), "", at(time.Minute))
	}
	got := Of(sueAt(), 2000, nil, c, at(time.Minute))
	if got.Unknown != "" || got.Wait != time.Second/3 {
		t.Errorf("Of = %+v, want a wait of 1/3 s (1 cpu at 3 cpu per second)", got)
	}
}
