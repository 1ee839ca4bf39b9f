package hold

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/google/btree"

	"github.com/userquota/userquota/pkg/errs"
	"github.com/userquota/userquota/pkg/fairshare"
	"github.com/userquota/userquota/pkg/ugm"
)

// Window is how many held pods of each limit a release looks at
// (Released): the work of a release does not grow with the pods held on
// it. It is large enough that a small pod behind many larger ones held by
// the same limit is reached (a Sieve passes over those that cannot fit
// without deciding on them). The scheduler plugin and the simulator use
// it alike.
const Window = 1024

// DefaultStarvation is the default starvation wait (the plugin's
// starvationWait, the simulator's --starvation).
const DefaultStarvation = 2 * time.Minute

// Pod is one held pod.
type Pod struct {
	// Key identifies the pod (its UID in the scheduler); Name is
	// namespace/name, for messages.
	Key, Name string
	// Request is what the pod asks for, as placed; nil when it could not be
	// placed (KindPlacement).
	Request *ugm.Request
	// Reason is why it is held: a *ugm.Refusal, *ugm.AppConflict,
	// *ugm.QueueError, a *BehindError or another error about the pod.
	Reason   error
	Priority int32
	// Created is the pod's creation: the age it is let in by.
	Created time.Time
	// Since is when it was first held and Seq the order the book first
	// took it in (both kept while it stays held); the book sets them. Pods
	// held in the order the scheduling queue took them keep that order in
	// Seq, whatever the clock's resolution.
	Since time.Time
	Seq   uint64
	// Obj is the caller's own object for the pod, if it keeps one (the
	// simulator does; the scheduler looks the current one up by Name).
	Obj any

	block block
	lane  *lane
	// kind is KindOf(Reason), worked out once when the book took it.
	kind Kind
}

// Order says how a leaf queue orders its applications (YuniKorn's
// application.sort.policy).
type Order interface {
	// Fair reports whether queue's policy is fair (else fifo).
	Fair(queue string) bool
	// Usage is app's current usage as a share of its queue, for fair:
	// the application using least goes first.
	Usage(app ugm.AppKey, queue string) float64
}

// Fair orders the held pods of a fair queue among their users or groups
// (docs/fairness.md): fairshare.History. Its keys change only when it
// says so (Changes), so the book's order never changes on its own.
type Fair interface {
	// Lane returns the history whose key orders a pod of req and that
	// key; ok false when req's queue orders no users or groups.
	Lane(req *ugm.Request) (k fairshare.Key, key float64, ok bool)
	// Changes calls fn with each history whose key changed since the
	// last call, and reports whether everything may have (a new config).
	Changes(fn func(k fairshare.Key, key float64)) (reset bool)
}

// Book is the held pods, indexed by what holds them and ordered for
// letting in: priority (highest first); in a fair queue (Fair) then the
// key of the pod's user or group (lowest first); then age (oldest first:
// creation, then when first held), then key.
//
// Within what holds them, pods are kept in lanes: a lane is the pods of
// one priority and one user or group of a fair queue (all pods of that
// priority outside fair queues share one lane), ordered by age; the
// lanes are ordered by priority and key. When a key changes, its lanes
// move, not its pods: the work of a release that changes a user's key is
// bounded by that user's lanes (a few), not by the pods they hold.
type Book struct {
	pods    map[string]*Pod
	byBlock map[block]*lanes
	kinds   map[Kind]int
	// bySince orders the pods of each kind by when they were first held
	// (Since, then Seq: both kept while a pod stays held), so that the
	// one held longest is found without a walk over them all (Oldest). A
	// pod held again by the same kind keeps its place. Its items are the
	// pods themselves: a copy of Since and Key cost 40 bytes a held pod.
	bySince map[Kind]*btree.BTreeG[*Pod]
	// starvation is how long a pod may wait before the room it needs is
	// kept for it (0: never).
	starvation time.Duration
	// fair orders users and groups in fair queues (nil: nobody is);
	// lanesOf finds the lanes of each history.
	fair    Fair
	lanesOf map[fairshare.Key]map[*lane]struct{}
	// rekey moves the lanes of a history whose key changed (made once:
	// a func literal per sync would allocate).
	rekey func(k fairshare.Key, key float64)
	// seq numbers the pods as the book first takes them (Pod.Seq).
	seq uint64
	// behind finds, by the key of a starving pod, the pods held behind
	// it (a *BehindError naming it), whatever limit holds that pod now:
	// it may be held again by another limit after they were.
	behind map[string]map[*Pod]struct{}
	// laneNodes and podNodes are the B-tree nodes every limit's and
	// every lane's tree take and give back: one free list each for the
	// book, not one per tree (a tree's own is 288 bytes, and a held user
	// has a limit and a lane of its own, each with a tree).
	laneNodes *btree.FreeListG[*lane]
	podNodes  *btree.FreeListG[*Pod]
}

