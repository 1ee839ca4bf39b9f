package perf

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/userquota/userquota/pkg/plugins/userquota"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// parkedGate is the scheduling gate that parks the floor's held pods.
const parkedGate = "example.com/parked"

// TestBacklog measures a deep backlog of pods held for quota against the
// framework's floor. Each run creates -backlog-pods pods of the workload
// (pending), of which the last -backlog-held fraction by index are held
// for the whole run:
//
//   - backlog: UserQuota enabled; every user's named limit admits exactly
//     its pods among the first (pods 0..admitted-1), so the rest are over
//     quota and held at PreEnqueue (their status says QuotaHeld, written
//     once through the plugin's own client);
//   - floor: the same pods, the held ones parked by a plain
//     spec.schedulingGates entry, and the scheduler without UserQuota (the
//     baseline profile): what kube-scheduler costs for as many parked
//     pods;
//   - floor-control: the floor again (an A/A comparison);
//   - gated-quota (only when asked for): the floor's pods with UserQuota
//     enabled, which charges the pods that bind and holds none.
//
// The cases are interleaved, the order rotated per run, as in
// TestThroughput. Measured: pods/s of the pods that bind and scheduler CPU
// per bound pod (TestThroughput's sampler, over the binding window); the
// API server's writes to pods and events from the scheduler's start until
// they settle (after every held pod's status says held); the scheduler's
// peak RSS; with -pprof, a CPU profile from the first binding.
func TestBacklog(t *testing.T) {
	if !*perfFlag {
		t.Skip("run with -perf (make bench-scheduler)")
	}
	cs := cases(t, true)
	n := *backlogPods
	held := int(float64(n)**backlogHeld + 0.5)
	admitted := n - held
	w := workload{queueconfigtest.Synthetic{Users: *usersFlag, Queues: *queuesFlag, Groups: *groupsFlag, Levels: *levelsFlag}}
	if held <= 0 || admitted < w.Users {
		t.Fatalf("-backlog-pods=%d -backlog-held=%g: %d held, %d admitted; want some held and at least one admitted pod per user (%d users)", n, *backlogHeld, held, admitted, w.Users)
	}
	c := newCluster(t, "perf-backlog", *nodesFlag)
	env := describeMachine()
	fmt.Printf("machine: %s\n", env)
	fmt.Printf("backlog: %d pods, %d held, %d bind; %d users, limit %d-%d pods each\n", n, held, admitted, w.Users, w.podsOf(w.Users-1, admitted), w.podsOf(0, admitted))
	if *warmup {
		r := c.runBacklog(t, w, allCases["floor"], n, held, 0, 0)
		fmt.Printf("warm-up   %s (not reported)\n", r.summary())
	}

	var results []*backlogResult
	for run := 0; run < *runsFlag; run++ {
		for k := range cs {
			pc := cs[(run+k)%len(cs)]
			r := c.runBacklog(t, w, pc, n, held, run+1, k+1)
			results = append(results, r)
			fmt.Printf("run %d/%d %-13s %s\n", run+1, *runsFlag, pc.name, r.summary())
		}
	}
	rep := &report{Machine: env, Flags: flagsLine(), Binary: binary.sum, Backlog: results}
	text := rep.backlogMarkdown(cs, n, held) + profileTops(results)
	fmt.Printf("\n%s\n", text)
	writeOut(t, "backlog.md", text, rep)
	for _, r := range results {
		r.check(t, admitted)
	}
}

