package accounting

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/userquota/userquota/pkg/cmshard"
	"github.com/userquota/userquota/pkg/resources"
)

// Record is one line of what the books keep across restarts
// (docs/accounting.md, "Across restarts"): an account's values and rate
// at the last checkpoint (its tail), or its values at the daily snapshots
// (its days), or, with Kind "grid", the time of the last checkpoint and
// the daily snapshots kept.
type Record struct {
	// Kind is queue, group or user; grid for the snapshot times.
	Kind  string `json:"k"`
	Queue string `json:"q,omitempty"`
	Name  string `json:"n,omitempty"`
	// At is the time of the last checkpoint (Unix seconds): Values are
	// the cumulative values then, Rate what ran then (per second). 0 in
	// a days record.
	At     int64   `json:"t,omitempty"`
	Values Amounts `json:"v,omitempty"`
	Rate   Amounts `json:"r,omitempty"`
	// Days are the values at the daily snapshots kept, where they changed
	// (a days record).
	Days []Day `json:"d,omitempty"`
	// Grid (Kind grid) are the daily snapshots kept (and the time the
	// books began, while it is kept), Unix seconds.
	Grid []int64 `json:"g,omitempty"`
}

// Amounts are values by resource name, each by Part (base-unit-seconds,
// or per second for a rate), trailing zeros left out.
type Amounts map[string][]float64

// Day is an account's values at one daily snapshot, [time, values] in
// JSON.
type Day struct {
	T int64
	V Amounts
}

// MarshalJSON writes [t, values].
func (d Day) MarshalJSON() ([]byte, error) { return json.Marshal([]any{d.T, d.V}) }

// UnmarshalJSON reads [t, values].
func (d *Day) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw) != 2 {
		return fmt.Errorf("a day is [time, values], not %d elements", len(raw))
	}
	if err := json.Unmarshal(raw[0], &d.T); err != nil {
		return err
	}
	return json.Unmarshal(raw[1], &d.V)
}

const kindGrid = "grid"

// Records returns what is to be kept of the books across a restart, in two
// parts. Tail, as of the last checkpoint: the grid record and each
// account's values and rate then; it changes at every checkpoint
// (tailVersion). Days: each account's values at the daily snapshots kept
// (before the checkpoint), where they changed; it changes about once a day
// (daysVersion). keepDays keeps only the newest keepDays daily snapshots
// (-1: all), in both parts, for a store that cannot hold them all. Nil
// before the first checkpoint (or restore).
func (b *Books) Records(keepDays int) (tail, days []Record, tailVersion, daysVersion uint64) {
	c, tailVersion, daysVersion := b.copyRecords(keepDays)
	if c == nil {
		return nil, nil, tailVersion, daysVersion
	}
	tail, days = c.records()
	return tail, days, tailVersion, daysVersion
}

// Versions are the versions Records would return now, without its work:
// a store that has encoded the records of these versions has nothing new
// to write (the shards are written every 30 s, a checkpoint is taken
// every 5 minutes).
func (b *Books) Versions() (tailVersion, daysVersion uint64) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.due(now)
	return b.tailVersion, b.daysVersion
}

// copied is what Records takes of the books under their lock: each
// account's numbers copied into one buffer. The records (maps by resource
// name) are built and sorted from it after the lock is let go: built under
// it, a checkpoint of 60,000 accounts kept every charge (the scheduler's
// Reserve) waiting for tens of milliseconds (docs/throughput.md, open
// work 7).
type copied struct {
	at   int64
	grid []int64
	vals []float64
	accs []copiedAccount
	days []copiedDay
}

// copiedAccount is one account's record: its values and rate at the
// last checkpoint and its days, as [lo, hi) ranges of the copy's vals and
// days.
type copiedAccount struct {
	key            Key
	parts          int
	ck, rate, days [2]int
}

// copiedDay is an account's values at one daily snapshot, a [lo, hi)
// range of the copy's vals.
type copiedDay struct {
	t    int64
	vals [2]int
}