// freeNodes is how many B-tree nodes each of a book's free lists keeps.
const freeNodes = 256

// lanes are the pods held by one limit, lane by lane.
type lanes struct {
	tree *btree.BTreeG[*lane]
	// one is the limit's lane while it has just one (most limits: one
	// priority, outside fair queues); byID holds them all once it has
	// more. A map for every limit cost about 500 bytes a held user.
	one  *lane
	byID map[laneID]*lane
	n    int
}

// get returns the lane id, or nil.
func (ls *lanes) get(id laneID) *lane {
	if ls.one != nil {
		if ls.one.laneID == id {
			return ls.one
		}
		return nil
	}
	return ls.byID[id]
}

// add indexes l, which get does not find.
func (ls *lanes) add(l *lane) {
	if ls.one == nil && len(ls.byID) == 0 {
		ls.one = l
		return
	}
	if ls.byID == nil {
		ls.byID = make(map[laneID]*lane, 2)
	}
	if ls.one != nil {
		ls.byID[ls.one.laneID] = ls.one
		ls.one = nil
	}
	ls.byID[l.laneID] = l
}

// drop unindexes l.
func (ls *lanes) drop(l *lane) {
	if ls.one == l {
		ls.one = nil
		return
	}
	delete(ls.byID, l.laneID)
}

// laneID names a lane within its limit.
type laneID struct {
	priority int32
	fair     bool
	history  fairshare.Key
}

// lane is the pods of one priority and one history of a fair queue (or
// of no fair queue), in age order.
type lane struct {
	laneID
	// key is the history's key (0 outside fair queues).
	key  float64
	pods *btree.BTreeG[*Pod]
	in   *lanes
	of   block
}

// laneBefore orders lanes: priority, then key, then those outside fair
// queues, then by history.
func laneBefore(a, b *lane) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.key != b.key {
		return a.key < b.key
	}
	if a.fair != b.fair {
		return !a.fair
	}
	return historyBefore(a.history, b.history)
}

func historyBefore(a, b fairshare.Key) bool {
	if a.Queue != b.Queue {
		return a.Queue < b.Queue
	}
	if a.Group != b.Group {
		return !a.Group
	}
	return a.Name < b.Name
}

// NewBook returns an empty book whose pods are starving after waiting
// starvation (0: never).
func NewBook(starvation time.Duration) *Book {
	return &Book{pods: map[string]*Pod{}, byBlock: map[block]*lanes{}, kinds: map[Kind]int{}, bySince: map[Kind]*btree.BTreeG[*Pod]{},
		starvation: starvation, lanesOf: map[fairshare.Key]map[*lane]struct{}{}, behind: map[string]map[*Pod]struct{}{},
		laneNodes: btree.NewFreeListG[*lane](freeNodes), podNodes: btree.NewFreeListG[*Pod](freeNodes)}
}

// firstHeldBefore orders a kind's bySince: when first held, then the
// order the book first took them in (Seq is unique).
func firstHeldBefore(a, b *Pod) bool {
	if !a.Since.Equal(b.Since) {
		return a.Since.Before(b.Since)
	}
	return a.Seq < b.Seq
}

// count adds p to its kind's count and order.
func (b *Book) count(p *Pod) {
	b.kinds[p.kind]++
	t := b.bySince[p.kind]
	if t == nil {
		t = btree.NewG(16, firstHeldBefore)
		b.bySince[p.kind] = t
	}
	t.ReplaceOrInsert(p)
}

// uncount takes p out of its kind's count and order.
func (b *Book) uncount(p *Pod) {
	if b.kinds[p.kind]--; b.kinds[p.kind] <= 0 {
		delete(b.kinds, p.kind)
	}
	if t := b.bySince[p.kind]; t != nil {
		t.Delete(p)
		if t.Len() == 0 {
			delete(b.bySince, p.kind)
		}
	}
}

