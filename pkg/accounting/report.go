package accounting

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/userquota/userquota/pkg/resources"
)

// Values are an account's resource-seconds of one resource, in base-unit
// seconds (cpu: millicore-seconds; memory: byte-seconds), by Part.
type Values [numParts]float64

// Total is the usage of all parts (not Idle).
func (v Values) Total() float64 { return v[Guaranteed] + v[Borrowed] + v[Unshared] }

// Row is one account's resource-seconds of one resource over a window.
type Row struct {
	Key      Key
	Resource resources.ID
	Values   Values
}

// Report is what the books say about a window.
type Report struct {
	By Kind
	// From and To are the window's ends as resolved: the latest snapshot
	// at or before each end asked (From: the oldest kept when it asked
	// for an earlier one), or, for To, the moment of the report when the
	// end asked was not in the past (Live).
	From, To time.Time
	Live     bool
	// Oldest is the oldest snapshot kept: no window starts earlier.
	Oldest time.Time
	// Rows are the accounts of kind By that used something in the window
	// (or, queues, left guaranteed capacity idle), by queue, name and
	// resource name.
	Rows []Row
}

// ErrNoUsers: a report by user from books that keep no user accounts.
var ErrNoUsers = errors.New("the books keep no per-user accounts: the plugin arg perUserAccounting is off")

// WindowError is a window the books cannot report on.
type WindowError struct{ Msg string }

func (e *WindowError) Error() string { return e.Msg }

// Report returns every account of kind by's resource-seconds over the
// window from..to (a zero from: the oldest snapshot kept; a zero to, or
// one not in the past: now).
func (b *Books) Report(from, to time.Time, by Kind) (Report, error) {
	if by == User && !b.users {
		return Report{}, ErrNoUsers
	}
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.due(now)
	out := Report{By: by, Oldest: time.Unix(b.grid[0], 0).UTC()}
	if !from.IsZero() && !to.IsZero() && from.After(to) {
		return out, &WindowError{fmt.Sprintf("from %s is after to %s", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))}
	}
	if from.After(now) {
		return out, &WindowError{fmt.Sprintf("from %s is in the future (now %s)", from.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))}
	}
	toTS := int64(0)
	if to.IsZero() || !to.Before(now) {
		out.Live, out.To = true, now.UTC()
		b.advanceAll(now, false)
	} else {
		i := lastAtOrBefore(b.grid, floorUnix(to))
		if i < 0 {
			return out, &WindowError{fmt.Sprintf("to %s is before the oldest snapshot kept, %s", to.UTC().Format(time.RFC3339), out.Oldest.Format(time.RFC3339))}
		}
		toTS = b.grid[i]
		out.To = time.Unix(toTS, 0).UTC()
	}
	fromTS := b.grid[0]
	if !from.IsZero() {
		if i := lastAtOrBefore(b.grid, floorUnix(from)); i >= 0 {
			fromTS = b.grid[i]
		}
	}
	out.From = time.Unix(fromTS, 0).UTC()

	add := func(a *account) {
		end := a.cum
		if !out.Live {
			end = a.valueAt(toTS)
		}
		start := a.valueAt(fromTS)
		for r := range max(len(end), len(start)) / a.parts {
			var v Values
			zero := true
			for p := range a.parts {
				i := a.slot(r, p)
				v[p] = math.Max(0, at(end, i)-at(start, i))
				zero = zero && v[p] == 0
			}
			if !zero {
				out.Rows = append(out.Rows, Row{Key: a.key, Resource: resources.ID(r), Values: v})
			}
		}
	}
	if by == Queue {
		for _, a := range b.queues {
			add(a)
		}
	} else {
		for k, m := range b.members {
			if k.Kind == by {
				add(m)
			}
		}
	}
	sortRows(out.Rows)
	return out, nil
}

func floorUnix(t time.Time) int64 { return t.Truncate(time.Second).Unix() }

func sortRows(rows []Row) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i].Key, rows[j].Key
		if a.Queue != b.Queue {
			return a.Queue < b.Queue
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return rows[i].Resource.Name() < rows[j].Resource.Name()
	})
}

// Counter is one account's cumulative resource-seconds of one resource,
// as of now: a series of each of the counters on /metrics.
type Counter struct {
	Key      Key
	Resource resources.ID
	Values   Values
	// Shared: the account's queue has a share in force now, so its
	// guaranteed and borrowed series are shown even at 0; else its
	// unshared one is.
	Shared bool
	// Guaranteed: a queue whose guaranteed share names the resource, so
	// its idle series is shown even at 0.
	Guaranteed bool
}

// Counters returns every account's cumulative values, booked up to now,
// for every resource it used (or, a queue, guarantees).
func (b *Books) Counters() []Counter {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.due(now)
	b.advanceAll(now, false)
	out := make([]Counter, 0, len(b.queues)*3+len(b.members)*3)
	add := func(a *account, shared bool, guar resources.Vector) {
		for r := range len(a.cum) / a.parts {
			c := Counter{Key: a.key, Resource: resources.ID(r), Shared: shared, Guaranteed: guar.Get(resources.ID(r)) > 0}
			zero := !c.Guaranteed
			for p := range a.parts {
				c.Values[p] = a.cum[a.slot(r, p)]
				zero = zero && c.Values[p] == 0
			}
			if !zero {
				out = append(out, c)
			}
		}
	}
	for _, a := range b.queues {
		var guar resources.Vector
		if a.elastic {
			guar = a.guar
		}
		add(a, a.elastic, guar)
	}
	for _, m := range b.members {
		add(m, m.leaf.elastic, nil)
	}
	return out
}