// copyRecords copies what Records returns under the books' lock (nil
// before the first checkpoint or restore).
func (b *Books) copyRecords(keepDays int) (*copied, uint64, uint64) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.due(now)
	if b.lastCk == 0 {
		return nil, b.tailVersion, b.daysVersion
	}
	c := &copied{at: b.lastCk}
	for _, ts := range b.grid {
		if ts < b.lastCk && (ts%int64(day/time.Second) == 0 || ts == b.start) {
			c.grid = append(c.grid, ts)
		}
	}
	if keepDays >= 0 && len(c.grid) > keepDays {
		c.grid = c.grid[len(c.grid)-keepDays:]
	}
	// One allocation for the numbers: grown by append, the copy spent
	// more time in growing and faulting in its buffer than in copying.
	n := 0
	size := func(a *account) {
		if a.ck != nil {
			n += len(a.ck) + len(a.rate) + len(c.grid)*a.stride
		}
	}
	for _, a := range b.queues {
		size(a)
	}
	for _, m := range b.members {
		size(m)
	}
	c.vals = make([]float64, 0, n)
	c.accs = make([]copiedAccount, 0, len(b.queues)+len(b.members))
	add := func(a *account) {
		if a.ck == nil {
			return
		}
		ca := copiedAccount{key: a.key, parts: a.parts}
		ca.ck = c.copy(a.ck)
		ca.rate = c.copy(a.rate)
		ca.days[0] = len(c.days)
		var prev []float64
		for _, ts := range c.grid {
			d := a.valueAt(ts)
			if d == nil || prev != nil && sameValues(prev, d) {
				continue
			}
			prev = d
			c.days = append(c.days, copiedDay{t: ts, vals: c.copy(d)})
		}
		ca.days[1] = len(c.days)
		c.accs = append(c.accs, ca)
	}
	for _, a := range b.queues {
		add(a)
	}
	for _, m := range b.members {
		add(m)
	}
	return c, b.tailVersion, b.daysVersion
}

// copy appends v to the copy's values and returns its range there.
func (c *copied) copy(v []float64) [2]int {
	lo := len(c.vals)
	c.vals = append(c.vals, v...)
	return [2]int{lo, len(c.vals)}
}

// values are the numbers of a range copy returned.
func (c *copied) values(r [2]int) []float64 { return c.vals[r[0]:r[1]] }

// records builds the records from the copy, sorted as Records returns
// them.
func (c *copied) records() (tail, days []Record) {
	tail = make([]Record, 0, len(c.accs)+1)
	tail = append(tail, Record{Kind: kindGrid, At: c.at, Grid: c.grid})
	for _, ca := range c.accs {
		kind := ca.key.Kind.String()
		tail = append(tail, Record{Kind: kind, Queue: ca.key.Queue, Name: ca.key.Name, At: c.at,
			Values: amounts(c.values(ca.ck), ca.parts), Rate: amounts(c.values(ca.rate), ca.parts)})
		if ca.days[0] == ca.days[1] {
			continue
		}
		r := Record{Kind: kind, Queue: ca.key.Queue, Name: ca.key.Name}
		for _, d := range c.days[ca.days[0]:ca.days[1]] {
			r.Days = append(r.Days, Day{T: d.t, V: amounts(c.values(d.vals), ca.parts)})
		}
		days = append(days, r)
	}
	sortRecords(tail[1:])
	sortRecords(days)
	return tail, days
}

func sortRecords(recs []Record) {
	sort.Slice(recs, func(i, j int) bool {
		x, y := &recs[i], &recs[j]
		if x.Kind != y.Kind {
			return x.Kind < y.Kind
		}
		if x.Queue != y.Queue {
			return x.Queue < y.Queue
		}
		return x.Name < y.Name
	})
}

// amounts are the slots of values by resource name, rounded to whole
// base-unit-seconds (a rate: to whole base units per second), zeros left
// out.
func amounts(values []float64, parts int) Amounts {
	var out Amounts
	for r := range len(values) / parts {
		var v []float64
		for p := parts - 1; p >= 0; p-- {
			x := math.Round(values[r*parts+p])
			if x != 0 || v != nil {
				if v == nil {
					v = make([]float64, p+1)
				}
				v[p] = x
			}
		}
		if v != nil {
			if out == nil {
				out = Amounts{}
			}
			out[resources.ID(r).Name()] = v
		}
	}
	return out
}

// slots are amounts as slots of an account with parts parts.
func (am Amounts) slots(parts int) []float64 {
	var out []float64
	for name, v := range am {
		r := int(resources.Intern(name))
		for len(out) < (r+1)*parts {
			out = append(out, 0)
		}
		for p := 0; p < len(v) && p < parts; p++ {
			out[r*parts+p] = v[p]
		}
	}
	return out
}

