package estimate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAccuracy(t *testing.T) {
	in := func(d time.Duration) Estimate { return Estimate{Wait: d} }
	type step struct {
		op    string // made, unknown, letin, drop
		key   string
		queue string
		at    time.Duration
		wait  time.Duration
	}
	for _, tc := range []struct {
		name      string
		keep      int
		steps     []step
		wantAll   Summary
		wantQueue map[string]Summary
	}{
		{
			name: "errors either way are absolute",
			steps: []step{
				{op: "made", key: "a", queue: "root.a", at: 0, wait: 10 * time.Minute},
				{op: "made", key: "b", queue: "root.a", at: 0, wait: 10 * time.Minute},
				{op: "letin", key: "a", at: 7 * time.Minute},
				{op: "letin", key: "b", at: 14 * time.Minute},
			},
			wantAll: Summary{Compared: 2, P50: 3 * time.Minute, P90: 4 * time.Minute, WaitP50: 7 * time.Minute, WaitP90: 14 * time.Minute,
				SignedP10: -4 * time.Minute, SignedP90: 3 * time.Minute},
			wantQueue: map[string]Summary{"root.a": {Compared: 2, P50: 3 * time.Minute, P90: 4 * time.Minute, WaitP50: 7 * time.Minute, WaitP90: 14 * time.Minute,
				SignedP10: -4 * time.Minute, SignedP90: 3 * time.Minute}},
		},
		{
			name: "only the first estimate of a hold counts",
			steps: []step{
				{op: "made", key: "a", queue: "root.a", at: 0, wait: 10 * time.Minute},
				{op: "made", key: "a", queue: "root.a", at: 5 * time.Minute, wait: time.Minute},
				{op: "letin", key: "a", at: 6 * time.Minute},
			},
			wantAll: Summary{Compared: 1, P50: 4 * time.Minute, P90: 4 * time.Minute, WaitP50: 6 * time.Minute, WaitP90: 6 * time.Minute,
				SignedP10: 4 * time.Minute, SignedP90: 4 * time.Minute},
		},
		{
			name: "no estimate, a withdrawn pod and a pod never estimated are not compared",
			steps: []step{
				{op: "unknown", key: "a", queue: "root.a"},
				{op: "letin", key: "a", at: time.Minute},
				{op: "made", key: "b", queue: "root.a", wait: time.Minute},
				{op: "drop", key: "b"},
				{op: "letin", key: "b", at: time.Minute},
				{op: "letin", key: "c", at: time.Minute},
			},
		},
		{
			name: "per queue, and the last keep only",
			keep: 2,
			steps: []step{
				{op: "made", key: "a", queue: "root.a", wait: time.Minute},
				{op: "made", key: "b", queue: "root.a", wait: time.Minute},
				{op: "made", key: "c", queue: "root.a", wait: time.Minute},
				{op: "made", key: "d", queue: "root.b", wait: time.Minute},
				{op: "letin", key: "a", at: 11 * time.Minute},
				{op: "letin", key: "b", at: 2 * time.Minute},
				{op: "letin", key: "c", at: 3 * time.Minute},
				{op: "letin", key: "d", at: 5 * time.Minute},
			},
			wantAll: Summary{Compared: 2, P50: 2 * time.Minute, P90: 4 * time.Minute, WaitP50: 3 * time.Minute, WaitP90: 5 * time.Minute,
				SignedP10: -4 * time.Minute, SignedP90: -2 * time.Minute},
			wantQueue: map[string]Summary{
				"root.a": {Compared: 2, P50: time.Minute, P90: 2 * time.Minute, WaitP50: 2 * time.Minute, WaitP90: 3 * time.Minute,
					SignedP10: -2 * time.Minute, SignedP90: -time.Minute},
				"root.b": {Compared: 1, P50: 4 * time.Minute, P90: 4 * time.Minute, WaitP50: 5 * time.Minute, WaitP90: 5 * time.Minute,
					SignedP10: -4 * time.Minute, SignedP90: -4 * time.Minute},
				"root.c": {},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAccuracy(tc.keep)
			for _, s := range tc.steps {
				switch s.op {
				case "made":
					a.Made(s.key, s.queue, in(s.wait), at(s.at))
				case "unknown":
					a.Made(s.key, s.queue, Estimate{Unknown: "too few"}, at(s.at))
				case "letin":
					a.LetIn(s.key, at(s.at))
				case "drop":
					a.Drop(s.key)
				}
			}
			if diff := cmp.Diff(tc.wantAll, a.All()); diff != "" {
				t.Errorf("All (-want,+got):\n%s", diff)
			}
			for q, want := range tc.wantQueue {
				if diff := cmp.Diff(want, a.Queue(q)); diff != "" {
					t.Errorf("Queue(%s) (-want,+got):\n%s", q, diff)
				}
			}
		})
	}
}

// TestAccuracyOpenBounded: estimates whose pods never come back (deleted
// while held) do not pile up: past maxOpen the oldest go.
func TestAccuracyOpenBounded(t *testing.T) {
	a := NewAccuracy(0)
	for i := range maxOpen + 10 {
		a.Made(time.Duration(i).String(), "root.a", Estimate{Wait: time.Minute}, t0)
	}
	if len(a.open) != maxOpen {
		t.Errorf("%d estimates open, want %d", len(a.open), maxOpen)
	}
	if a.Estimated(time.Duration(0).String()) || !a.Estimated(time.Duration(maxOpen+9).String()) {
		t.Error("the oldest estimates should go first")
	}
}

func TestQuantile(t *testing.T) {
	s := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5}, {0.9, 9}, {0.91, 10}, {1, 10}, {0, 1}} {
		if got := Quantile(s, tc.q); got != tc.want {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if Quantile(nil, 0.5) != 0 {
		t.Error("Quantile of nothing should be 0")
	}
}
