// Package fairshare keeps each user's and each group's usage of the queues
// over time, decayed with the half-life their queue asks for, and the key
// that orders the pods held in a fair queue among users or groups: the
// user (or group) whose usage counts least goes first (docs/fairness.md).
//
// A History learns of usage only through charges and releases (it is
// the ledger's Observer): nothing on the check path reads or writes it.
// Decay is lazy: an entry is brought up to date when its own user or
// group is charged or released, and its key is computed as of that
// moment, so a key changes only on its own events and on a config change
// (Changes reports them), never with the clock alone.
//
// Per queue Q that sets userquota.fairness (queueconfig.FairnessFor), a
// user's (or group's) key is
//
//	key = max over the resources r of Q's base ( (U_r + H_r) / base_r ) / weight
//
// where U is its usage in Q's subtree now, H its decayed usage: the
// exponential moving average of U with Q's half-life h (a steady usage u
// makes H tend to u; when it stops, H halves every h), and H = 0 without
// a half-life. Between two events U is constant, so H is advanced
// exactly: H <- U + (H - U) * 2^(-dt/h).
//
// A partition with no fair queue needs no history: Sync (the ledger's,
// with each config change) stops the recording then, which saves each
// charge and release its lookups (about a third of Reserve's cost with
// 10,000 users, BenchmarkPodPath), and starts it again from the live
// charges when a config orders users. The usage is then as if it had
// always been recorded; the decayed usage starts at 0, as a restart's
// would without records (a config without fairness forgets it at each
// user's next event anyway).
//
// It has no lock order of its own beyond its one mutex, taken last: its
// callers (the ledger's lock, the hold book's owner's lock) may hold
// theirs; it calls out to nothing but the config func and, in Changes,
// the caller's func.
package fairshare

