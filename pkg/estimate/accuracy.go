package estimate

import (
	"math"
	"slices"
	"time"
)

// Accuracy compares estimates with what happened: each estimate made for
// a held pod (the first one of its hold) is kept until the pod is let in,
// then its absolute error (how far the estimated moment was from the
// actual one) is recorded. It keeps the last errors overall and per leaf
// queue. It has no lock: its owner locks.
type Accuracy struct {
	open map[string]made
	// order is the keys of open, oldest first, to bound it.
	order   []string
	all     samples
	byQueue map[string]*samples
	keep    int
}

// made is one estimate waiting for its pod to be let in.
type made struct {
	queue string
	// at is when the estimate was made, due when it said the pod would
	// be let in.
	at, due time.Time
}

// samples is a ring of recent errors (signed: estimated minus actual
// moment) and waits.
type samples struct {
	errs, waits []time.Duration
	next        int
}

func (s *samples) add(keep int, err, wait time.Duration) {
	if len(s.errs) < keep {
		s.errs = append(s.errs, err)
		s.waits = append(s.waits, wait)
		return
	}
	s.errs[s.next], s.waits[s.next] = err, wait
	s.next = (s.next + 1) % keep
}

// maxOpen bounds the estimates waiting for their pods; the oldest go
// first (a pod deleted while held never comes back to close its own).
const maxOpen = 10000

// NewAccuracy returns an empty comparison keeping the last keep errors
// overall and per queue (all of them when keep <= 0).
func NewAccuracy(keep int) *Accuracy {
	if keep <= 0 {
		keep = int(^uint(0) >> 1)
	}
	return &Accuracy{open: map[string]made{}, byQueue: map[string]*samples{}, keep: keep}
}

// Made notes the estimate e made at at for the held pod key of queue. Only
// the first estimate of a hold counts (until LetIn or Drop); one that
// could not be made is not compared.
func (a *Accuracy) Made(key, queue string, e Estimate, at time.Time) {
	if e.Unknown != "" {
		return
	}
	if _, ok := a.open[key]; ok {
		return
	}
	if len(a.open) >= maxOpen {
		for len(a.order) > 0 {
			old := a.order[0]
			a.order = a.order[1:]
			if _, ok := a.open[old]; ok {
				delete(a.open, old)
				break
			}
		}
	}
	a.open[key] = made{queue: queue, at: at, due: at.Add(e.Wait)}
	a.order = append(a.order, key)
	if len(a.order) > 2*maxOpen {
		a.order = slices.DeleteFunc(a.order, func(k string) bool { _, ok := a.open[k]; return !ok })
	}
}

// Estimated reports whether an estimate of the pod key waits for its
// let-in.
func (a *Accuracy) Estimated(key string) bool {
	_, ok := a.open[key]
	return ok
}

// LetIn records the error of the estimate of the pod key, let in at at.
func (a *Accuracy) LetIn(key string, at time.Time) {
	m, ok := a.open[key]
	if !ok {
		return
	}
	delete(a.open, key)
	// Signed: positive when the estimate was too long (the pod came in
	// before it said), negative when too short.
	err := m.due.Sub(at)
	wait := at.Sub(m.at)
	a.all.add(a.keep, err, wait)
	q := a.byQueue[m.queue]
	if q == nil {
		q = &samples{}
		a.byQueue[m.queue] = q
	}
	q.add(a.keep, err, wait)
}

// Drop forgets the estimate of the pod key (deleted while held).
func (a *Accuracy) Drop(key string) { delete(a.open, key) }

// Summary is the measured accuracy of estimates.
type Summary struct {
	// Compared is how many estimates were compared with the actual
	// let-in.
	Compared int
	// P50 and P90 are the absolute errors that half and nine in ten of
	// them were within.
	P50, P90 time.Duration
	// WaitP50 and WaitP90 are the actual waits from the estimate to the
	// let-in, for scale.
	WaitP50, WaitP90 time.Duration
	// SignedP10 and SignedP90 are the 10th and 90th percentiles of the
	// signed errors (estimated minus actual moment: below 0 the estimate
	// was too short), for which way they lean.
	SignedP10, SignedP90 time.Duration
}

// All is the accuracy over every queue.
func (a *Accuracy) All() Summary { return a.all.summary() }

// Queue is the accuracy of the estimates for pods of queue.
func (a *Accuracy) Queue(queue string) Summary {
	if q := a.byQueue[queue]; q != nil {
		return q.summary()
	}
	return Summary{}
}

func (s *samples) summary() Summary {
	if len(s.errs) == 0 {
		return Summary{}
	}
	signed, waits := slices.Clone(s.errs), slices.Clone(s.waits)
	abs := make([]time.Duration, len(signed))
	for i, e := range signed {
		abs[i] = max(e, -e)
	}
	slices.Sort(signed)
	slices.Sort(abs)
	slices.Sort(waits)
	return Summary{Compared: len(abs), P50: Quantile(abs, 0.5), P90: Quantile(abs, 0.9),
		WaitP50: Quantile(waits, 0.5), WaitP90: Quantile(waits, 0.9),
		SignedP10: Quantile(signed, 0.1), SignedP90: Quantile(signed, 0.9)}
}

// Quantile is the nearest-rank q-quantile of sorted (0 when empty).
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}