// backlogResult is one run of a backlog or floor case.
type backlogResult struct {
	runResult
	// Held pods (as built); HeldSaid those whose status said held at the
	// end (PodScheduled=False, QuotaHeld in backlog, SchedulingGated in
	// the floor), HeldSaidAtLastBind when the last pod bound.
	Held               int `json:"held"`
	HeldSaid           int `json:"heldSaid"`
	HeldSaidAtLastBind int `json:"heldSaidAtLastBind"`
	// BoundAtEnd: pods bound when the writes had settled (every held pod
	// stays held). WrongBound: what bound past its user's limit (backlog)
	// or was gated (floor).
	BoundAtEnd int      `json:"boundAtEnd"`
	WrongBound []string `json:"wrongBound,omitempty"`
	// HeldSaidSeconds is from the scheduler's start until every held
	// pod's status said held; RunSeconds until the writes settled.
	// Trickle: the plugin's status client ran at its defaults (20/s), so
	// the run ended after the last bind, HeldSaid is what was written by
	// then and the writes are counted up to then.
	Trickle         bool    `json:"trickle,omitempty"`
	HeldSaidSeconds float64 `json:"heldSaidSeconds"`
	RunSeconds      float64 `json:"runSeconds"`
	// CPU seconds of the scheduler over its whole life up to the settled
	// writes, and of this process (API server, etcd) over the same time.
	SchedCPURun float64 `json:"schedulerCPUSecondsRun"`
	SelfCPURun  float64 `json:"apiserverCPUSecondsRun"`
	// Writes are the API server's write requests to pods and events over
	// the same time (apiserver_request_total), by "VERB group
	// resource[/subresource]".
	Writes      map[string]float64 `json:"apiWrites"`
	WritesTotal float64            `json:"apiWritesTotal"`
	// PeakRSS is the scheduler's peak resident set (VmHWM) at the end.
	PeakRSS float64 `json:"peakRSSBytes"`
	// Profile is the CPU profile's file under -out (-pprof); HeapProfile
	// the heap's, taken when the writes settled.
	Profile     string `json:"cpuProfile,omitempty"`
	HeapProfile string `json:"heapProfile,omitempty"`
}

func (r *backlogResult) summary() string {
	return fmt.Sprintf("bound pods/s avg %.1f p50 %.1f p90 %.1f (%d samples, %.1fs window), overall %.1f; bound %d, held %d/%d said held (%d by the last bind, all %.1fs after start); scheduler CPU %.2fs/1000 bound pods, %.1fs whole run; API writes %.0f; peak RSS %.0f MiB; created in %.1fs",
		r.Avg, r.P50, r.P90, len(r.Samples), r.Window, r.Overall, r.Bound, r.HeldSaid, r.Held, r.HeldSaidAtLastBind, r.HeldSaidSeconds,
		r.SchedCPUPer1000, r.SchedCPURun, r.WritesTotal, r.PeakRSS/(1<<20), r.CreateSeconds)
}

// check fails the test for what makes a run's numbers meaningless: the
// held pods not held, or not all of the others bound, no samples, no
// metrics, no writes counted. No timing is asserted.
func (r *backlogResult) check(t *testing.T, admitted int) {
	t.Helper()
	for _, e := range r.Errors {
		t.Errorf("run %d %s: %s", r.Run, r.Case, e)
	}
	if r.Bound != admitted || r.BoundAtEnd != admitted {
		t.Errorf("run %d %s: %d pods bound by the last bind, %d when the writes settled; want %d (the %d held pods never bound)", r.Run, r.Case, r.Bound, r.BoundAtEnd, admitted, r.Held)
	}
	if len(r.WrongBound) > 0 {
		t.Errorf("run %d %s: bound past what the run holds: %s", r.Run, r.Case, strings.Join(r.WrongBound, "; "))
	}
	if r.Trickle && r.HeldSaid == 0 {
		t.Errorf("run %d %s: no held pod's status said held by the last bind", r.Run, r.Case)
	}
	if !r.Trickle && r.HeldSaid != r.Held {
		t.Errorf("run %d %s: %d of %d held pods' status said held", r.Run, r.Case, r.HeldSaid, r.Held)
	}
	if r.Overall <= 0 {
		t.Errorf("run %d %s: no throughput measured", r.Run, r.Case)
	}
	if r.Metrics.AttemptScheduled.Count == 0 {
		t.Errorf("run %d %s: no scheduling attempts in /metrics", r.Run, r.Case)
	}
	if r.WritesTotal <= 0 {
		t.Errorf("run %d %s: no API writes counted (apiserver_request_total)", r.Run, r.Case)
	}
	quota := allCases[r.Case].profile == withQuota
	if quota && int(r.Metrics.Increases) != r.Bound {
		t.Errorf("run %d %s: UserQuota charged %v pods, %d were bound: is it enabled?", r.Run, r.Case, r.Metrics.Increases, r.Bound)
	}
	if !quota && r.Metrics.Increases != 0 {
		t.Errorf("run %d %s: UserQuota charged %v pods: it should not be enabled", r.Run, r.Case, r.Metrics.Increases)
	}
}

