package perf

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// A case of TestThroughput or TestBacklog.
type perfCase struct {
	name     string
	profile  profile
	fraction float64 // users at a limit
	// backlog: a case of TestBacklog (the backlog workload); gated: its
	// held pods are parked by spec.schedulingGates (the floor), not by
	// quota.
	backlog, gated bool
}

// The cases each test runs when -case is not given.
const (
	defaultThroughputCases = "baseline,userquota,refused"
	defaultBacklogCases    = "backlog,floor,floor-control"
)

var allCases = map[string]perfCase{
	"baseline":  {name: "baseline", profile: baseline},
	"userquota": {name: "userquota", profile: withQuota},
	// refused: -at-limit of the users at a limit (set in cases, after
	// the flags are parsed).
	"refused": {name: "refused", profile: withQuota},
	// control is the baseline again: its ratio to baseline (an A/A
	// comparison) shows how much two identical cases differ here.
	"control": {name: "control", profile: baseline},
	// backlog: UserQuota holds the over-quota pods at PreEnqueue.
	"backlog": {name: "backlog", profile: withQuota, backlog: true},
	// floor: the framework's own cost of as many parked pods, without
	// UserQuota; floor-control is the floor again (A/A).
	"floor":         {name: "floor", profile: baseline, backlog: true, gated: true},
	"floor-control": {name: "floor-control", profile: baseline, backlog: true, gated: true},
	// gated-quota: the floor's pods (the held ones gated) with UserQuota
	// enabled: it charges the pods that bind and holds none, which tells
	// the plugin's work on the bound pods from what holding costs.
	"gated-quota": {name: "gated-quota", profile: withQuota, backlog: true, gated: true},
}

// cases returns the cases of -case that belong to the calling test
// (TestBacklog's when backlog is set), in the order given, or the test's
// default ones without -case. An unknown name fails; a -case without any
// of the test's cases skips it.
func cases(t *testing.T, backlog bool) []perfCase {
	out, err := selectCases(*casesFlag, *atLimitFlag, backlog)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		kind := "TestThroughput"
		if backlog {
			kind = "TestBacklog"
		}
		t.Skipf("-case=%s has no case of %s", *casesFlag, kind)
	}
	return out
}

// selectCases returns the cases of names (comma separated) that belong to
// TestBacklog (backlog set) or TestThroughput, in the order given, or the
// test's default ones when names is empty; the refused case gets
// fraction. An unknown name is an error.
func selectCases(names string, fraction float64, backlog bool) ([]perfCase, error) {
	if names == "" {
		names = defaultThroughputCases
		if backlog {
			names = defaultBacklogCases
		}
	}
	var out []perfCase
	for _, n := range strings.Split(names, ",") {
		c, ok := allCases[strings.TrimSpace(n)]
		if !ok {
			return nil, fmt.Errorf("-case: unknown case %q (%s, %s)", n, defaultThroughputCases+",control", defaultBacklogCases)
		}
		if c.name == "refused" {
			c.fraction = fraction
		}
		if c.backlog == backlog {
			out = append(out, c)
		}
	}
	return out, nil
}

// TestThroughput schedules -pods pods on -nodes nodes per run, for every
// case, -runs times, interleaved (run r starts at case r mod the number of
// cases, so no case is always first or last), and reports pods/s from
// per-second samples of the bound-pod count, the scheduler's CPU time per
// 1000 pods, and the extension-point durations from its /metrics.
//
// The pods of a run are created before its scheduler starts, so the
// scheduler drains a full queue: what is measured is its ceiling on this
// machine, not the rate pods are created at. After the run the scheduler
// stops and the pods are deleted.
func TestThroughput(t *testing.T) {
	if !*perfFlag {
		t.Skip("run with -perf (make bench-scheduler)")
	}
	cs := cases(t, false)
	w := workload{queueconfigtest.Synthetic{Users: *usersFlag, Queues: *queuesFlag, Groups: *groupsFlag, Levels: *levelsFlag}}
	c := newCluster(t, "perf-throughput", *nodesFlag)
	env := describeMachine()
	fmt.Printf("machine: %s\n", env)
	if *warmup {
		r := c.runCase(t, w, perfCase{name: "warmup", profile: baseline}, 0, 0)
		fmt.Printf("warm-up   %s (not reported)\n", r.summary())
	}

	var results []*runResult
	for run := 0; run < *runsFlag; run++ {
		for k := range cs {
			pc := cs[(run+k)%len(cs)]
			r := c.runCase(t, w, pc, run+1, k+1)
			results = append(results, r)
			fmt.Printf("run %d/%d %-9s %s\n", run+1, *runsFlag, pc.name, r.summary())
		}
	}
	rep := &report{Machine: env, Flags: flagsLine(), Binary: binary.sum, Runs: results}
	text := rep.throughputMarkdown(cs)
	fmt.Printf("\n%s\n", text)
	writeOut(t, "throughput.md", text, rep)
	for _, r := range results {
		r.check(t)
	}
}