// Restore puts back records written by Records (by this or another
// replica, both parts), as of their last checkpoint. What ran before these
// books began counts as the records' values then plus their rate from then
// to the books' start; an account not booked since then goes on at that
// rate until its first event or Settle (the running pods charge it
// again). Call it at start-up, then Settle once the running pods are
// charged. A late restore (after a failed one) of records written after
// the books began takes, for each account, what the records hold at
// their checkpoint beyond what these books booked by then.
func (b *Books) Restore(recs []Record) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.due(now)
	var grid Record
	for i := range recs {
		if recs[i].Kind == kindGrid && recs[i].At > grid.At {
			grid = recs[i]
		}
	}
	if grid.At <= 0 {
		return
	}
	last := grid.At
	start := time.Unix(b.start, 0)
	before := last < b.start
	gap := float64(max(0, b.start-last))
	lastCk := b.lastCk
	if before {
		lastCk = max(lastCk, last)
	}
	days := map[Key][]Day{}
	var tails []*Record
	for i := range recs {
		r := &recs[i]
		kind, ok := ParseKind(r.Kind)
		if !ok || r.Queue == "" || kind != Queue && r.Name == "" || kind == User && !b.users {
			continue
		}
		switch {
		case r.At == last:
			tails = append(tails, r)
		case r.At == 0 && len(r.Days) > 0:
			k := Key{Kind: kind, Queue: r.Queue, Name: r.Name}
			days[k] = append(days[k], r.Days...)
		}
	}
	// Members after queues: they need their leaf.
	sort.SliceStable(tails, func(i, j int) bool { return tails[i].Kind == Queue.String() && tails[j].Kind != Queue.String() })
	for _, r := range tails {
		kind, _ := ParseKind(r.Kind)
		k := Key{Kind: kind, Queue: r.Queue, Name: r.Name}
		var a *account
		if kind == Queue {
			if a = b.queues[r.Queue]; a == nil {
				a = b.newQueue(r.Queue, start)
				a.span = []float64{}
			} else if before && a.idleOnly() {
				// Made by a share table put in force before the restore
				// (SetGuaranteed): as a new account, what the records
				// say ran stands for what ran until its first event.
				a.cum, a.at, a.span = a.cum[:0], start, []float64{}
			}
		} else {
			if a = b.members[k]; a == nil {
				leaf := b.queues[r.Queue]
				if leaf == nil {
					leaf = b.newQueue(r.Queue, start)
					leaf.span = []float64{}
				}
				a = b.newMember(k, leaf, start)
				a.span = []float64{}
			}
		}
		values, rate := r.Values.slots(a.parts), r.Rate.slots(a.parts)
		var own []float64
		if !before {
			own = a.valueWhen(last, b.lastCk)
		}
		offset := make([]float64, max(len(values), len(rate), len(own)))
		for j := range offset {
			offset[j] = math.Max(0, at(values, j)+at(rate, j)*gap-at(own, j))
		}
		if !before {
			a.span = nil
		}
		a.restore(r, days[k], last, before, offset, rate, float64(lastCk-b.start))
	}
	kept := b.grid[:0]
	for _, ts := range b.grid {
		if ts != b.start {
			kept = append(kept, ts)
		}
	}
	restored := []int64{}
	for _, ts := range append(append([]int64(nil), grid.Grid...), last) {
		if ts < b.start {
			restored = append(restored, ts)
		}
	}
	sort.Slice(restored, func(i, j int) bool { return restored[i] < restored[j] })
	b.grid = mergeTimes(restored, kept)
	for _, a := range b.queues {
		a.prunePoints(b.grid)
	}
	for _, m := range b.members {
		m.prunePoints(b.grid)
	}
	b.lastCk = lastCk
	b.tailVersion++
	b.daysVersion++
}

// idleOnly reports whether a queue's account has booked nothing but its
// idle guaranteed share: no pod charged to it, no member, no checkpoint
// or point taken since it began.
func (a *account) idleOnly() bool {
	return a.usage.IsZero() && a.members == 0 && a.ck == nil && len(a.pt) == 0 && a.span == nil
}

// valueWhen is the account's values at last, a time after these books
// began: its last checkpoint's, or a snapshot's point, or else its last
// checkpoint's less its rate since last (the rate of the 5 minutes
// between checkpoints).
func (a *account) valueWhen(last, lastCk int64) []float64 {
	if last == lastCk {
		return a.ck
	}
	if i := lastAtOrBefore(a.pt, last); i >= 0 && a.pt[i] == last {
		return a.valueAt(last)
	}
	out := make([]float64, len(a.ck))
	for j, x := range a.ck {
		out[j] = math.Max(0, x-at(a.rate, j)*float64(lastCk-last))
	}
	return out
}

