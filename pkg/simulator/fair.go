package simulator

import (
	"container/heap"
	"fmt"
	"iter"
	"math"
	"time"

	"github.com/userquota/userquota/pkg/fairshare"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// Fair order over time (docs/fairness.md, docs/simulator.md): the usage
// history the plugin keeps, on the simulated clock; pods that run for a
// while ("runtime" on an allocate line) and complete as the clock passes;
// and Jain's fairness index over users' dominant shares, sampled after
// every line and every completion (Options.Fairness).

// simClock is the simulated clock as a clock.PassiveClock.
type simClock struct{ s *sim }

func (c simClock) Now() time.Time                  { return c.s.now }
func (c simClock) Since(t time.Time) time.Duration { return c.s.now.Sub(t) }

// observers tells each of the ledger's charges and releases to the
// usage history and to the fairness index.
type observers struct {
	history *fairshare.History
	index   *jainIndex
}

func (o observers) Charged(r *ugm.Request) {
	o.history.Charged(r)
	if o.index != nil {
		o.index.charged(r, 1)
	}
}

func (o observers) Released(r *ugm.Request) {
	o.history.Released(r)
	if o.index != nil {
		o.index.charged(r, -1)
	}
}

// Sync passes a config change on to the usage history (ledger.Syncer).
func (o observers) Sync(live iter.Seq[*ugm.Request]) { o.history.Sync(live) }

// completion is when a pod with a runtime completes: seq tells its charge
// from a later one of the same name.
type completion struct {
	at  time.Time
	seq uint64
	pod string
}

// completions is a heap by time, then charge order.
type completions []completion

func (c completions) Len() int { return len(c) }
func (c completions) Less(i, j int) bool {
	if !c[i].at.Equal(c[j].at) {
		return c[i].at.Before(c[j].at)
	}
	return c[i].seq < c[j].seq
}
func (c completions) Swap(i, j int) { c[i], c[j] = c[j], c[i] }
func (c *completions) Push(x any)   { *c = append(*c, x.(completion)) }
func (c *completions) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}

// runFor parses an allocate line's "runtime": nil when absent.
func runFor(l *traceLine) (time.Duration, error) {
	if l.Runtime == nil {
		return 0, nil
	}
	d, err := time.ParseDuration(*l.Runtime)
	if err != nil {
		return 0, fmt.Errorf("bad \"runtime\" %q (a Go duration, e.g. \"90s\" or \"3m\")", *l.Runtime)
	}
	if d <= 0 {
		return 0, fmt.Errorf("\"runtime\" %q must be above 0 (leave it out for a pod that runs until released)", *l.Runtime)
	}
	return d, nil
}

// started notes that p, just charged, completes after its runtime.
func (s *sim) started(p *pendingPod) {
	if p.runtime <= 0 {
		return
	}
	s.seq++
	s.running[p.name] = s.seq
	heap.Push(&s.ends, completion{at: s.now.Add(p.runtime), seq: s.seq, pod: p.name})
}

// nextCompletion is the first completion due by until, nil when none;
// completions of pods released meanwhile are dropped.
func (s *sim) nextCompletion(until time.Time) *completion {
	for len(s.ends) > 0 {
		c := s.ends[0]
		if c.at.After(until) {
			return nil
		}
		if s.running[c.pod] == c.seq {
			return &c
		}
		heap.Pop(&s.ends)
	}
	return nil
}

// complete releases the pod of c at its completion, as the plugin
// releases a pod that turned Succeeded, prints {"pod":...,"completed":...}
// and lets in what it freed.
func (s *sim) complete(c *completion) {
	heap.Pop(&s.ends)
	delete(s.running, c.pod)
	before := s.sharesBeforeRelease()
	ch, ok, err := s.ledger.Release(c.pod)
	if err != nil {
		s.logf("completion of %s: %v\n", c.pod, err)
	}
	if !ok {
		return
	}
	s.emit(completedLine{Pod: c.pod, Completed: s.clockText()})
	s.completed(&ch)
	f := &freed{released: &ch.Request, sharesBefore: before, gone: s.leave(c.pod)}
	if f.gone != nil {
		s.gangGone(f.gone)
	}
	if s.opts.Requeue {
		s.letInAfter(f)
	}
	s.letInOpened()
	s.sample()
}

