// Package accounting keeps the books of resource-seconds: for every queue
// (each level of a pod's path), for every group and, when asked, every
// user in the leaf queue their pods run in, how many resource-seconds
// their charged pods used, split into the part within the queue's
// guaranteed share and the part borrowed above it, and for every elastic
// queue the guaranteed capacity it left idle (docs/accounting.md).
//
// The books learn of usage only through charges and releases (they are
// the ledger's Observer) and of guaranteed shares when the plugin puts a
// share table in force (SetGuaranteed): nothing on the check path reads
// or writes them. Between two such events every rate is constant, so each
// account is integrated exactly, as of its own last event, with the
// injected clock: no sampling.
//
// For a queue Q with usage U and, when Q is elastic, guaranteed share G
// in force, per resource r over dt seconds:
//
//	guaranteed += min(U_r, G_r) dt
//	borrowed   += max(0, U_r - G_r) dt
//	idle       += max(0, G_r - U_r) dt     (resources G names, G_r > 0)
//	unshared   += U_r dt                   (Q has no share in force)
//
// A group's or user's usage u in leaf Q is split pro rata to Q's split at
// each moment: borrowed += u_r * B_r/U_r dt. Q keeps the integral of
// B_r/U_r over time, so the member's part is exact at its own events:
// u_r * (F_r(now) - F_r(then)).
//
// Every hour on the hour (UTC) the books take a snapshot of every
// account's cumulative values; hourly snapshots are kept for 48 hours,
// those at 00:00 UTC for 35 days, and an account keeps a point only when
// its values changed since its previous one. A report over a window
// takes the difference of the values at its two ends, each resolved to
// the latest snapshot at or before it (the end: now, when it is not in the
// past).
//
// Locking: Books.mu is taken last (under the ledger's lock by the
// observer, under the plugin's share recompute lock by SetGuaranteed);
// the books call nothing outside while holding it.
package accounting

