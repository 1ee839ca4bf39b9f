package perf

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/userquota/userquota/test/internal/controlplane"
)

// profile says which plugins the scheduler runs.
type profile string

const (
	// baseline: kube-scheduler's default plugins; UserQuota is registered
	// (it is the same binary) but not enabled.
	baseline profile = "baseline"
	// withQuota: UserQuota at PreFilter and Reserve on top of the defaults.
	withQuota profile = "userquota"
)

// schedulerConfig is the KubeSchedulerConfiguration of a run: the same for
// both profiles but for the plugins block. The client QPS is raised so the
// client limiter is not the ceiling; restAddress "" and no leader election
// as for one process on a laptop (hack/local-up.sh does the same).
func schedulerConfig(kubeconfig string, p profile, qps int) []byte {
	return controlplane.SchedulerConfig{Kubeconfig: kubeconfig, QPS: qps, Burst: qps, UserQuota: p == withQuota,
		Args: map[string]any{
			"configMapNamespace":  configNamespace,
			"configMapName":       controlplane.QueueConfigMap,
			"restAddress":         "",
			"leaderElectionLease": "",
		}}.YAML()
}

// binary is the copy of -scheduler every run executes, made at first use:
// a `make build` elsewhere during a benchmark must not change the binary
// between runs.
var binary struct {
	once sync.Once
	path string
	sum  string // sha256, first 12 hex digits
	err  error
}

func binaryCopy(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		dir, err := os.MkdirTemp("", "userquota-perf-bin")
		if err != nil {
			binary.err = err
			return
		}
		binary.path = filepath.Join(dir, "userquota-scheduler")
		if binary.sum, err = controlplane.CopyBinary(*schedulerBin, binary.path); err != nil {
			binary.err = fmt.Errorf("scheduler binary: %v (run make build, or pass -scheduler)", err)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// schedulerProcess is a running bin/userquota-scheduler.
type schedulerProcess struct {
	*controlplane.Scheduler
	token string // reads /metrics and /debug/pprof
}

// startScheduler runs the binary with the profile's config; its HTTPS
// server (metrics) on a free loopback port, authenticated and authorized
// through the API server with the harness's own token.
func (c *cluster) startScheduler(p profile, dir string) *schedulerProcess {
	c.t.Helper()
	return c.startSchedulerWith(p, dir, nil)
}

// startSchedulerWith is startScheduler with more UserQuota args (numbers
// allowed).
func (c *cluster) startSchedulerWith(p profile, dir string, args map[string]any) *schedulerProcess {
	c.t.Helper()
	cfg := schedulerConfig(c.kubeconfig, p, *qpsFlag)
	if len(args) > 0 {
		var err error
		if cfg, err = controlplane.WithUserQuotaArgs(cfg, args); err != nil {
			c.t.Fatal(err)
		}
	}
	sched, err := controlplane.NewScheduler(controlplane.SchedulerOptions{
		Name: "scheduler", Binary: binaryCopy(c.t), LogDir: dir, Verbosity: *verbosity,
		Config: cfg, ConfigFile: filepath.Join(dir, "scheduler-config.yaml"),
		Kubeconfig: c.kubeconfig,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	s := &schedulerProcess{Scheduler: sched, token: c.token}
	if err := s.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(s.stop)
	return s
}

// stop sends SIGTERM, then SIGKILL after 10 s, and waits for the exit.
func (s *schedulerProcess) stop() { s.Stop(10 * time.Second) }

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux architecture Go supports.
const clockTicks = 100

// cpuSeconds returns the user+system CPU time of the process, all threads.
func (s *schedulerProcess) cpuSeconds() (float64, error) {
	return procCPU(s.Pid())
}

func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: fields after its ')'.
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return (utime + stime) / clockTicks, nil
}

// selfCPU returns this process's CPU time (API server, etcd, harness).
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// rssBytes returns the process's resident set size.
func (s *schedulerProcess) rssBytes() float64 { return procRSS(s.Pid()) }

// peakRSSBytes returns the process's peak resident set size so far.
func (s *schedulerProcess) peakRSSBytes() float64 { return procStatusBytes(s.Pid(), "VmHWM:") }

// procRSS returns a process's resident set size from /proc.
func procRSS(pid int) float64 { return procStatusBytes(pid, "VmRSS:") }

// procStatusBytes returns a size in kB of /proc/PID/status (VmRSS:,
// VmHWM: the peak RSS) in bytes.
func procStatusBytes(pid int, key string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return math.NaN()
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, key) {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb * 1024
			}
		}
	}
	return math.NaN()
}

// metrics scrapes the scheduler's /metrics: the text and its samples.
func (s *schedulerProcess) metrics(ctx context.Context) ([]byte, metricSet, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	code, b, err := s.Get(ctx, "/metrics", s.token)
	if err != nil {
		return nil, nil, err
	}
	if code != http.StatusOK {
		return nil, nil, fmt.Errorf("GET /metrics: %d %s: %.300s", code, http.StatusText(code), b)
	}
	m, err := parseMetrics(bytes.NewReader(b))
	return b, m, err
}

// cpuProfile fetches /debug/pprof/profile for d and writes it under -out;
// beside it over the same span, with -pprof-block, the scheduler's block
// profile (blockProfileName) and, with -pprof-self, this process's CPU
// profile (selfProfileName).
func (s *schedulerProcess) cpuProfile(ctx context.Context, d time.Duration, name string) error {
	secs := int(d.Seconds())
	beside := []func() error{}
	if *pprofBlock {
		beside = append(beside, func() error {
			return s.profile(ctx, fmt.Sprintf("/debug/pprof/block?seconds=%d", secs), d+30*time.Second, blockProfileName(name))
		})
	}
	if *pprofSelf {
		beside = append(beside, func() error { return selfCPUProfile(ctx, d, selfProfileName(name)) })
	}
	errs := make([]error, len(beside)+1)
	var wg sync.WaitGroup
	for i, f := range beside {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i+1] = f()
		}()
	}
	errs[0] = s.profile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), d+30*time.Second, name)
	wg.Wait()
	return errors.Join(errs...)
}