// clockText is the simulated clock as the time since the start, as Go
// prints a duration ("10m0s", "24h0m0s").
func (s *sim) clockText() string { return s.now.Sub(simStart).String() }

// completedLine is {"pod":"p1","completed":"10m0s"}: a pod with a
// runtime completed, and was released, that long after the start.
type completedLine struct {
	Pod       string `json:"pod"`
	Completed string `json:"completed"`
}

// jainIndex samples Jain's fairness index over the dominant shares of
// the users that want something (running or held pods), after every line
// and every completion.
type jainIndex struct {
	usage map[string]resources.Vector
	// samples, their sum and the time-weighted sum (from each sample to
	// the next on the simulated clock).
	n          int
	sum, min   float64
	last       float64
	timeSum    float64
	timeTotal  time.Duration
	lastAt     time.Time
	haveSample bool
}

func newJainIndex() *jainIndex {
	return &jainIndex{usage: map[string]resources.Vector{}, min: math.Inf(1)}
}

func (j *jainIndex) charged(r *ugm.Request, sign int) {
	u := j.usage[r.User]
	if sign > 0 {
		u.AddUnchecked(r.Resources)
	} else {
		u.SubClamped(r.Resources)
	}
	j.usage[r.User] = u
}

// sample takes the index now; users with nothing running or held are
// left out, and a moment when nobody runs anything is no sample.
func (s *sim) sample() {
	j := s.index
	if j == nil {
		return
	}
	if j.haveSample && s.now.After(j.lastAt) {
		j.timeSum += j.last * float64(s.now.Sub(j.lastAt))
		j.timeTotal += s.now.Sub(j.lastAt)
	}
	users := map[string]bool{}
	for u, v := range j.usage {
		if !withoutPods(v).IsZero() {
			users[u] = true
		}
	}
	for _, p := range s.pendingByName {
		users[p.req.User] = true
	}
	var total resources.Vector
	for u := range users {
		total.AddUnchecked(j.usage[u])
	}
	var sum, sq float64
	for u := range users {
		x := s.dominantShare(j.usage[u], total)
		sum += x
		sq += x * x
	}
	if sq == 0 {
		j.haveSample = false
		return
	}
	v := sum * sum / (float64(len(users)) * sq)
	j.n++
	j.sum += v
	j.min = math.Min(j.min, v)
	j.last, j.lastAt, j.haveSample = v, s.now, true
}

// dominantShare is the largest share of the users' usage (or of the
// capacity a capacity line gave) that u holds, pods not counted.
func (s *sim) dominantShare(u, total resources.Vector) float64 {
	share := 0.0
	for i, x := range u {
		id := resources.ID(i)
		if id == resources.Intern(resources.Pods) || x <= 0 {
			continue
		}
		d := float64(total.Get(id))
		if c, ok := s.capacity.Get(id); ok && c > 0 {
			d = float64(c)
		}
		if d > 0 {
			share = math.Max(share, float64(x)/d)
		}
	}
	return share
}

func withoutPods(v resources.Vector) resources.Vector {
	out := v.Clone()
	if out != nil {
		out.Set(resources.Intern(resources.Pods), 0)
	}
	return out
}

// fairnessLine is the summary Options.Fairness prints after the
// snapshot: Jain's index over the users' dominant shares, its mean over
// the samples (after each line and completion) and over the simulated
// time, its least and its last.
type fairnessLine struct {
	Fairness fairnessSummary `json:"fairness"`
}

type fairnessSummary struct {
	Index    string   `json:"index"`
	Samples  int      `json:"samples"`
	Mean     float64  `json:"mean"`
	TimeMean *float64 `json:"timeMean,omitempty"`
	Min      float64  `json:"min"`
	Last     float64  `json:"last"`
}

func (j *jainIndex) summary() fairnessLine {
	out := fairnessSummary{Index: "jain over users' dominant shares"}
	if j.n > 0 {
		out.Samples, out.Mean, out.Min, out.Last = j.n, round4(j.sum/float64(j.n)), round4(j.min), round4(j.last)
	}
	if j.timeTotal > 0 {
		tm := round4(j.timeSum / float64(j.timeTotal))
		out.TimeMean = &tm
	}
	return fairnessLine{Fairness: out}
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