import (
	"math"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// Part is where a resource-second is booked.
type Part uint8

// The parts of an account's usage, and the idle guaranteed capacity of a
// queue.
const (
	// Guaranteed is usage within the queue's guaranteed share.
	Guaranteed Part = iota
	// Borrowed is usage above it: capacity lent by other queues.
	Borrowed
	// Unshared is usage of a queue with no share in force (outside
	// elastic subtrees, or before the first share table).
	Unshared
	// Idle is the guaranteed share a queue did not use (queues only).
	Idle
	numParts
)

// Parts are the parts of usage, in order (not Idle).
var Parts = []Part{Guaranteed, Borrowed, Unshared}

// String is the part's name in labels and reports.
func (p Part) String() string {
	switch p {
	case Guaranteed:
		return "guaranteed"
	case Borrowed:
		return "borrowed"
	case Unshared:
		return "unshared"
	case Idle:
		return "idle"
	}
	return "unknown"
}

// Kind is the kind of an account.
type Kind uint8

// The kinds of accounts.
const (
	Queue Kind = iota
	Group
	User
)

// String is the kind's name in reports ("queue", "group", "user").
func (k Kind) String() string {
	switch k {
	case Queue:
		return "queue"
	case Group:
		return "group"
	case User:
		return "user"
	}
	return "unknown"
}

// ParseKind reads a kind's name.
func ParseKind(s string) (Kind, bool) {
	for _, k := range []Kind{Queue, Group, User} {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

// Key names an account: a queue's (Name ""), or a group's or a user's in
// the leaf queue its pods run in.
type Key struct {
	Kind  Kind
	Queue string
	Name  string
}

// Retention of snapshots.
const (
	// SnapshotEvery is the snapshot period: on the hour, UTC.
	SnapshotEvery = time.Hour
	// CheckpointEvery is how often each account's values and rates are
	// kept for the records (a restart assumes the rates of the last
	// checkpoint ran until it): every 5 minutes, every snapshot one.
	CheckpointEvery = 5 * time.Minute
	// HourlyFor is how long every snapshot is kept.
	HourlyFor = 48 * time.Hour
	// DailyFor is how long the snapshots at 00:00 UTC are kept.
	DailyFor = 35 * 24 * time.Hour
	day      = 24 * time.Hour
)

// Options configure the books.
type Options struct {
	// Users keeps an account per user and leaf queue (the plugin arg
	// perUserAccounting). Without it no per-user work is done.
	Users bool
}

// Books are the books of resource-seconds. The zero value is not usable;
// call New. Its methods are safe for concurrent use.
type Books struct {
	clock clock.PassiveClock
	users bool

	mu sync.Mutex
	// queues by path, members (groups and users) by key.
	queues  map[string]*account
	members map[Key]*account
	// chains are, by leaf path, the accounts of its path (chain), kept
	// until a queue's account is forgotten (prune).
	chains map[string][]*account
	// guaranteed is the guaranteed share in force by elastic queue path
	// (nil: no share table in force).
	guaranteed map[string]resources.Vector
	// grid holds the times of the snapshots kept (Unix seconds,
	// ascending); next is the next checkpoint's (every snapshot is one).
	grid []int64
	next time.Time
	// start is when the books began (Unix seconds); lastCk the time of
	// the last checkpoint taken or restored (0: none).
	start, lastCk int64
	// tailVersion and daysVersion count the changes of what Records
	// returns (checkpoints; daily snapshots, forgotten accounts and
	// restores), so a store can skip encoding an unchanged state.
	tailVersion, daysVersion uint64
}

// New returns empty books on clock c, begun now: the values are 0 at the
// first entry of the grid.
func New(c clock.PassiveClock, o Options) *Books {
	now := c.Now()
	return &Books{
		clock: c, users: o.Users,
		queues: map[string]*account{}, members: map[Key]*account{}, chains: map[string][]*account{},
		grid: []int64{now.Unix()}, start: now.Unix(),
		next: now.Truncate(CheckpointEvery).Add(CheckpointEvery),
	}
}

// Users reports whether the books keep per-user accounts.
func (b *Books) Users() bool { return b.users }

// account is one account's state: what runs now, and its cumulative
// values as of at.
type account struct {
	key Key
	// usage is what its charged pods use now (base units).
	usage resources.Vector
	at    time.Time
	// cum is the cumulative base-unit-seconds by slot (resource ID *
	// parts + part); parts is numParts for a queue, Idle for a member.
	cum   []float64
	parts int
	// span, after a restore, is the rate by slot that ran from at (what
	// ran when the record was written stands for what ran until the
	// account's first event or Settle); nil else.
	span []float64
	// ck and rate are the values and the rate by slot at the last
	// checkpoint (for the records; ck nil: none since the account began).
	ck, rate []float64

	// A queue: whether it has a share in force and its guaranteed share;
	// the integrals over time of its borrowed fraction B_r/U_r by
	// resource (fb) and of its having no share (fn, seconds), which its
	// members' parts are taken from; how many members it has.
	elastic bool
	guar    resources.Vector
	fb      []float64
	fn      float64
	members int

	// A member: its leaf queue's account, and the leaf's fb and fn as of
	// at.
	leaf *account
	fb0  []float64
	fn0  float64

	// Points: the values at snapshot times, kept when they changed
	// (pt Unix seconds; pv the values, stride slots each).
	pt     []int64
	pv     []float64
	stride int
	// stale counts points no snapshot reads any more (dropUnread).
	stale int
}

func (a *account) slot(r, p int) int { return r*a.parts + p }

// grow makes room for n resources.
func (a *account) grow(n int) {
	if need := n * a.parts; len(a.cum) < need {
		a.cum = append(a.cum, make([]float64, need-len(a.cum))...)
	}
}

// Charged books a charge of req (ledger.Observer).
func (b *Books) Charged(req *ugm.Request) { b.apply(req, 1) }

// Released books the release of req, exactly what was charged
// (ledger.Observer).
func (b *Books) Released(req *ugm.Request) { b.apply(req, -1) }

func (b *Books) apply(req *ugm.Request, sign int) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.due(now)
	path := b.chain(req.Queue, now, sign > 0)
	for _, a := range path {
		if a == nil {
			continue
		}
		a.advanceQueue(now, true)
		if sign > 0 {
			a.usage.AddUnchecked(req.Resources)
		} else {
			a.usage.SubClamped(req.Resources)
		}
	}
	if len(path) == 0 || path[0] == nil {
		return
	}
	leaf := path[0]
	if len(req.Groups) > 0 {
		b.book(Key{Kind: Group, Queue: req.Queue, Name: req.Groups[0]}, leaf, now, req.Resources, sign)
	}
	if b.users {
		b.book(Key{Kind: User, Queue: req.Queue, Name: req.User}, leaf, now, req.Resources, sign)
	}
}

// chain is the accounts of the queues from leaf up to root, leaf first;
// create makes those missing (at now), else they are nil. A chain with
// every account is kept for the next charge or release there, which
// then looks up no queue by its path.
func (b *Books) chain(leaf string, now time.Time, create bool) []*account {
	if c, ok := b.chains[leaf]; ok {
		return c
	}
	var c []*account
	complete := true
	for q := leaf; q != ""; q = queueconfig.ParentPath(q) {
		a := b.queues[q]
		if a == nil && create {
			a = b.newQueue(q, now)
		}
		complete = complete && a != nil
		c = append(c, a)
	}
	if complete {
		b.chains[leaf] = c
	}
	return c
}

// book brings a member's account up to now and charges (sign 1) or
// releases (-1) res.
func (b *Books) book(k Key, leaf *account, now time.Time, res resources.Vector, sign int) {
	m := b.members[k]
	if m == nil {
		if sign < 0 {
			return
		}
		m = b.newMember(k, leaf, now)
	}
	m.advanceMember(now, true)
	if sign > 0 {
		m.usage.AddUnchecked(res)
	} else {
		m.usage.SubClamped(res)
	}
}

func (b *Books) newQueue(path string, now time.Time) *account {
	a := &account{key: Key{Kind: Queue, Queue: path}, at: now, parts: int(numParts)}
	a.guar, a.elastic = b.guaranteed[path]
	b.queues[path] = a
	return a
}

func (b *Books) newMember(k Key, leaf *account, now time.Time) *account {
	m := &account{key: k, at: now, parts: int(Idle), leaf: leaf}
	m.fb0 = append(m.fb0[:0], leaf.fb...)
	m.fn0 = leaf.fn
	leaf.members++
	b.members[k] = m
	return m
}

// advanceQueue brings a queue's values up to t; end: at its own event
// (or Settle), which ends a restored span.
func (a *account) advanceQueue(t time.Time, end bool) {
	dt := t.Sub(a.at).Seconds()
	if dt < 0 {
		return
	}
	a.at = t
	if a.span != nil {
		a.addSpan(dt, end)
		return
	}
	if dt == 0 {
		return
	}
	n := max(len(a.usage), len(a.guar))
	a.grow(n)
	if !a.elastic {
		a.fn += dt
		for r, u := range a.usage {
			if u != 0 {
				a.cum[a.slot(r, int(Unshared))] += float64(u) * dt
			}
		}
		return
	}
	for len(a.fb) < n {
		a.fb = append(a.fb, 0)
	}
	for r := range n {
		u, g := float64(a.usage.Get(resources.ID(r))), float64(a.guar.Get(resources.ID(r)))
		borrowed := math.Max(0, u-g)
		if u > 0 {
			a.cum[a.slot(r, int(Guaranteed))] += (u - borrowed) * dt
			a.cum[a.slot(r, int(Borrowed))] += borrowed * dt
			a.fb[r] += borrowed / u * dt
		}
		if g > u {
			a.cum[a.slot(r, int(Idle))] += (g - u) * dt
		}
	}
}

// advanceMember brings a member's values up to t; its leaf must be as of t
// already. end: at its own event (or Settle), which ends a restored span.
func (a *account) advanceMember(t time.Time, end bool) {
	dt := t.Sub(a.at).Seconds()
	if dt < 0 {
		return
	}
	q := a.leaf
	if a.span != nil {
		a.addSpan(dt, end)
	} else if dt > 0 {
		a.grow(len(a.usage))
		dfn := q.fn - a.fn0
		for r, u := range a.usage {
			if u == 0 {
				continue
			}
			x := float64(u)
			dfb := at(q.fb, r) - at(a.fb0, r)
			a.cum[a.slot(r, int(Borrowed))] += x * dfb
			a.cum[a.slot(r, int(Unshared))] += x * dfn
			a.cum[a.slot(r, int(Guaranteed))] += x * math.Max(0, dt-dfb-dfn)
		}
	}
	a.at = t
	a.fb0 = append(a.fb0[:0], q.fb...)
	a.fn0 = q.fn
}

func at(v []float64, i int) float64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// addSpan books dt seconds at the restored rate; end ends the span.
func (a *account) addSpan(dt float64, end bool) {
	if len(a.cum) < len(a.span) {
		a.cum = append(a.cum, make([]float64, len(a.span)-len(a.cum))...)
	}
	for i, x := range a.span {
		a.cum[i] += x * dt
	}
	if end {
		a.span = nil
	}
}

// SetGuaranteed puts in force the guaranteed share of every elastic queue
// (by path; nil or empty: no share in force), as the plugin puts a share
// table in force: each queue whose share changed is booked up to now under
// the old one first. An elastic queue with a guaranteed share and no
// account yet (no pod ran in it since the books began) gets one now, so
// that its idle guaranteed is booked from now.
func (b *Books) SetGuaranteed(g map[string]resources.Vector) {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.due(now)
	for path, a := range b.queues {
		guar, elastic := g[path]
		if elastic == a.elastic && guar.Equal(a.guar) {
			continue
		}
		a.advanceQueue(now, false)
		a.guar, a.elastic = guar, elastic
	}
	b.guaranteed = g
	for path, guar := range g {
		if b.queues[path] == nil && !guar.IsZero() {
			b.newQueue(path, now)
		}
	}
}

// advanceAll brings every account up to t (queues first: members read
// their leaf's integrals); end ends every restored span (Settle).
func (b *Books) advanceAll(t time.Time, end bool) {
	for _, a := range b.queues {
		a.advanceQueue(t, end)
	}
	for _, m := range b.members {
		m.advanceMember(t, end)
	}
}

// Tick takes the checkpoints and snapshots due by now. The plugin calls
// it at each (NextTick); every other method takes them too, before it
// books anything later.
func (b *Books) Tick() {
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.due(now)
}

// NextTick is when the next checkpoint (or snapshot) is due.
func (b *Books) NextTick() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next
}

// due takes every checkpoint and snapshot due by now, each at its exact
// time (nothing later has been booked yet). After a pause longer than the
// daily retention it skips to the last one due.
func (b *Books) due(now time.Time) {
	if now.Before(b.next) {
		return
	}
	if now.Sub(b.next) > DailyFor {
		b.next = now.Truncate(CheckpointEvery)
	}
	for !now.Before(b.next) {
		b.checkpoint(b.next)
		b.next = b.next.Add(CheckpointEvery)
	}
}

// checkpoint keeps every account's values and rate at t and, on the hour,
// takes a snapshot: records every account's values at t and prunes what
// no kept snapshot needs.
func (b *Books) checkpoint(t time.Time) {
	b.advanceAll(t, false)
	ts := t.Unix()
	b.lastCk = ts
	b.tailVersion++
	snapshot := t.Truncate(SnapshotEvery).Equal(t)
	if snapshot {
		if n := len(b.grid); n == 0 || b.grid[n-1] < ts {
			b.grid = append(b.grid, ts)
		}
	}
	for _, a := range b.queues {
		a.keep(ts, snapshot)
	}
	for _, m := range b.members {
		m.keep(ts, snapshot)
	}
	if snapshot {
		b.prune(t)
		if t.Truncate(day).Equal(t) {
			b.daysVersion++
		}
	}
}

// keep takes the account's checkpoint and, at a snapshot, its point.
func (a *account) keep(ts int64, snapshot bool) {
	a.ck = append(a.ck[:0], a.cum...)
	a.takeRate()
	if snapshot {
		a.point(ts)
	}
}

// point keeps the values at ts when they changed since the last point.
func (a *account) point(ts int64) {
	if n := len(a.pt); n > 0 {
		last := a.pv[(n-1)*a.stride : n*a.stride]
		if sameValues(last, a.cum) {
			return
		}
	} else if allZero(a.cum) {
		return
	}
	if a.stride != len(a.cum) {
		a.relayout(len(a.cum))
	}
	a.pt = append(a.pt, ts)
	a.pv = append(a.pv, a.cum...)
}

// relayout widens every point to stride slots (a new resource).
func (a *account) relayout(stride int) {
	pv := make([]float64, len(a.pt)*stride, (len(a.pt)+1)*stride)
	for i := range a.pt {
		copy(pv[i*stride:], a.pv[i*a.stride:(i+1)*a.stride])
	}
	a.pv, a.stride = pv, stride
}

func sameValues(point, cum []float64) bool {
	for i, x := range cum {
		if at(point, i) != x {
			return false
		}
	}
	for i := len(cum); i < len(point); i++ {
		if point[i] != 0 {
			return false
		}
	}
	return true
}

func allZero(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// valueAt returns the values at grid time ts: its last point at or before
// ts (nil: none, all zero).
func (a *account) valueAt(ts int64) []float64 {
	i := lastAtOrBefore(a.pt, ts)
	if i < 0 {
		return nil
	}
	return a.pv[i*a.stride : (i+1)*a.stride]
}

// lastAtOrBefore is the index of the last element of sorted at or before
// ts; -1 when none.
func lastAtOrBefore(sorted []int64, ts int64) int {
	lo, hi := 0, len(sorted)
	for lo < hi {
		mid := (lo + hi) / 2
		if sorted[mid] <= ts {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo - 1
}

// takeRate keeps the rates by slot at this moment: what the records say
// ran after the checkpoint.
func (a *account) takeRate() {
	a.rate = a.rate[:0]
	if a.usage.IsZero() && (a.key.Kind != Queue || !a.elastic || a.guar.IsZero()) {
		return
	}
	if a.key.Kind == Queue {
		a.grow(max(len(a.usage), len(a.guar)))
	} else {
		a.grow(len(a.usage))
	}
	for len(a.rate) < len(a.cum) {
		a.rate = append(a.rate, 0)
	}
	switch {
	case a.key.Kind == Queue && !a.elastic, a.key.Kind != Queue && !a.leaf.elastic:
		for r, u := range a.usage {
			if u != 0 {
				a.rate[a.slot(r, int(Unshared))] = float64(u)
			}
		}
	case a.key.Kind == Queue:
		for r := range len(a.cum) / a.parts {
			u, g := float64(a.usage.Get(resources.ID(r))), float64(a.guar.Get(resources.ID(r)))
			borrowed := math.Max(0, u-g)
			a.rate[a.slot(r, int(Guaranteed))] = u - borrowed
			a.rate[a.slot(r, int(Borrowed))] = borrowed
			a.rate[a.slot(r, int(Idle))] = math.Max(0, g-u)
		}
	default:
		q := a.leaf
		for r, u := range a.usage {
			if u == 0 {
				continue
			}
			x, total := float64(u), float64(q.usage.Get(resources.ID(r)))
			frac := 0.0
			if total > 0 {
				frac = math.Max(0, total-float64(q.guar.Get(resources.ID(r)))) / total
			}
			a.rate[a.slot(r, int(Borrowed))] = x * frac
			a.rate[a.slot(r, int(Guaranteed))] = x * (1 - frac)
		}
	}
}

// prune drops the snapshots no longer kept (hourly ones older than
// HourlyFor that are not at 00:00 UTC, any older than DailyFor), the
// points no kept snapshot reads, and the accounts whose values no window
// can change any more. A point is read at the snapshots from its own time
// to the next point's, so only the point that a dropped snapshot read can
// become unread: one lookup per account and snapshot dropped (usually
// one an hour), not a pass over its points.
func (b *Books) prune(now time.Time) {
	hourly, daily := now.Add(-HourlyFor).Unix(), now.Add(-DailyFor).Unix()
	kept := b.grid[:0]
	var dropped []int64
	for _, ts := range b.grid {
		if ts >= hourly || ts >= daily && ts%int64(day/time.Second) == 0 {
			kept = append(kept, ts)
		} else {
			dropped = append(dropped, ts)
		}
	}
	b.grid = kept
	for k, m := range b.members {
		m.dropUnread(b.grid, dropped)
		if m.forgettable(b.grid) {
			m.leaf.members--
			delete(b.members, k)
			b.daysVersion++
		}
	}
	for path, a := range b.queues {
		a.dropUnread(b.grid, dropped)
		if a.members == 0 && a.forgettable(b.grid) {
			delete(b.queues, path)
			clear(b.chains)
			b.daysVersion++
		}
	}
}

// dropUnread counts the points that read the dropped snapshots and that
// no snapshot of grid reads any more, and drops them once there are
// staleMax: a point in the middle of the points costs a move of those
// after it, so they are dropped together (an account keeps at most
// staleMax points no snapshot reads).
func (a *account) dropUnread(grid, dropped []int64) {
	for _, ts := range dropped {
		if j := lastAtOrBefore(a.pt, ts); j >= 0 && !a.read(j, grid) {
			a.stale++
		}
	}
	if a.stale >= staleMax {
		a.prunePoints(grid)
	}
}

// staleMax is how many points no snapshot reads an account keeps before
// it drops them.
const staleMax = 8

// read reports whether a snapshot of grid reads point i: one at or after
// it and before the next point.
func (a *account) read(i int, grid []int64) bool {
	end := int64(math.MaxInt64)
	if i+1 < len(a.pt) {
		end = a.pt[i+1]
	}
	g := lastAtOrBefore(grid, end-1)
	return g >= 0 && grid[g] >= a.pt[i]
}

// prunePoints keeps only the points some snapshot of grid reads.
func (a *account) prunePoints(grid []int64) {
	a.stale = 0
	w := 0
	for i, ts := range a.pt {
		if !a.read(i, grid) {
			continue
		}
		if w != i {
			a.pt[w] = ts
			copy(a.pv[w*a.stride:(w+1)*a.stride], a.pv[i*a.stride:(i+1)*a.stride])
		}
		w++
	}
	a.pt, a.pv = a.pt[:w], a.pv[:w*a.stride]
}

// forgettable reports whether no window over grid nor any later one can
// see the account change: nothing runs, its values are those of its last
// point (or all zero) and that point is at or before the oldest snapshot
// (so its values are the same at every snapshot kept).
func (a *account) forgettable(grid []int64) bool {
	if !a.usage.IsZero() || a.span != nil || a.key.Kind == Queue && a.elastic && !a.guar.IsZero() {
		return false
	}
	n := len(a.pt)
	if n == 0 {
		return allZero(a.cum)
	}
	return len(grid) > 0 && a.pt[n-1] <= grid[0] && sameValues(a.pv[(n-1)*a.stride:], a.cum)
}

// Len is the number of accounts kept (queues, groups, users).
func (b *Books) Len() (queues, members int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queues), len(b.members)
}