// SetFair makes f order the users and groups of fair queues (nil: none),
// every held pod by its key now.
func (b *Book) SetFair(f Fair) {
	b.fair = f
	b.rekey = func(k fairshare.Key, key float64) {
		for l := range b.lanesOf[k] {
			if l.key != key {
				l.in.tree.Delete(l)
				l.key = key
				l.in.tree.ReplaceOrInsert(l)
			}
		}
	}
	if f != nil {
		f.Changes(func(fairshare.Key, float64) {})
	}
	b.relane()
}

// relane puts every held pod in its lane anew (a new config, a new Fair).
func (b *Book) relane() {
	b.byBlock = map[block]*lanes{}
	clear(b.lanesOf)
	for _, p := range b.pods {
		b.insert(p)
	}
}

// sync moves the lanes of the keys that changed since the last sync.
func (b *Book) sync() {
	if b.fair == nil {
		return
	}
	if reset := b.fair.Changes(b.rekey); reset {
		b.relane()
	}
}

// laneOf is the lane a pod of req and priority goes in, and its key.
func (b *Book) laneOf(req *ugm.Request, priority int32) (laneID, float64) {
	id := laneID{priority: priority}
	if b.fair == nil || req == nil {
		return id, 0
	}
	k, key, ok := b.fair.Lane(req)
	if !ok {
		return id, 0
	}
	id.fair, id.history = true, k
	return id, key
}

// insert puts p (its block set) in its lane.
func (b *Book) insert(p *Pod) {
	id, key := b.laneOf(p.Request, p.Priority)
	ls := b.byBlock[p.block]
	if ls == nil {
		ls = &lanes{tree: btree.NewWithFreeListG(8, laneBefore, b.laneNodes)}
		b.byBlock[p.block] = ls
	}
	l := ls.get(id)
	if l == nil {
		l = &lane{laneID: id, key: key, pods: btree.NewWithFreeListG(8, inOrder, b.podNodes), in: ls, of: p.block}
		ls.add(l)
		ls.tree.ReplaceOrInsert(l)
		if id.fair {
			if b.lanesOf[id.history] == nil {
				b.lanesOf[id.history] = map[*lane]struct{}{}
			}
			b.lanesOf[id.history][l] = struct{}{}
		}
	}
	l.pods.ReplaceOrInsert(p)
	p.lane = l
	ls.n++
	if k := starvingKey(p); k != "" {
		if b.behind[k] == nil {
			b.behind[k] = map[*Pod]struct{}{}
		}
		b.behind[k][p] = struct{}{}
	}
}

// starvingKey is the key of the pod p is held behind, "" when p is not
// held behind a pod.
func starvingKey(p *Pod) string {
	if p.kind != KindBehind {
		return ""
	}
	e, ok := errs.As[*BehindError](p.Reason)
	if !ok {
		return ""
	}
	return e.Pod.Key
}

// unlink takes p out of its lane.
func (b *Book) unlink(p *Pod) {
	l := p.lane
	if l == nil {
		return
	}
	p.lane = nil
	if k := starvingKey(p); k != "" {
		delete(b.behind[k], p)
		if len(b.behind[k]) == 0 {
			delete(b.behind, k)
		}
	}
	l.pods.Delete(p)
	ls := l.in
	ls.n--
	if l.pods.Len() == 0 {
		l.pods.Clear(true) // its root node back to the free list
		ls.tree.Delete(l)
		ls.drop(l)
		if l.fair {
			delete(b.lanesOf[l.history], l)
			if len(b.lanesOf[l.history]) == 0 {
				delete(b.lanesOf, l.history)
			}
		}
	}
	if ls.n == 0 && b.byBlock[l.of] == ls {
		ls.tree.Clear(true)
		delete(b.byBlock, l.of)
	}
}

// ascend calls fn with the pods held by k in the book's order until it
// returns false.
func (b *Book) ascend(k block, fn func(*Pod) bool) {
	ls := b.byBlock[k]
	if ls == nil {
		return
	}
	ls.tree.Ascend(func(l *lane) bool {
		more := true
		l.pods.Ascend(func(p *Pod) bool {
			more = fn(p)
			return more
		})
		return more
	})
}