import (
	"iter"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// Key names one usage history: a user's (Group false) or a group's in
// one queue (a full path).
type Key struct {
	Queue string
	Group bool
	Name  string
}

// History is the usage history of every user and group, per queue on
// their pods' paths below root. The zero value is not usable; call New.
// Its methods are safe for concurrent use.
type History struct {
	clock clock.PassiveClock
	// config returns the partition in force (nil: none); it must not take
	// a lock a caller of History may hold (ugm.Manager.InForce does not).
	config func() *queueconfig.Partition

	// dormant is set while nothing is recorded (Sync): written under mu
	// by Sync, which its caller orders with the charges (the ledger's
	// lock); read by Charged and Released without mu.
	dormant atomic.Bool

	mu sync.Mutex
	// part is the partition the caches below were built for; gen counts
	// its changes (keys computed under an older gen are stale).
	part   *queueconfig.Partition
	gen    uint64
	reset  bool
	queues map[string]*queueconfig.Fairness // what a queue sets itself, nil: none
	leaves map[string]leafFairness          // what is in force for a leaf
	// chains are, by leaf, the queues whose histories a charge there
	// steps (chain).
	chains map[string][]level
	// entries are the histories; changed the keys of fair queues whose
	// key changed since the last Changes.
	entries entries
	changed map[Key]struct{}
}

type leafFairness struct {
	queue string
	f     *queueconfig.Fairness
}

// level is a queue on a leaf's path and what it sets itself.
type level struct {
	path string
	f    *queueconfig.Fairness
}

// entry is one history, as of at (the last event).
type entry struct {
	// usage is what its pods charged and have not released.
	usage resources.Vector
	// span is the usage that ran from at to the next event when it is
	// not usage: a restored record's (what ran when it was written, which
	// the running pods charged since start stand for again); nil else.
	span resources.Vector
	// hist is the decayed usage H by resource ID, as of at; nil without a
	// half-life.
	hist []float64
	at   time.Time
	// key is the ordering key computed under keyGen (0: to compute).
	key    float64
	keyGen uint64
}

// New returns an empty history on clock c, reading the config in force
// from config. It records from the start, until a Sync finds no fair
// queue.
func New(c clock.PassiveClock, config func() *queueconfig.Partition) *History {
	return &History{clock: c, config: config, queues: map[string]*queueconfig.Fairness{},
		leaves: map[string]leafFairness{}, chains: map[string][]level{}, entries: newEntries(), changed: map[Key]struct{}{}}
}

// Charged records a charge of req (ledger.Observer).
func (h *History) Charged(req *ugm.Request) { h.apply(req, 1) }

// Released records the release of req, exactly what was charged
// (ledger.Observer).
func (h *History) Released(req *ugm.Request) { h.apply(req, -1) }

func (h *History) apply(req *ugm.Request, sign int) {
	if h.dormant.Load() {
		return
	}
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refresh()
	h.record(req, now, sign)
}

// record steps req's user's and group's histories by req. Callers hold
// h.mu.
func (h *History) record(req *ugm.Request, now time.Time, sign int) {
	chain := h.chain(req.Queue)
	h.step(false, req.User, chain, now, req.Resources, sign)
	if group := primaryGroup(req); group != "" {
		h.step(true, group, chain, now, req.Resources, sign)
	}
}

// Sync stops the recording when the config in force has no fair queue,
// forgetting every history, and starts it again when one has, charging
// each of live: the charges in force, which must not change until Sync
// returns (ledger.Ledger.Enforce calls it under its lock with each
// config change). Either way the hold book orders every pod again
// (Changes reports a reset).
func (h *History) Sync(live iter.Seq[*ugm.Request]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refresh()
	fair := anyFair(h.part)
	if fair != h.dormant.Load() {
		return
	}
	if !fair {
		h.entries = newEntries()
		clear(h.changed)
		h.dormant.Store(true)
	} else {
		now := h.clock.Now()
		for req := range live {
			h.record(req, now, 1)
		}
		h.dormant.Store(false)
	}
	h.reset = true
}

// Recording reports whether h records charges (Sync).
func (h *History) Recording() bool { return !h.dormant.Load() }

// chain is the queues from leaf up to below root, with what each sets
// (queueFairness), worked out once per leaf and config: a charge looked
// each up by its path, and the paths, as the config's own strings
// (Partition.Canonical), make the histories' keys compare by pointer.
func (h *History) chain(leaf string) []level {
	c, ok := h.chains[leaf]
	if !ok {
		for q := leaf; q != "" && q != rootQueue; q = queueconfig.ParentPath(q) {
			c = append(c, level{path: h.part.Canonical(q), f: h.queueFairness(q)})
		}
		h.chains[leaf] = c
	}
	return c
}

// rootQueue has no history: it cannot measure shares (no max).
const rootQueue = "root"

// primaryGroup is the group a pod counts for in a queue with group
// fairness: its user's first group (the primaryGroup placement rule's);
// "" without groups.
func primaryGroup(req *ugm.Request) string {
	if len(req.Groups) == 0 {
		return ""
	}
	return req.Groups[0]
}

// step brings the entries of the user (or group) name in the queues of
// chain up to now and charges (sign 1) or releases (-1) res.
func (h *History) step(group bool, name string, chain []level, now time.Time, res resources.Vector, sign int) {
	var n *named
	if sign > 0 {
		n = h.entries.ofNew(group, name, len(chain))
	} else if n = h.entries.of(group, name); n == nil {
		return
	}
	for _, l := range chain {
		i := n.find(l.path)
		if i < 0 {
			if sign < 0 {
				continue
			}
			i = h.entries.add(n, l.path, now)
		}
		e := &n.queues[i].e
		e.advance(halfLife(l.f), now)
		if sign > 0 {
			e.usage.AddUnchecked(res)
		} else {
			e.usage.SubClamped(res)
		}
		e.keyGen = 0
		if l.f.On() {
			h.changed[Key{Queue: l.path, Group: group, Name: name}] = struct{}{}
		}
		if e.usage.IsZero() && e.hist == nil {
			h.entries.removeAt(n, i)
		}
	}
	h.entries.forget(group, name, n)
}

func halfLife(f *queueconfig.Fairness) time.Duration {
	if !f.On() {
		return 0
	}
	return f.HalfLife
}

// advance brings H up to now: the usage that ran since at is constant
// between events, so the moving average has its exact closed form.
func (e *entry) advance(hl time.Duration, now time.Time) {
	u := e.usage
	if e.span != nil {
		u, e.span = e.span, nil
	}
	if hl <= 0 {
		e.hist = nil
		e.at = now
		return
	}
	dt := now.Sub(e.at)
	if dt < 0 {
		dt = 0
	}
	d := math.Exp2(-float64(dt) / float64(hl))
	n := max(len(u), len(e.hist))
	if e.hist == nil {
		// Room for cpu, memory, pods and one more without growing later.
		e.hist = make([]float64, 0, max(n, 4))
	}
	for len(e.hist) < n {
		e.hist = append(e.hist, 0)
	}
	for i := range n {
		x := float64(u.Get(resources.ID(i)))
		e.hist[i] = x + (e.hist[i]-x)*d
	}
	e.at = now
}

// keyOf is k's ordering key under f (0 without history).
func (h *History) keyOf(k Key, f *queueconfig.Fairness) float64 {
	e := h.entries.get(k)
	if e == nil {
		return 0
	}
	if e.keyGen != h.gen {
		e.key = e.share(f) / f.Weight(k.Name)
		e.keyGen = h.gen
	}
	return e.key
}

// share is the dominant share of usage plus decayed usage in f's base.
func (e *entry) share(f *queueconfig.Fairness) float64 {
	share := 0.0
	for i, b := range f.Base {
		if b <= 0 {
			continue
		}
		v := float64(e.usage.Get(resources.ID(i)))
		if f.HalfLife > 0 && i < len(e.hist) {
			v += e.hist[i]
		}
		share = math.Max(share, v/float64(b))
	}
	return share
}

// refresh notices a new config: fairness is resolved anew and every key
// is computed again (Changes reports a reset).
func (h *History) refresh() {
	p := h.config()
	if p == h.part && h.gen != 0 {
		return
	}
	h.part = p
	h.gen++
	h.reset = true
	clear(h.queues)
	clear(h.leaves)
	clear(h.chains)
}

// anyFair reports whether a queue or child template of p orders users or
// groups.
func anyFair(p *queueconfig.Partition) bool {
	found := false
	if p != nil {
		p.Walk(func(q *queueconfig.Queue) {
			found = found || q.Fairness.On() || q.ChildTemplate != nil && q.ChildTemplate.Fairness.On()
		})
	}
	return found
}

// queueFairness is what queue q sets itself (or, a dynamic leaf, its
// template), nil when it orders nobody.
func (h *History) queueFairness(q string) *queueconfig.Fairness {
	f, ok := h.queues[q]
	if !ok {
		if at, in := queueconfig.FairnessFor(h.part, q); at == q {
			f = in
		}
		h.queues[q] = f
	}
	return f
}

// leafFairness is the fairness in force for a leaf, and the queue that
// sets it.
func (h *History) leafFairness(leaf string) leafFairness {
	lf, ok := h.leaves[leaf]
	if !ok {
		lf.queue, lf.f = queueconfig.FairnessFor(h.part, leaf)
		h.leaves[leaf] = lf
	}
	return lf
}

// Lane returns the history whose key orders a held pod of req among the
// others of its queue, and that key; ok is false when req's queue orders
// no users or groups. In a queue with group fairness a pod counts for its
// user's first group; a user without groups counts as a group of their
// own (their user history, weighted by name as a group would be).
func (h *History) Lane(req *ugm.Request) (k Key, key float64, ok bool) {
	if req == nil {
		return Key{}, 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refresh()
	lf := h.leafFairness(req.Queue)
	if !lf.f.On() {
		return Key{}, 0, false
	}
	k = Key{Queue: lf.queue, Name: req.User}
	if g := primaryGroup(req); lf.f.Mode == queueconfig.FairnessGroup && g != "" {
		k = Key{Queue: lf.queue, Group: true, Name: g}
	}
	return k, h.keyOf(k, lf.f), true
}

// Changes calls fn with each history of a fair queue whose key changed
// since the last call, and its key now, and reports whether the config
// changed meanwhile (then any lane may have changed: the caller orders
// every pod again with Lane). One caller drains it: the hold book.
func (h *History) Changes(fn func(k Key, key float64)) (reset bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refresh()
	reset, h.reset = h.reset, false
	for k := range h.changed {
		if f := h.queueFairness(k.Queue); f.On() {
			fn(k, h.keyOf(k, f))
		}
	}
	clear(h.changed)
	return reset
}

// Key returns k's key now (as of its last event); 0 when k has no
// history or its queue orders nobody.
func (h *History) Key(k Key) float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refresh()
	f := h.queueFairness(k.Queue)
	if !f.On() {
		return 0
	}
	return h.keyOf(k, f)
}

// Usage returns k's usage and decayed usage, both as of its last event,
// by resource name (nil: no history). For the REST API and tests.
func (h *History) Usage(k Key) (usage map[string]int64, decayed map[string]float64, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries.get(k)
	if e == nil {
		return nil, nil, time.Time{}
	}
	return e.usage.Map(), histMap(e.hist), e.at
}

// Len is the number of histories kept.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.entries.n
}