// backlogCounter follows, from a pod informer, which pods are bound and
// which pods' status says they are held (PodScheduled=False with reason).
type backlogCounter struct {
	reason   string
	admitted int
	done     chan struct{} // closed when admitted pods are bound

	mu          sync.Mutex
	bound, held map[int]bool // by pod index
	closed      bool
	first, last time.Time // first and last pod seen bound
}

func newBacklogCounter(admitted int, reason string) *backlogCounter {
	return &backlogCounter{reason: reason, admitted: admitted, done: make(chan struct{}),
		bound: map[int]bool{}, held: map[int]bool{}}
}

func (bc *backlogCounter) onChange(obj interface{}) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	i, ok := podIndex(pod.Name)
	if !ok {
		return
	}
	bc.mu.Lock()
	defer bc.mu.Unlock()
	switch {
	case pod.Spec.NodeName != "":
		delete(bc.held, i)
		if !bc.bound[i] {
			bc.bound[i] = true
			bc.last = time.Now()
			if bc.first.IsZero() {
				bc.first = bc.last
			}
		}
	case saysHeld(pod, bc.reason):
		bc.held[i] = true
	default:
		delete(bc.held, i)
	}
	if !bc.closed && len(bc.bound) >= bc.admitted {
		bc.closed = true
		close(bc.done)
	}
}

// saysHeld reports whether the pod's PodScheduled condition is False with
// reason.
func saysHeld(pod *v1.Pod, reason string) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c.Status == v1.ConditionFalse && c.Reason == reason
		}
	}
	return false
}

func (bc *backlogCounter) counts() (bound, held int) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return len(bc.bound), len(bc.held)
}

// span returns when the first and the last pod were seen bound.
func (bc *backlogCounter) span() (first, last time.Time) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return bc.first, bc.last
}