// before reports whether a held pod comes before another pod (me, in
// lane id and key) in the order of a limit.
func before(p *Pod, id laneID, key float64, me *Pod) bool {
	if p.lane != nil {
		other := &lane{laneID: id, key: key}
		if laneBefore(p.lane, other) {
			return true
		}
		if laneBefore(other, p.lane) {
			return false
		}
	}
	return inOrder(p, me)
}

// inOrder is the book's order: priority, then age (creation, which
// Kubernetes keeps to the second; then when first held), then key.
func inOrder(a, b *Pod) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.Created.Equal(b.Created) {
		return a.Created.Before(b.Created)
	}
	if !a.Since.Equal(b.Since) {
		return a.Since.Before(b.Since)
	}
	return a.Key < b.Key
}

// Hold records p as held (replacing an earlier entry of its key, whose
// Since it keeps) and returns the earlier entry, nil when it was not held.
func (b *Book) Hold(p *Pod, now time.Time) *Pod {
	b.sync()
	old := b.pods[p.Key]
	kind, first, seq := KindOf(p.Reason), now, b.seq+1
	if old != nil {
		first, seq = old.Since, old.Seq
		b.unlink(old)
		if old.kind != kind {
			b.uncount(old)
		}
	} else {
		b.seq = seq
	}
	p.Since, p.Seq, p.kind, p.block = first, seq, kind, blockOf(p.Reason)
	b.insert(p)
	b.pods[p.Key] = p
	if old == nil || old.kind != kind {
		b.count(p)
	} else {
		// Same place (Seq), new entry: the old one must not stay
		// reachable from the order.
		b.bySince[kind].ReplaceOrInsert(p)
	}
	return old
}

// Remove takes the pod key out of the book (let in, or gone) and returns
// it; nil when it was not held.
func (b *Book) Remove(key string) *Pod {
	p := b.pods[key]
	if p == nil {
		return nil
	}
	delete(b.pods, key)
	b.unlink(p)
	b.uncount(p)
	return p
}

// Get returns the held pod key, or nil.
func (b *Book) Get(key string) *Pod { return b.pods[key] }

// Len is the number of held pods.
func (b *Book) Len() int { return len(b.pods) }

// Kinds counts the held pods by kind. The caller must not change it.
func (b *Book) Kinds() map[Kind]int { return b.kinds }

// Oldest returns, for each kind that holds pods, when the pod it has held
// longest was first held (its Since): O(kinds x log pods).
func (b *Book) Oldest() map[Kind]time.Time {
	out := make(map[Kind]time.Time, len(b.bySince))
	for k, t := range b.bySince {
		if first, ok := t.Min(); ok {
			out[k] = first.Since
		}
	}
	return out
}

// Released returns the held pods a release of released may let in, in the
// order they are to be tried: from each limit the release touched (its
// user, groups, the queues on its path, its application) at most window
// pods, first in the book's order; then, within a leaf queue, by the key
// of their user or group (a fair queue), by the queue's application order
// (fifo: the application whose oldest held pod is oldest; fair: the
// application using least), then age. The work is bounded by the limits
// touched and window, not by the pods held.
func (b *Book) Released(released *ugm.Request, window int, order Order) []*Pod {
	b.sync()
	if len(b.pods) == 0 {
		// Nothing to let in: skip listing the blocks, which allocates
		// (most releases, while nothing is held).
		return nil
	}
	var out []*Pod
	seen := map[string]bool{}
	for _, k := range touched(released) {
		out = b.collect(k, window, out, seen)
	}
	sortForLetIn(out, order)
	return out
}

// Blocked returns the held pods held by the same limit as p (p too), at
// most window, in let-in order.
func (b *Book) Blocked(p *Pod, window int, order Order) []*Pod {
	b.sync()
	out := b.collect(p.block, window, nil, map[string]bool{})
	sortForLetIn(out, order)
	return out
}

// HasBehind reports whether pods are held behind the pod key.
func (b *Book) HasBehind(key string) bool { return len(b.behind[key]) > 0 }