// restore adds offset (what ran before the books began) to the account and
// every point and checkpoint it took since, puts back its points from
// before (its days, and its values at last when that was before), and its
// rate; a new account (span not nil) runs at rate until its first event.
//
// sinceStart is the time from the books' start to their last checkpoint
// (negative: the checkpoint is the records'), for the checkpoint of a
// fresh account.
func (a *account) restore(r *Record, days []Day, last int64, before bool, offset, rate []float64, sinceStart float64) {
	fresh := a.ck == nil
	if len(a.cum) < len(offset) {
		a.cum = append(a.cum, make([]float64, len(offset)-len(a.cum))...)
	}
	for j, x := range offset {
		a.cum[j] += x
	}
	if a.ck != nil {
		for len(a.ck) < len(offset) {
			a.ck = append(a.ck, 0)
		}
		for j, x := range offset {
			a.ck[j] += x
		}
	}
	sort.Slice(days, func(i, j int) bool { return days[i].T < days[j].T })
	stride := max(len(a.cum), a.stride)
	for _, d := range days {
		stride = max(stride, len(d.V.slots(a.parts)))
	}
	if a.stride != stride {
		a.relayout(stride)
	}
	for i := range a.pt {
		for j, x := range offset {
			a.pv[i*stride+j] += x
		}
	}
	var pt []int64
	var pv []float64
	put := func(ts int64, v []float64) {
		if len(a.pt) > 0 && ts >= a.pt[0] {
			return
		}
		pt = append(pt, ts)
		row := make([]float64, stride)
		copy(row, v)
		pv = append(pv, row...)
	}
	for _, d := range days {
		if d.T < last {
			put(d.T, d.V.slots(a.parts))
		}
	}
	if before {
		put(last, r.Values.slots(a.parts))
	}
	a.pt, a.pv = append(pt, a.pt...), append(pv, a.pv...)
	if before && fresh {
		a.rate = append(a.rate[:0], rate...)
		if sinceStart < 0 {
			a.ck = append(a.ck[:0], r.Values.slots(a.parts)...)
		} else {
			a.ck = a.ck[:0]
			for j, x := range offset {
				a.ck = append(a.ck, x+at(rate, j)*sinceStart)
			}
		}
	}
	if a.span != nil {
		a.span = append(a.span, rate...)
	}
}

// mergeTimes is the sorted union of two sorted lists.
func mergeTimes(a, b []int64) []int64 {
	out := make([]int64, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var x int64
		switch {
		case j >= len(b) || i < len(a) && a[i] < b[j]:
			x = a[i]
			i++
		case i >= len(a) || b[j] < a[i]:
			x = b[j]
			j++
		default:
			x = a[i]
			i++
			j++
		}
		if n := len(out); n == 0 || out[n-1] != x {
			out = append(out, x)
		}
	}
	return out
}

// Settle ends what Restore assumed: from now on the running pods, charged
// again, are what runs. Call it when they are charged.
func (b *Books) Settle() {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.due(now)
	b.advanceAll(now, true)
}

// Shards encodes recs as JSON lines in shards of at most max bytes
// (cmshard), an account's line in the shard its key hashes to.
func Shards(recs []Record, target, max int) ([][]byte, error) {
	lines := make([]cmshard.Line, len(recs))
	for i := range recs {
		b, err := json.Marshal(&recs[i])
		if err != nil {
			return nil, err
		}
		lines[i] = cmshard.Line{Hash: cmshard.Hash(recs[i].Kind, recs[i].Queue, recs[i].Name), Data: append(b, '\n')}
	}
	return cmshard.Shards(lines, target, max, func(i int) string {
		return fmt.Sprintf("the books of %s %q in %s", recs[i].Kind, recs[i].Name, recs[i].Queue)
	})
}

// Decode reads the records of one shard. A line that does not decode, or
// holds a value that is not a finite number at least 0, is skipped and
// counted in bad.
func Decode(data []byte) (recs []Record, bad int) {
	ok := cmshard.Lines(data, func(line []byte) {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil || !r.valid() {
			bad++
			return
		}
		recs = append(recs, r)
	})
	if !ok {
		bad++
	}
	return recs, bad
}

func (r *Record) valid() bool {
	if r.Kind == kindGrid {
		return r.At > 0
	}
	if _, ok := ParseKind(r.Kind); !ok || r.Queue == "" || r.At < 0 || r.At == 0 && len(r.Days) == 0 {
		return false
	}
	for _, am := range append([]Amounts{r.Values, r.Rate}, daysAmounts(r.Days)...) {
		for _, v := range am {
			if len(v) > int(numParts) {
				return false
			}
			for _, x := range v {
				if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
					return false
				}
			}
		}
	}
	return true
}

func daysAmounts(days []Day) []Amounts {
	out := make([]Amounts, len(days))
	for i, d := range days {
		out[i] = d.V
	}
	return out
}