// forgetBelow is the decayed share below which a history with no usage
// is forgotten: after about 20 half-lives for a user who used the whole
// queue.
const forgetBelow = 1e-6

// Records returns what is to be kept of the history across a restart:
// each entry with decayed usage, as of its last event, sorted by key. It
// forgets the entries that have no usage and whose decayed usage is
// below forgetBelow of their queue's base by now.
func (h *History) Records() []Record {
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refresh()
	var out []Record
	h.entries.each(func(k Key, e *entry) bool {
		if e.hist == nil {
			return false
		}
		f := h.queueFairness(k.Queue)
		if e.usage.IsZero() && e.span == nil && forgettable(e, f, now) {
			return true
		}
		u := e.usage
		if e.span != nil {
			u = e.span
		}
		out = append(out, Record{Queue: k.Queue, Group: k.Group, Name: k.Name, At: e.at.UnixMilli(),
			Usage: nonZero(u.Map()), Decayed: histMap(e.hist)})
		return false
	})
	sort.Slice(out, func(i, j int) bool { return out[i].key().less(out[j].key()) })
	return out
}

// forgettable reports whether e, with no usage, decayed below
// forgetBelow of f's base by now (without a half-life in force, at once).
func forgettable(e *entry, f *queueconfig.Fairness, now time.Time) bool {
	hl := halfLife(f)
	if hl <= 0 {
		return true
	}
	d := math.Exp2(-float64(now.Sub(e.at)) / float64(hl))
	for i, b := range f.Base {
		if b > 0 && i < len(e.hist) && e.hist[i]*d/float64(b) >= forgetBelow {
			return false
		}
	}
	return true
}