// Behind returns the pods held behind the pod key (a *BehindError naming
// it), in let-in order: when that pod is let in or goes they need not
// wait any more, and when another limit holds it they may not count
// against that one. It finds them whatever limit holds that pod now.
func (b *Book) Behind(key string, order Order) []*Pod {
	b.sync()
	set := b.behind[key]
	if len(set) == 0 {
		return nil
	}
	out := make([]*Pod, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sortForLetIn(out, order)
	return out
}

// All returns every held pod in let-in order (a config change may let any
// in).
func (b *Book) All(order Order) []*Pod {
	b.sync()
	out := make([]*Pod, 0, len(b.pods))
	for _, p := range b.pods {
		out = append(out, p)
	}
	sortForLetIn(out, order)
	return out
}

func (b *Book) collect(k block, window int, out []*Pod, seen map[string]bool) []*Pod {
	n := 0
	b.ascend(k, func(p *Pod) bool {
		if !seen[p.Key] {
			seen[p.Key] = true
			out = append(out, p)
		}
		n++
		return n < window
	})
	return out
}

// sortForLetIn orders pods: priority; then by leaf queue (path order, so
// that a queue's pods are together); within a queue by the key of their
// user or group (a fair queue: the keys the book's lanes hold), then by
// its application order; then age and key.
func sortForLetIn(pods []*Pod, order Order) {
	type rank struct {
		queue string
		fair  float64
		app   float64
	}
	oldest := map[ugm.AppKey]time.Time{}
	for _, p := range pods {
		if p.Request == nil {
			continue
		}
		if t, ok := oldest[p.Request.App]; !ok || p.Created.Before(t) {
			oldest[p.Request.App] = p.Created
		}
	}
	// Each pod's rank is worked out once, beside it: the comparisons read
	// it in place, not from a map by pod.
	type ranked struct {
		p *Pod
		rank
	}
	rs := make([]ranked, len(pods))
	for i, p := range pods {
		r := ranked{p: p}
		if p.lane != nil {
			r.fair = p.lane.key
		}
		if p.Request != nil {
			r.queue = p.Request.Queue
			switch {
			case order != nil && order.Fair(r.queue):
				r.app = order.Usage(p.Request.App, r.queue)
			default:
				r.app = float64(oldest[p.Request.App].UnixNano())
			}
		}
		rs[i] = r
	}
	// inOrder is a total order on distinct pods: no two compare equal, so
	// an unstable sort gives the one order.
	slices.SortFunc(rs, func(a, b ranked) int {
		if a.p.Priority != b.p.Priority {
			return cmp.Compare(b.p.Priority, a.p.Priority)
		}
		if c := strings.Compare(a.queue, b.queue); c != 0 {
			return c
		}
		if c := cmp.Compare(a.fair, b.fair); c != 0 {
			return c
		}
		if c := cmp.Compare(a.app, b.app); c != 0 {
			return c
		}
		switch {
		case inOrder(a.p, b.p):
			return -1
		case inOrder(b.p, a.p):
			return 1
		}
		return 0
	})
	for i := range rs {
		pods[i] = rs[i].p
	}
}

// barrierScan bounds how many pods that can never fit, or whose limit req
// does not count against (takes: the book indexes user and group limits
// by name alone, so a user's block holds the limits of every queue),
// Barrier passes over at the head of a limit.
const barrierScan = 64

// Barrier returns the pod whose kept room a pod with key, req, priority
// and creation would take, or nil (group: the group req's application is
// tracked against, ugm's Decision.Group or TrackedGroup; the one group
// limit it takes from): a held pod ahead of it in the order of
// a limit req counts against (priority, its user's or group's key in a
// fair queue, age), that waited longer than the starvation wait and could
// fit once enough is released (the first such pod of the limit, in the
// book's order). Its room is kept: nobody behind it is let in on that
// limit until it is (YuniKorn's YUNIKORN-1185).
func (b *Book) Barrier(key string, req *ugm.Request, group string, priority int32, created, now time.Time) *Pod {
	if b.starvation <= 0 || len(b.pods) == 0 {
		return nil
	}
	b.sync()
	cutoff := now.Add(-b.starvation)
	me := &Pod{Key: key, Priority: priority, Created: created, Since: now}
	id, mine := b.laneOf(req, priority)
	for _, k := range takenFrom(req, group) {
		var head *Pod
		n := 0
		b.ascend(k, func(p *Pod) bool {
			if p.Request != nil && canEverFit(p.Reason) && takes(p.Reason, req, group) {
				head = p
				return false
			}
			n++
			return n < barrierScan
		})
		if head != nil && head.Key != key && head.Since.Before(cutoff) && before(head, id, mine, me) {
			return head
		}
	}
	return nil
}
