package simulator

import (
	"bufio"
	"bytes"
	"time"

	"github.com/userquota/userquota/pkg/estimate"
	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/ledger"
)

// Estimates under Options.Estimates (docs/simulator.md, "--estimates";
// docs/why-pending.md, "When"): each pod held for the first time is given
// the estimate the scheduler plugin's explanation would give at that
// moment (pkg/estimate, from the completions seen so far on the limit
// that holds it and the pods ahead of it there), and when it is let in
// the estimate meets the actual wait. The summary line after the snapshot
// says how far they were off.

// estimates is what a replay with Options.Estimates keeps.
type estimates struct {
	completions *estimate.Completions
	accuracy    *estimate.Accuracy
	// held counts the pods held at least once, estimated those given an
	// estimate; unknown the estimates that could not be made, by why.
	held, estimated int
	unknown         map[string]int
}

func newEstimates() *estimates {
	return &estimates{completions: estimate.NewCompletions(estimate.DefaultCapacity, estimate.DefaultLookback),
		accuracy: estimate.NewAccuracy(0), unknown: map[string]int{}}
}

// estimatesLine is the summary line --estimates prints after the
// snapshot.
type estimatesLine struct {
	Estimates estimatesSummary `json:"estimates"`
}

// estimatesSummary: Held pods were held at least once; Estimated of them
// got an estimate (Unknown, by reason, did not); Compared estimates met
// their pod's let-in (the others' pods were withdrawn or are still held);
// P50 and P90 are the absolute errors of the estimated moment of the
// let-in that half and nine in ten of those were within; WaitP50 and
// WaitP90 the actual waits, for scale. Durations to the second, as Go
// prints them.
type estimatesSummary struct {
	Held      int            `json:"held"`
	Estimated int            `json:"estimated"`
	Unknown   map[string]int `json:"unknown"`
	Compared  int            `json:"compared"`
	P50       string         `json:"p50"`
	P90       string         `json:"p90"`
	WaitP50   string         `json:"waitP50"`
	WaitP90   string         `json:"waitP90"`
	// SignedP10 and SignedP90: the 10th and 90th percentiles of the
	// estimated minus the actual moment (below 0: too short).
	SignedP10 string `json:"signedP10"`
	SignedP90 string `json:"signedP90"`
}

// completed records the release of a live pod's charge c (a
// completion).
func (s *sim) completed(c *ledger.Charge) {
	if s.est != nil {
		s.est.completions.Record(&c.Request, c.Group(), s.now)
	}
}

// estimateLetIn closes the estimate of the pod key, let in now.
func (s *sim) estimateLetIn(key string) {
	if s.est != nil {
		s.est.accuracy.LetIn(key, s.now)
	}
}

// estimateDrop forgets the estimate of the pod key, withdrawn while held.
func (s *sim) estimateDrop(key string) {
	if s.est != nil {
		s.est.accuracy.Drop(key)
	}
}

// estimateHeld gives the pod key, just held for the first time, its
// estimate.
func (s *sim) estimateHeld(key string) {
	if s.est == nil {
		return
	}
	p := s.book.Get(key)
	if p == nil {
		return
	}
	s.est.held++
	r, own := estimate.Limit(p.Reason, p.Request)
	e := estimate.Of(r, own, s.book.Ahead(key, queueOrder{s}), s.est.completions, s.now)
	if e.Unknown != "" {
		s.est.unknown[unknownKind(e, p)]++
		return
	}
	s.est.estimated++
	queue := ""
	if p.Request != nil {
		queue = p.Request.Queue
	}
	s.est.accuracy.Made(key, queue, e, s.now)
}

// unknownKind names why an estimate could not be made, for the summary.
func unknownKind(e estimate.Estimate, p *hold.Pod) string {
	switch {
	case e.Never:
		return "never"
	case e.TooFew:
		return "too few completions"
	}
	return string(hold.KindOf(p.Reason))
}

// summary is the --estimates summary line.
func (e *estimates) summary() estimatesLine {
	sum := e.accuracy.All()
	return estimatesLine{Estimates: estimatesSummary{Held: e.held, Estimated: e.estimated, Unknown: e.unknown, Compared: sum.Compared,
		P50: sum.P50.Round(time.Second).String(), P90: sum.P90.Round(time.Second).String(),
		WaitP50: sum.WaitP50.Round(time.Second).String(), WaitP90: sum.WaitP90.Round(time.Second).String(),
		SignedP10: sum.SignedP10.Round(time.Second).String(), SignedP90: sum.SignedP90.Round(time.Second).String()}}
}

// Reference returns the accuracy a replay with Options.Estimates
// measured: how many estimates met their pod's let-in, and the p50 and
// p90 absolute errors. For tests that pin the reference numbers
// (estimate.Reference*).
func Reference(cfgText []byte, trace []byte, opts Options) (compared int, p50, p90 time.Duration, err error) {
	opts.Requeue, opts.Estimates = true, true
	s, err := newSim(cfgText, opts, discard{})
	if err != nil {
		return 0, 0, 0, err
	}
	if err := s.replay(bufio.NewReader(bytes.NewReader(trace))); err != nil {
		return 0, 0, 0, err
	}
	sum := s.est.accuracy.All()
	return sum.Compared, sum.P50, sum.P90, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