// runResult is one run of one case.
type runResult struct {
	Case  string `json:"case"`
	Run   int    `json:"run"`
	Order int    `json:"order"` // position of the case within its run

	Pods          int `json:"pods"`
	Bound         int `json:"bound"`
	Refused       int `json:"refused"`
	ExpectRefused int `json:"expectRefused"`

	CreateSeconds    float64 `json:"createSeconds"`
	StartToFirstBind float64 `json:"startToFirstBindSeconds"`
	// Samples are pods bound per second, scheduler_perf's way; Decisions
	// count refused pods too (the refused case).
	Samples   []float64 `json:"samples"`
	Decisions []float64 `json:"decisionSamples"`
	// Window is the steady-scheduling window the samples cover (from the
	// first sample with a bound pod, which is skipped, to the last).
	Window float64 `json:"windowSeconds"`
	Avg    float64 `json:"avg"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	DecAvg float64 `json:"decisionsAvg"`
	// Overall is bound pods over the time from the first bind to the last
	// (every run has it, also one too short for per-second samples).
	Overall float64 `json:"overall"`

	// CPU from the first sample to the last decision, per 1000 pods
	// decided in that time: the scheduler process, and this process (API
	// server, etcd and the harness's informer).
	SchedCPUPer1000 float64 `json:"schedulerCPUSecondsPer1000"`
	SelfCPUPer1000  float64 `json:"apiserverCPUSecondsPer1000"`
	SchedCPUTotal   float64 `json:"schedulerCPUSecondsTotal"`

	Metrics runMetrics `json:"metrics"`
	Errors  []string   `json:"errors,omitempty"`
}

// position is the case's place within its run.
func (r *runResult) position() int { return r.Order }

// runMetrics is what the scheduler's /metrics said at the end of a run.
type runMetrics struct {
	// UserQuota's own durations (scheduler_plugin_execution_duration_seconds,
	// sampled: the framework times 10% of cycles).
	QuotaPreFilter histSummary `json:"quotaPreFilter"`
	QuotaReserve   histSummary `json:"quotaReserve"`
	// The extension points over all plugins of the profile
	// (scheduler_framework_extension_point_duration_seconds, every cycle).
	PreFilter histSummary `json:"preFilter"`
	Filter    histSummary `json:"filter"`
	Score     histSummary `json:"score"`
	Reserve   histSummary `json:"reserve"`
	// A whole scheduling attempt, by result.
	AttemptScheduled     histSummary `json:"attemptScheduled"`
	Algorithm            histSummary `json:"algorithm"`
	AttemptUnschedulable histSummary `json:"attemptUnschedulable"`
	// Time requests waited for the client-side rate limiter.
	LimiterWait histSummary `json:"clientLimiterWait"`
	Refusals    float64     `json:"userquotaRefusals"`
	Increases   float64     `json:"userquotaIncreases"`
	// Holds: pods UserQuota held (or held by another limit) at PreEnqueue;
	// StatusWrites: its status patches of held pods that succeeded.
	Holds        float64 `json:"userquotaHolds"`
	StatusWrites float64 `json:"userquotaStatusWrites"`
	HeapInuse    float64 `json:"heapInuseBytes"`
	RSS          float64 `json:"rssBytes"`
}

type histSummary struct {
	Count float64 `json:"count"`
	Mean  float64 `json:"meanSeconds"`
	P50   float64 `json:"p50Seconds"`
	P99   float64 `json:"p99Seconds"`
}

func summarize(h histogram) histSummary {
	return histSummary{Count: h.count, Mean: h.mean(), P50: h.quantile(0.5), P99: h.quantile(0.99)}
}

func (r *runResult) summary() string {
	return fmt.Sprintf("pods/s avg %.1f p50 %.1f p90 %.1f p99 %.1f (%d samples, %.1fs window), overall %.1f; bound %d refused %d; start->first bind %.1fs; scheduler CPU %.2fs/1000 pods; created in %.1fs",
		r.Avg, r.P50, r.P90, r.P99, len(r.Samples), r.Window, r.Overall, r.Bound, r.Refused, r.StartToFirstBind, r.SchedCPUPer1000, r.CreateSeconds)
}

// check fails the test for what makes a run's numbers meaningless: pods
// not decided as the config says, no samples, no metrics.
func (r *runResult) check(t *testing.T) {
	t.Helper()
	for _, e := range r.Errors {
		t.Errorf("run %d %s: %s", r.Run, r.Case, e)
	}
	if r.Bound+r.Refused != r.Pods || r.Refused != r.ExpectRefused {
		t.Errorf("run %d %s: %d pods bound and %d refused, want %d and %d", r.Run, r.Case, r.Bound, r.Refused, r.Pods-r.ExpectRefused, r.ExpectRefused)
	}
	if r.Overall <= 0 {
		t.Errorf("run %d %s: no throughput measured", r.Run, r.Case)
	}
	if len(r.Samples) == 0 {
		// scheduler_perf's samples need 2 s of scheduling; a smoke run on
		// an idle machine can be quicker.
		t.Logf("run %d %s: no per-second sample (scheduling took under 2s); overall %.0f pods/s", r.Run, r.Case, r.Overall)
	}
	if r.Metrics.AttemptScheduled.Count == 0 {
		t.Errorf("run %d %s: no scheduling attempts in /metrics", r.Run, r.Case)
	}
	// Not asserted: UserQuota's own duration histogram, which the framework
	// samples (10 % of cycles, and drops what its buffer cannot hold).
	if r.Case != "baseline" && r.Case != "control" && int(r.Metrics.Increases) != r.Bound {
		t.Errorf("run %d %s: UserQuota charged %v pods, %d were bound: is it enabled?", r.Run, r.Case, r.Metrics.Increases, r.Bound)
	}
	if (r.Case == "baseline" || r.Case == "control") && r.Metrics.Increases != 0 {
		t.Errorf("run %d baseline: UserQuota charged %v pods: it should not be enabled", r.Run, r.Metrics.Increases)
	}
	if r.Window > 0 && r.Window < 10 && *podsFlag >= 10000 {
		t.Logf("WARNING: run %d %s: only %.1fs of steady scheduling (want 10s or more)", r.Run, r.Case, r.Window)
	}
}

// tick is the state at one sampling instant.
type tick struct {
	at                time.Time
	bound, refused    int
	schedCPU, selfCPU float64
}

// podCounter counts, from a pod informer, pods that got bound and pods
// that were refused (PodScheduled=False, not bound), scheduler_perf's way:
// the informer sees each pod unbound, then bound.
type podCounter struct {
	mu      sync.Mutex
	bound   int
	refused map[types.UID]bool
	total   int
	done    chan struct{}
	closed  bool
	first   time.Time // first pod seen bound
	last    time.Time // last pod seen bound
}

func (pc *podCounter) onChange(oldObj, newObj interface{}) {
	pod, ok := newObj.(*v1.Pod)
	if !ok {
		return
	}
	var old *v1.Pod
	if oldObj != nil {
		old, _ = oldObj.(*v1.Pod)
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	switch {
	case pod.Spec.NodeName != "" && (old == nil || old.Spec.NodeName == ""):
		pc.bound++
		delete(pc.refused, pod.UID)
		pc.last = time.Now()
		if pc.first.IsZero() {
			pc.first = pc.last
		}
	case pod.Spec.NodeName == "" && unschedulable(pod):
		pc.refused[pod.UID] = true
	}
	if !pc.closed && pc.bound+len(pc.refused) >= pc.total {
		pc.closed = true
		close(pc.done)
	}
}

func unschedulable(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
			return true
		}
	}
	return false
}

func (pc *podCounter) counts() (int, int, time.Time) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.bound, len(pc.refused), pc.first
}

// bindSpan is the time from the first pod seen bound to the last.
func (pc *podCounter) bindSpan() time.Duration {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.last.Sub(pc.first)
}

// runCase runs one case once: create the pods, start the scheduler, sample
// until every pod is decided, scrape /metrics, stop, delete the pods.
func (c *cluster) runCase(t *testing.T, w workload, pc perfCase, run, order int) *runResult {
	t.Helper()
	n := *podsFlag
	r := &runResult{Case: pc.name, Run: run, Order: order, Pods: n, ExpectRefused: w.expectRefused(n, pc.fraction)}
	c.setQueueConfig(w.queueConfig(n, pc.fraction))
	r.CreateSeconds = c.createPods(w, n, nil).Seconds()

	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	counter := &podCounter{refused: map[types.UID]bool{}, total: n, done: make(chan struct{})}
	c.watchPods(ctx, t, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { counter.onChange(nil, obj) },
		UpdateFunc: counter.onChange,
	})

	dir := runDir(t, fmt.Sprintf("run%d-%s", run, pc.name))
	s := c.startScheduler(pc.profile, dir)
	profile := filepath.Join("pprof", fmt.Sprintf("run%d-%s.pb.gz", run, pc.name))
	ticks, final, waitProfile := sampleRun(ctx, t, s, fmt.Sprintf("run %d %s", run, pc.name), profile, n, counter.done, func() (int, int) {
		b, ref, _ := counter.counts()
		return b, ref
	})
	waitProfile()
	r.SchedCPUTotal = final.schedCPU
	_, _, first := counter.counts()
	r.StartToFirstBind = first.Sub(s.StartedAt()).Seconds()
	r.analyze(ticks, final)
	// Refusals update the pod status after the last decision counted; give
	// the scheduler a moment so /metrics has every attempt.
	time.Sleep(500 * time.Millisecond)
	raw, m, err := s.metrics(ctx)
	if err != nil {
		r.Errors = append(r.Errors, fmt.Sprintf("scraping /metrics: %v", err))
	} else {
		r.Metrics = extractMetrics(m)
		writeRaw(filepath.Join("metrics", fmt.Sprintf("run%d-%s.txt", run, pc.name)), raw)
	}
	r.Metrics.RSS = s.rssBytes()
	if *pprofFlag > 0 && *outDir != "" {
		// After the RSS is read: the profile collects garbage first.
		heap := filepath.Join("pprof", fmt.Sprintf("run%d-%s-heap.pb.gz", run, pc.name))
		if err := s.heapProfile(ctx, heap); err != nil {
			r.Errors = append(r.Errors, fmt.Sprintf("heap profile: %v", err))
		}
	}
	s.stop()
	cancel()
	r.Bound, r.Refused, _ = counter.counts()
	if span := counter.bindSpan(); span > 0 && r.Bound > 1 {
		r.Overall = float64(r.Bound-1) / span.Seconds()
	}
	c.betweenRuns(fmt.Sprintf("run %d %s", run, pc.name))
	return r
}

// sampleRun samples a run once a second until done is closed: bound and
// refused pods (counts), the scheduler's and this process's CPU; the last
// sample is taken when done closes. With -pprof (and -out) it starts a CPU
// profile of the scheduler, into profile under -out, at the first sample
// that sees a bound pod; the returned func waits for it. It fails the test
// if the scheduler exits, or after -run-timeout.
func sampleRun(ctx context.Context, t *testing.T, s *schedulerProcess, label, profile string, total int, done <-chan struct{}, counts func() (bound, refused int)) ([]tick, tick, func()) {
	t.Helper()
	sampleNow := func() tick {
		b, ref := counts()
		cpu, _ := s.cpuSeconds()
		return tick{at: time.Now(), bound: b, refused: ref, schedCPU: cpu, selfCPU: selfCPU()}
	}
	profiling := make(chan struct{})
	profileStarted := *pprofFlag <= 0 || *outDir == ""
	if profileStarted {
		close(profiling)
	}
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	deadline := time.After(*runTimeout)
	var ticks []tick
	for {
		select {
		case <-done:
			final := sampleNow()
			if !profileStarted {
				close(profiling)
			}
			return ticks, final, func() { <-profiling }
		case <-ticker.C:
			tk := sampleNow()
			ticks = append(ticks, tk)
			if !profileStarted && (tk.bound > 0 || *pprofFrom == pprofFromStart) {
				profileStarted = true
				go func() {
					defer close(profiling)
					if err := s.cpuProfileOnceServed(ctx, *pprofFlag, profile); err != nil {
						t.Logf("%s: CPU profile: %v", label, err)
					}
				}()
			}
			if !s.Running() {
				t.Fatalf("%s: scheduler exited: %v\n%s", label, s.ExitStatus(), s.LogTail(40))
			}
		case <-deadline:
			b, ref := counts()
			t.Fatalf("%s: after %s only %d pods bound and %d refused of %d\n%s", label, *runTimeout, b, ref, total, s.LogTail(40))
		}
	}
}

// analyze turns the ticks into scheduler_perf's samples: from the first
// tick that sees a bound pod (the first sample is skipped: it is an
// outlier, sampling and scheduling start independently), one sample per
// second of pods bound in it; a second without a new pod is folded into
// the next (the same rate recorded for each). The partial second before
// the last decision is not a sample. CPU is taken over the same window,
// extended to the last decision.
func (r *runResult) analyze(ticks []tick, final tick) {
	start := -1
	for i, tk := range ticks {
		if tk.bound > 0 {
			start = i
			break
		}
	}
	if start < 0 {
		start = len(ticks)
		ticks = append(ticks, final)
	}
	var last tick
	r.Samples, last = foldedRates(ticks[start:], func(tk tick) int { return tk.bound })
	r.Decisions, _ = foldedRates(ticks[start:], func(tk tick) int { return tk.bound + tk.refused })
	r.Window = last.at.Sub(ticks[start].at).Seconds()
	st := stats(r.Samples)
	r.Avg, r.P50, r.P90, r.P99 = st.mean, st.perc(50), st.perc(90), st.perc(99)
	r.DecAvg = stats(r.Decisions).mean
	from := ticks[start]
	decided := float64(final.bound + final.refused - from.bound - from.refused)
	if decided > 0 {
		r.SchedCPUPer1000 = (final.schedCPU - from.schedCPU) / decided * 1000
		r.SelfCPUPer1000 = (final.selfCPU - from.selfCPU) / decided * 1000
	}
}

// foldedRates is the per-second rates of count from ticks[0] on: a tick
// where count did not grow is folded into the next that it did, whose rate
// is recorded once for each. last is the last tick where count grew.
func foldedRates(ticks []tick, count func(tick) int) (rates []float64, last tick) {
	last, skipped := ticks[0], 0
	for _, tk := range ticks[1:] {
		if d := count(tk) - count(last); d > 0 {
			rate := float64(d) / tk.at.Sub(last.at).Seconds()
			for i := 0; i <= skipped; i++ {
				rates = append(rates, rate)
			}
			last, skipped = tk, 0
		} else {
			skipped++
		}
	}
	return rates, last
}

func extractMetrics(m metricSet) runMetrics {
	quota := func(point string) histSummary {
		return summarize(m.histogram("scheduler_plugin_execution_duration_seconds", map[string]string{"plugin": "UserQuota", "extension_point": point}))
	}
	point := func(p string) histSummary {
		return summarize(m.histogram("scheduler_framework_extension_point_duration_seconds", map[string]string{"extension_point": p, "profile": schedulerName}))
	}
	attempt := func(result string) histSummary {
		return summarize(m.histogram("scheduler_scheduling_attempt_duration_seconds", map[string]string{"result": result, "profile": schedulerName}))
	}
	return runMetrics{
		QuotaPreFilter:       quota("PreFilter"),
		QuotaReserve:         quota("Reserve"),
		PreFilter:            point("PreFilter"),
		Filter:               point("Filter"),
		Score:                point("Score"),
		Reserve:              point("Reserve"),
		AttemptScheduled:     attempt("scheduled"),
		Algorithm:            summarize(m.histogram("scheduler_scheduling_algorithm_duration_seconds", nil)),
		AttemptUnschedulable: attempt("unschedulable"),
		LimiterWait:          summarize(m.histogram("rest_client_rate_limiter_duration_seconds", nil)),
		Refusals:             m.sum("userquota_refusals_total", nil),
		Increases:            m.sum("userquota_increases_total", nil),
		Holds:                m.sum("userquota_holds_total", nil),
		StatusWrites:         m.sum("userquota_status_writes_total", map[string]string{"result": "written"}),
		HeapInuse:            m.sum("go_memstats_heap_inuse_bytes", nil),
	}
}

// sampleStats are the statistics of a set of samples.
type sampleStats struct {
	sorted         []float64
	mean, min, max float64
	stdev          float64
}

func stats(xs []float64) sampleStats {
	s := sampleStats{sorted: append([]float64(nil), xs...), mean: math.NaN(), min: math.NaN(), max: math.NaN(), stdev: math.NaN()}
	if len(xs) == 0 {
		return s
	}
	sortFloats(s.sorted)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	s.mean = sum / float64(len(xs))
	s.min, s.max = s.sorted[0], s.sorted[len(s.sorted)-1]
	if len(xs) > 1 {
		v := 0.0
		for _, x := range xs {
			v += (x - s.mean) * (x - s.mean)
		}
		s.stdev = math.Sqrt(v / float64(len(xs)-1))
	}
	return s
}

// perc is scheduler_perf's percentile: the ceil(p% of n)-th sample.
func (s sampleStats) perc(p float64) float64 {
	n := len(s.sorted)
	if n == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(float64(n)*p/100)) - 1
	return s.sorted[max(0, min(i, n-1))]
}

// median is the middle sample (the mean of the two middle ones).
func (s sampleStats) median() float64 {
	n := len(s.sorted)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s.sorted[n/2]
	}
	return (s.sorted[n/2-1] + s.sorted[n/2]) / 2
}