// selfCPUProfile records this process's CPU for d (the API server, etcd
// and the harness run in it) and writes it under -out as name.
func selfCPUProfile(ctx context.Context, d time.Duration, name string) error {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return fmt.Errorf("this process's CPU profile: %w", err)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	pprof.StopCPUProfile()
	writeRaw(name, buf.Bytes())
	return nil
}

// selfProfileName is this process's CPU profile beside the scheduler's
// name (runN-CASE.pb.gz -> runN-CASE-self.pb.gz).
func selfProfileName(name string) string {
	return strings.TrimSuffix(name, ".pb.gz") + "-self.pb.gz"
}

// blockProfileName is the block profile's file beside the CPU profile
// name (runN-CASE.pb.gz -> runN-CASE-block.pb.gz).
func blockProfileName(name string) string {
	return strings.TrimSuffix(name, ".pb.gz") + "-block.pb.gz"
}

// The -pprof-from values.
const (
	pprofFromBind  = "bind"
	pprofFromStart = "start"
)

// cpuProfileOnceServed is cpuProfile, tried again every 100 ms for up to
// 30 s while the scheduler does not answer yet (just started).
func (s *schedulerProcess) cpuProfileOnceServed(ctx context.Context, d time.Duration, name string) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		// The outer ctx: the poll's own ends after 30 s, the profile may not.
		last = s.cpuProfile(ctx, d, name)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// heapProfile fetches /debug/pprof/heap after a garbage collection (gc=1:
// in-use figures are what is live) and writes it under -out.
func (s *schedulerProcess) heapProfile(ctx context.Context, name string) error {
	return s.profile(ctx, "/debug/pprof/heap?gc=1", 30*time.Second, name)
}

func (s *schedulerProcess) profile(ctx context.Context, path string, timeout time.Duration, name string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	code, b, err := s.Get(ctx, path, s.token)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s: %.300s", path, code, http.StatusText(code), b)
	}
	writeRaw(name, b)
	return nil
}

// sample is one series of a Prometheus text exposition.
type sample struct {
	labels map[string]string
	value  float64
}

// metricSet holds the samples by metric name (histograms as their
// _bucket, _sum and _count series).
type metricSet map[string][]sample

// parseMetrics reads the Prometheus text format (what kube-scheduler
// serves): comments skipped, one sample a line.
func parseMetrics(r io.Reader) (metricSet, error) {
	out := metricSet{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, rest := line, map[string]string{}, ""
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				return nil, fmt.Errorf("bad metric line %q", line)
			}
			name, rest = line[:i], strings.TrimSpace(line[j+1:])
			parseLabels(line[i+1:j], labels)
		} else {
			f := strings.Fields(line)
			if len(f) < 2 {
				return nil, fmt.Errorf("bad metric line %q", line)
			}
			name, rest = f[0], f[1]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("bad metric line %q", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("bad value in %q: %v", line, err)
		}
		out[name] = append(out[name], sample{labels: labels, value: v})
	}
	return out, sc.Err()
}

func parseLabels(s string, into map[string]string) {
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return
		}
		key := strings.TrimSpace(strings.TrimPrefix(s[:eq], ","))
		var val strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			val.WriteByte(s[i])
		}
		into[key] = val.String()
		s = strings.TrimPrefix(s[min(i+1, len(s)):], ",")
	}
}

// match reports whether a sample has every label of want.
func (s sample) match(want map[string]string) bool {
	for k, v := range want {
		if s.labels[k] != v {
			return false
		}
	}
	return true
}

// sum adds the values of a metric's samples matching want.
func (m metricSet) sum(name string, want map[string]string) float64 {
	total := 0.0
	for _, s := range m[name] {
		if s.match(want) {
			total += s.value
		}
	}
	return total
}

// histogram is a Prometheus histogram summed over the series matching a
// label set.
type histogram struct {
	count, sum float64
	bounds     []float64 // upper bounds, ascending, +Inf last
	cumulative []float64
}

func (m metricSet) histogram(name string, want map[string]string) histogram {
	h := histogram{count: m.sum(name+"_count", want), sum: m.sum(name+"_sum", want)}
	byBound := map[float64]float64{}
	for _, s := range m[name+"_bucket"] {
		if !s.match(want) {
			continue
		}
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if err != nil {
			continue
		}
		byBound[le] += s.value
	}
	for le := range byBound {
		h.bounds = append(h.bounds, le)
	}
	sort.Float64s(h.bounds)
	for _, le := range h.bounds {
		h.cumulative = append(h.cumulative, byBound[le])
	}
	return h
}

func (h histogram) mean() float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.sum / h.count
}

// quantile estimates the q-quantile as Prometheus' histogram_quantile
// does: linear within the bucket that holds it.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 || len(h.bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.count
	lower, below := 0.0, 0.0
	for i, le := range h.bounds {
		if h.cumulative[i] >= rank {
			if math.IsInf(le, 1) {
				return lower
			}
			inBucket := h.cumulative[i] - below
			if inBucket == 0 {
				return le
			}
			return lower + (le-lower)*(rank-below)/inBucket
		}
		lower, below = le, h.cumulative[i]
	}
	return lower
}