// Restore puts records written by Records (by this or another replica)
// back: each history's decayed usage as of its record's time, and the
// usage that ran then standing for what ran since, up to its next event
// or Settle. The usage charged since start stays as it is (the running
// pods charge it again). Call it at start-up, then Settle once the
// running pods are charged; a record for a key twice: the newest wins.
func (h *History) Restore(recs []Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refresh()
	newest := map[Key]int64{}
	for _, r := range recs {
		k := r.key()
		if t, seen := newest[k]; seen && t >= r.At {
			continue
		}
		newest[k] = r.At
		e := h.entries.getNew(k)
		e.at = time.UnixMilli(r.At)
		e.span = resources.FromMap(r.Usage)
		if e.span == nil {
			e.span = resources.Vector{}
		}
		e.hist = nil
		for name, x := range r.Decayed {
			id := int(resources.Intern(name))
			for len(e.hist) <= id {
				e.hist = append(e.hist, 0)
			}
			e.hist[id] = x
		}
		if e.hist == nil {
			e.hist = []float64{}
		}
		e.keyGen = 0
		h.changed[k] = struct{}{}
	}
}

// Settle ends what Restore assumed: the usage of each record stood for
// what ran up to now; from now on the usage charged since start (the
// running pods) runs. Call it when the running pods are charged.
func (h *History) Settle() {
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refresh()
	h.entries.each(func(k Key, e *entry) bool {
		if e.span == nil {
			return false
		}
		e.advance(halfLife(h.queueFairness(k.Queue)), now)
		e.keyGen = 0
		h.changed[k] = struct{}{}
		return e.usage.IsZero() && e.hist == nil
	})
}

func histMap(hist []float64) map[string]float64 {
	if hist == nil {
		return nil
	}
	out := map[string]float64{}
	for i, x := range hist {
		if x != 0 {
			out[resources.ID(i).Name()] = x
		}
	}
	return out
}

func nonZero(m map[string]int64) map[string]int64 {
	for k, v := range m {
		if v == 0 {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
