// Package estimate says when a pod held for quota is likely to be let in,
// from the completions observed on the limit that holds it, and measures
// how far such estimates were off (docs/why-pending.md, "When").
//
// The model: a pod held because a limit would go over (usage + request >
// max) is let in once enough of the limit's room is freed for it and for
// the pods held on the same limit that a let-in tries before it (its place
// in the line: hold.Book.Ahead). Room is freed by completions, pods that
// end and give their charge back; the rate at which they freed the
// resource on that limit recently (the most recent completions in scope,
// up to a lookback) divides what must be freed. An estimate that cannot
// be made (too few completions seen on the limit, a limit completions do
// not free, a pod that can never fit) says why instead of guessing.
//
// The scheduler plugin and the simulator estimate with the same code, so
// the accuracy measured on a simulator trace (Accuracy, `userquotactl
// simulate --estimates`) is that of the plugin's estimates. Nothing here
// has a lock or a clock: times are passed in, and owners lock.
package estimate

import (
	"errors"
	"fmt"
	"time"

	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// Defaults of the record of completions.
const (
	// DefaultCapacity is how many completions a record keeps (the oldest
	// go first): about 100 bytes each.
	DefaultCapacity = 20000
	// DefaultLookback is how far back completions count.
	DefaultLookback = 6 * time.Hour
	// Recent is how many of the most recent completions in a limit's
	// scope give its rate.
	Recent = 50
	// MinCompletions is how many completions in a limit's scope an
	// estimate needs; with fewer it says it cannot estimate.
	MinCompletions = 3
)

// completion is one pod's end: when, whose, where, how much it gave back.
type completion struct {
	at     time.Time
	user   string
	groups []string
	group  string // the group its application was tracked against
	queue  string
	res    resources.Vector
}

// Completions is the record of completions (pods that ended and gave
// their charge back), newest last, bounded in number and age. It has no
// lock: its owner locks.
type Completions struct {
	ring     []completion
	next     int // where the next record goes
	full     bool
	lookback time.Duration
}

// NewCompletions returns an empty record keeping at most capacity
// completions no older than lookback.
func NewCompletions(capacity int, lookback time.Duration) *Completions {
	if capacity < 1 {
		capacity = 1
	}
	return &Completions{ring: make([]completion, capacity), lookback: lookback}
}

// Record notes that a pod charged req, its application tracked against
// group ("" for none), ended at at.
func (c *Completions) Record(req *ugm.Request, group string, at time.Time) {
	c.ring[c.next] = completion{at: at, user: req.User, groups: req.Groups, group: group, queue: req.Queue, res: req.Resources}
	c.next++
	if c.next == len(c.ring) {
		c.next, c.full = 0, true
	}
}

// Len is how many completions the record holds (old ones included).
func (c *Completions) Len() int {
	if c.full {
		return len(c.ring)
	}
	return c.next
}

// newest calls fn with the completions from the newest back, until fn
// returns false or the lookback ends.
func (c *Completions) newest(now time.Time, fn func(*completion) bool) {
	oldest := now.Add(-c.lookback)
	for i, n := c.next-1, c.Len(); n > 0; i, n = i-1, n-1 {
		if i < 0 {
			i = len(c.ring) - 1
		}
		rec := &c.ring[i]
		if rec.at.Before(oldest) || !fn(rec) {
			return
		}
	}
}

// Rate is the room freed on the limit r names, of its resource, by the
// most recent completions in its scope: at most Recent of them, within
// the lookback. It returns the amount freed (base units), how many
// completions freed it and over how long (from the oldest of them to
// now).
func (c *Completions) Rate(r *ugm.Refusal, now time.Time) (freed int64, n int, span time.Duration) {
	id := resources.Intern(r.Resource)
	var oldest time.Time
	c.newest(now, func(rec *completion) bool {
		req := ugm.Request{User: rec.user, Groups: rec.groups, Queue: rec.queue}
		if !r.CountsFor(&req, rec.group) {
			return true
		}
		freed += rec.res.Get(id)
		oldest = rec.at
		n++
		return n < Recent
	})
	if n > 0 {
		span = now.Sub(oldest)
	}
	return freed, n, span
}

// Estimate is when a held pod is likely let in, with what it rests on.
type Estimate struct {
	// Unknown says why no estimate could be made; "" when Wait is one.
	Unknown string
	// Never: no release lets the pod in, it asks more than the whole
	// limit (only raising the limit does).
	Never bool
	// TooFew: too few completions were seen on the limit to estimate.
	TooFew bool
	// Wait is the estimated time from now until the pod is let in.
	Wait time.Duration
	// Resource is the resource the limit is short of.
	Resource string
	// Own is the pod's own shortfall on the limit (usage + request -
	// max, at least 0); Ahead what the pods held on the limit before it
	// ask of the resource, AheadPods how many they are; Need what must be
	// freed for all of them (usage + ahead + request - max, at least 0;
	// Own + Ahead when the pod is short by itself). Base units.
	Own, Ahead, Need int64
	AheadPods        int
	// Freed, Completions and Span are the observed rate: Freed of the
	// resource by Completions completions in the limit's scope over Span.
	Freed       int64
	Completions int
	Span        time.Duration
}

// Rate is the observed rate, in base units per second (0 when none).
func (e Estimate) Rate() float64 {
	if e.Span <= 0 {
		return 0
	}
	return float64(e.Freed) / e.Span.Seconds()
}

// minSpan keeps a burst of completions at one instant from reading as an
// infinite rate.
const minSpan = time.Second

// Limit returns the limit that holds a pod held for reason, whose request
// is req, and how much of the limit's resource the pod needs there (its
// own request; a gang's: its minimum, as the refusal says). A pod kept
// behind a starving pod (*hold.BehindError) is held by that pod's limit,
// with its own request. nil when no limit holds the pod.
func Limit(reason error, req *ugm.Request) (*ugm.Refusal, int64) {
	var behind *hold.BehindError
	if errors.As(reason, &behind) {
		var r *ugm.Refusal
		if !errors.As(behind.Pod.Reason, &r) {
			return nil, 0
		}
		own := r.Request
		if req != nil && r.Limit != ugm.LimitApplications {
			own = req.Resources.Get(resources.Intern(r.Resource))
		}
		return r, own
	}
	var r *ugm.Refusal
	if !errors.As(reason, &r) {
		return nil, 0
	}
	return r, r.Request
}

// Of estimates when a pod held by the limit r (nil: no limit), needing
// own of its resource there, is let in: ahead are the pods held on the
// same limit that a let-in tries before it (hold.Book.Ahead), c the
// completions seen. r should be what holds the pod now (a fresh check
// when the held reason may be stale).
func Of(r *ugm.Refusal, own int64, ahead []*hold.Pod, c *Completions, now time.Time) Estimate {
	if r == nil {
		return Estimate{Unknown: "no limit that completions free holds it (see what holds it)"}
	}
	e := Estimate{Resource: r.Resource}
	if r.Limit == ugm.LimitApplications {
		e.Own = max(r.Usage+r.Request-r.Max, 0)
		e.Need = e.Own
		e.Unknown = "held by maxapplications: it waits for an application to end, and the rate at which applications end is not measured"
		return e
	}
	if r.Resource == "" {
		e.Unknown = "held by a limit no release frees (see what holds it)"
		return e
	}
	if own > r.Max {
		e.Never = true
		e.Unknown = fmt.Sprintf("never, unless the limit is raised: it asks more %s than the whole limit", r.Resource)
		return e
	}
	id := resources.Intern(r.Resource)
	e.Own = max(r.Usage+own-r.Max, 0)
	for _, p := range ahead {
		if p.Request == nil || !r.Counts(p.Request) {
			continue
		}
		if x := p.Request.Resources.Get(id); x <= r.Max {
			e.Ahead += x
			e.AheadPods++
		}
	}
	// Slack left under the max (a pod kept behind a starving one may fit
	// by itself) counts: what must be freed is what all of them go over.
	e.Need = max(r.Usage+own+e.Ahead-r.Max, 0)
	switch r.Limit {
	case ugm.LimitShare:
		e.Unknown = "held by its queue's runtime share, which moves with the other queues' demand and the cluster's capacity, not with completions alone"
		return e
	case ugm.LimitGuaranteed:
		e.Unknown = "held by its queue's guaranteed share for non-preemptible pods, which moves with the cluster's capacity, not with completions alone"
		return e
	}
	e.Freed, e.Completions, e.Span = c.Rate(r, now)
	switch {
	case e.Completions < MinCompletions:
		e.TooFew = true
		e.Unknown = fmt.Sprintf("too few completions seen on this limit to estimate (%d in the last %s, %d needed)", e.Completions, c.lookback, MinCompletions)
		return e
	case e.Freed <= 0:
		e.Unknown = fmt.Sprintf("the last %d completions on this limit freed no %s", e.Completions, e.Resource)
		return e
	}
	span := max(e.Span, minSpan)
	e.Wait = time.Duration(float64(e.Need) / float64(e.Freed) * float64(span))
	return e
}