// boundIndexes returns the indexes of the bound pods.
func (bc *backlogCounter) boundIndexes() []int {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	out := make([]int, 0, len(bc.bound))
	for i := range bc.bound {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// trickleWithin is how long a backlog run waits for its holds' status
// writes after the last bind; slower, they trickle past the run.
const trickleWithin = 5 * time.Minute

// trickles reports whether the backlog case's status writes (a patch and
// an event per held pod) go on past its last bind: at the plugin's
// default rate (-status-qps 0), or at one too low to write them all
// within trickleWithin (-status-qps 1: almost no writes in the binding
// window). The run then ends after its last bind and counts the writes
// made by then.
func trickles(held int) bool {
	return *statusQPS <= 0 || float64(2*held)/float64(*statusQPS) > trickleWithin.Seconds()
}

// runBacklog runs one backlog or floor case once: create the pods (the
// held ones gated in the floor), start the scheduler, sample until the
// pods that may bind are bound, wait until every held pod's status says
// held and the API server's writes settle, scrape /metrics, stop, delete
// the pods.
func (c *cluster) runBacklog(t *testing.T, w workload, pc perfCase, n, held, run, order int) *backlogResult {
	t.Helper()
	admitted := n - held
	label := fmt.Sprintf("run %d %s", run, pc.name)
	r := &backlogResult{runResult: runResult{Case: pc.name, Run: run, Order: order, Pods: n}, Held: held}
	// The floor's scheduler does not read it; the same config keeps the
	// cases alike.
	c.setQueueConfig(w.backlogConfig(admitted))
	var edit func(int, *v1.Pod)
	reason := userquota.ReasonQuotaHeld
	if pc.gated {
		reason = v1.PodReasonSchedulingGated
		edit = func(i int, pod *v1.Pod) {
			if i >= admitted {
				pod.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: parkedGate}}
			}
		}
	}
	r.CreateSeconds = c.createPods(w, n, edit).Seconds()

	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	counter := newBacklogCounter(admitted, reason)
	c.watchPods(ctx, t, cache.ResourceEventHandlerFuncs{
		AddFunc:    counter.onChange,
		UpdateFunc: func(_, obj interface{}) { counter.onChange(obj) },
	})

	dir := runDir(t, fmt.Sprintf("backlog%d-%s", run, pc.name))
	var args map[string]any
	if pc.profile == withQuota && *statusQPS > 0 {
		args = map[string]any{"statusQPS": *statusQPS, "statusBurst": *statusQPS}
	}
	// Writes are counted from here: the pods exist, no scheduler runs.
	writes0, err := c.apiWrites(ctx)
	if err != nil {
		t.Fatalf("%s: API server request counters: %v", label, err)
	}
	self0 := selfCPU()
	s := c.startSchedulerWith(pc.profile, dir, args)
	profile := filepath.Join("pprof", fmt.Sprintf("run%d-%s.pb.gz", run, pc.name))
	ticks, final, waitProfile := sampleRun(ctx, t, s, label, profile, n, counter.done, func() (int, int) {
		b, _ := counter.counts()
		return b, 0
	})
	if *pprofFlag > 0 && *outDir != "" {
		r.Profile = profile
	}
	_, r.HeldSaidAtLastBind = counter.counts()
	r.analyze(ticks, final)
	r.Bound, r.SchedCPUTotal = final.bound, final.schedCPU
	first, last := counter.span()
	r.StartToFirstBind = first.Sub(s.StartedAt()).Seconds()
	if span := last.Sub(first); span > 0 && r.Bound > 1 {
		r.Overall = float64(r.Bound-1) / span.Seconds()
	}

	var writes1 map[string]float64
	r.Trickle = pc.profile == withQuota && !pc.gated && trickles(held)
	if r.Trickle {
		// The plugin's own 20 writes/s go on for an hour: count what was
		// written by now, and the held pods whose status says so.
		writes1, err = c.apiWrites(ctx)
		_, r.HeldSaid = counter.counts()
	} else {
		// Every held pod's status says so (the floor's at creation;
		// backlog's once the plugin's writer got to it).
		err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, *runTimeout, true, func(context.Context) (bool, error) {
			if !s.Running() {
				t.Fatalf("%s: scheduler exited: %v\n%s", label, s.ExitStatus(), s.LogTail(40))
			}
			_, h := counter.counts()
			return h >= held, nil
		})
		if err != nil {
			_, h := counter.counts()
			r.Errors = append(r.Errors, fmt.Sprintf("after %s only %d of %d held pods' status said %s", *runTimeout, h, held, reason))
		}
		r.HeldSaidSeconds = time.Since(s.StartedAt()).Seconds()
		writes1, err = c.settledWrites(ctx)
	}
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
	r.RunSeconds = time.Since(s.StartedAt()).Seconds()
	r.SchedCPURun, _ = s.cpuSeconds()
	r.SelfCPURun = selfCPU() - self0
	r.Writes = map[string]float64{}
	for k, v := range writes1 {
		if d := v - writes0[k]; d != 0 {
			r.Writes[k] = d
			r.WritesTotal += d
		}
	}
	waitProfile()
	if *pprofFlag > 0 && *outDir != "" {
		r.HeapProfile = filepath.Join("pprof", fmt.Sprintf("run%d-%s-heap.pb.gz", run, pc.name))
		if err := s.heapProfile(ctx, r.HeapProfile); err != nil {
			r.Errors = append(r.Errors, fmt.Sprintf("heap profile: %v", err))
		}
	}
	r.PeakRSS = s.peakRSSBytes()
	r.Metrics.RSS = s.rssBytes()
	raw, m, err := s.metrics(ctx)
	if err != nil {
		r.Errors = append(r.Errors, fmt.Sprintf("scraping /metrics: %v", err))
	} else {
		rss := r.Metrics.RSS
		r.Metrics = extractMetrics(m)
		r.Metrics.RSS = rss
		writeRaw(filepath.Join("metrics", fmt.Sprintf("run%d-%s.txt", run, pc.name)), raw)
	}
	s.stop()
	cancel()

	var heldSaid int
	r.BoundAtEnd, heldSaid = counter.counts()
	if !r.Trickle {
		r.HeldSaid = heldSaid
	}
	r.WrongBound = wrongBound(w, counter.boundIndexes(), admitted, pc.gated)
	c.betweenRuns(label)
	return r
}

