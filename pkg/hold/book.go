package hold

import (
	"sort"
	"time"

	"github.com/google/btree"

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
	// Since is when it was first held (kept while it stays held); the book
	// sets it.
	Since time.Time
	// Obj is the caller's own object for the pod, if it keeps one (the
	// simulator does; the scheduler looks the current one up by Name).
	Obj any

	block block
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

// Book is the held pods, indexed by what holds them and ordered for
// letting in: priority (highest first), then age (oldest first: creation,
// then when first held), then key.
type Book struct {
	pods    map[string]*Pod
	byBlock map[block]*btree.BTreeG[*Pod]
	kinds   map[Kind]int
	// starvation is how long a pod may wait before the room it needs is
	// kept for it (0: never).
	starvation time.Duration
}

// NewBook returns an empty book whose pods are starving after waiting
// starvation (0: never).
func NewBook(starvation time.Duration) *Book {
	return &Book{pods: map[string]*Pod{}, byBlock: map[block]*btree.BTreeG[*Pod]{}, kinds: map[Kind]int{}, starvation: starvation}
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
	old := b.Remove(p.Key)
	p.Since = now
	if old != nil {
		p.Since = old.Since
	}
	p.block = blockOf(p.Reason)
	t := b.byBlock[p.block]
	if t == nil {
		t = btree.NewG(8, inOrder)
		b.byBlock[p.block] = t
	}
	t.ReplaceOrInsert(p)
	b.pods[p.Key] = p
	b.kinds[KindOf(p.Reason)]++
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
	if t := b.byBlock[p.block]; t != nil {
		t.Delete(p)
		if t.Len() == 0 {
			delete(b.byBlock, p.block)
		}
	}
	k := KindOf(p.Reason)
	if b.kinds[k]--; b.kinds[k] <= 0 {
		delete(b.kinds, k)
	}
	return p
}

// Get returns the held pod key, or nil.
func (b *Book) Get(key string) *Pod { return b.pods[key] }

// Len is the number of held pods.
func (b *Book) Len() int { return len(b.pods) }

// Kinds counts the held pods by kind. The caller must not change it.
func (b *Book) Kinds() map[Kind]int { return b.kinds }

// Released returns the held pods a release of released may let in, in the
// order they are to be tried: from each limit the release touched (its
// user, groups, the queues on its path, its application) at most window
// pods, first in the book's order; then, within a leaf queue, by the
// queue's application order (fifo: the application whose oldest held pod
// is oldest; fair: the application using least), then age. The work is
// bounded by the limits touched and window, not by the pods held.
func (b *Book) Released(released *ugm.Request, window int, order Order) []*Pod {
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
	out := b.collect(p.block, window, nil, map[string]bool{})
	sortForLetIn(out, order)
	return out
}

// All returns every held pod in let-in order (a config change may let any
// in).
func (b *Book) All(order Order) []*Pod {
	out := make([]*Pod, 0, len(b.pods))
	for _, p := range b.pods {
		out = append(out, p)
	}
	sortForLetIn(out, order)
	return out
}

func (b *Book) collect(k block, window int, out []*Pod, seen map[string]bool) []*Pod {
	t := b.byBlock[k]
	if t == nil {
		return out
	}
	n := 0
	t.Ascend(func(p *Pod) bool {
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
// that a queue's pods are together); within a queue by its application
// order; then age and key.
func sortForLetIn(pods []*Pod, order Order) {
	type rank struct {
		queue string
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
	ranks := make(map[*Pod]rank, len(pods))
	for _, p := range pods {
		r := rank{}
		if p.Request != nil {
			r.queue = p.Request.Queue
			switch {
			case order != nil && order.Fair(r.queue):
				r.app = order.Usage(p.Request.App, r.queue)
			default:
				r.app = float64(oldest[p.Request.App].UnixNano())
			}
		}
		ranks[p] = r
	}
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		ra, rb := ranks[a], ranks[b]
		if ra.queue != rb.queue {
			return ra.queue < rb.queue
		}
		if ra.app != rb.app {
			return ra.app < rb.app
		}
		return inOrder(a, b)
	})
}

// barrierScan bounds how many pods that can never fit Barrier passes over
// at the head of a limit.
const barrierScan = 64

// Barrier returns the pod whose kept room a pod with key, req, priority
// and creation would take, or nil: a held pod ahead of it in the order of
// a limit req counts against, that waited longer than the starvation
// wait and could fit once enough is released (the first such pod of the
// limit, in the book's order). Its room is kept: nobody behind it is let
// in on that limit until it is (YuniKorn's YUNIKORN-1185).
func (b *Book) Barrier(key string, req *ugm.Request, priority int32, created, now time.Time) *Pod {
	if b.starvation <= 0 || len(b.pods) == 0 {
		return nil
	}
	cutoff := now.Add(-b.starvation)
	me := &Pod{Key: key, Priority: priority, Created: created, Since: now}
	for _, k := range touched(req) {
		t := b.byBlock[k]
		if t == nil {
			continue
		}
		var head *Pod
		n := 0
		t.Ascend(func(p *Pod) bool {
			if p.Request != nil && canEverFit(p.Reason) {
				head = p
				return false
			}
			n++
			return n < barrierScan
		})
		if head != nil && head.Key != key && head.Since.Before(cutoff) && inOrder(head, me) {
			return head
		}
	}
	return nil
}