// wrongBound lists, up to 10, what bound that should have stayed held: in
// the floor a gated pod (index >= admitted), with UserQuota a user with
// more pods bound than its limit (its pods among the first admitted).
func wrongBound(w workload, bound []int, admitted int, gated bool) []string {
	var out []string
	if gated {
		for _, i := range bound {
			if i >= admitted && len(out) < 10 {
				out = append(out, fmt.Sprintf("pod-%06d (gated)", i))
			}
		}
		return out
	}
	perUser := map[int]int{}
	for _, i := range bound {
		perUser[i%w.Users]++
	}
	for u := 0; u < w.Users && len(out) < 10; u++ {
		if got, limit := perUser[u], w.podsOf(u, admitted); got > limit {
			out = append(out, fmt.Sprintf("%s: %d pods bound, limit %d", w.User(u), got, limit))
		}
	}
	return out
}

// writeVerbs and writeResources select the API writes counted: every
// write verb on pods (with subresources: status, binding) and on events
// (core and events.k8s.io).
var (
	writeVerbs     = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true}
	writeResources = map[string]bool{"pods": true, "events": true}
)

// apiWrites reads the API server's apiserver_request_total (its own
// /metrics) for the counted writes, by "VERB group resource[/subresource]"
// (group "core" for the core API), summed over response codes.
func (c *cluster) apiWrites(ctx context.Context) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	raw, err := c.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	m, err := parseMetrics(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, s := range m["apiserver_request_total"] {
		l := s.labels
		if !writeVerbs[l["verb"]] || !writeResources[l["resource"]] {
			continue
		}
		group := l["group"]
		if group == "" {
			group = "core"
		}
		res := l["resource"]
		if l["subresource"] != "" {
			res += "/" + l["subresource"]
		}
		out[l["verb"]+" "+group+" "+res] += s.value
	}
	return out, nil
}

// settledWrites polls apiWrites every second until their total has not
// changed for two seconds (events are sent asynchronously after the
// status writes), at most two minutes.
func (c *cluster) settledWrites(ctx context.Context) (map[string]float64, error) {
	total := func(m map[string]float64) float64 {
		x := 0.0
		for _, v := range m {
			x += v
		}
		return x
	}
	var last map[string]float64
	still := 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		m, err := c.apiWrites(ctx)
		if err != nil {
			return false, fmt.Errorf("API server request counters: %v", err)
		}
		if last != nil && total(m) == total(last) {
			still++
		} else {
			still = 0
		}
		last = m
		return still >= 2, nil
	})
	if wait.Interrupted(err) {
		return last, fmt.Errorf("API writes still changing after 2 minutes")
	}
	return last, err
}
