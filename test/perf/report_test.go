package perf

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// report is what a test writes to -out: its markdown and results.json.
type report struct {
	Machine  string            `json:"machine"`
	Binary   string            `json:"schedulerBinarySHA256"`
	Flags    string            `json:"flags"`
	Runs     []*runResult      `json:"runs,omitempty"`
	Recovery []*recoveryResult `json:"recovery,omitempty"`
	Backlog  []*backlogResult  `json:"backlog,omitempty"`
	// RecoveryCreate is how long creating the recovery pods took, and
	// ServerRSS this process's RSS (API server, etcd) after it.
	RecoveryCreate float64 `json:"recoveryCreateSeconds,omitempty"`
	ServerRSS      float64 `json:"apiserverRSSBytes,omitempty"`
}

// describeMachine says what the numbers ran on: cores, CPU model, load.
func describeMachine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if _, v, ok := strings.Cut(l, ":"); ok {
					model = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			load = fmt.Sprintf(", load average %s %s %s at start", f[0], f[1], f[2])
		}
	}
	kernel := ""
	if out, err := exec.Command("uname", "-r").Output(); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("%d cores (nproc), %s, %s%s%s, %s", runtime.NumCPU(), model, runtime.Version(), kernel, load, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}

// flagsLine lists the flags the test ran with (those set explicitly).
func flagsLine() string {
	var parts []string
	flag.Visit(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "test.") {
			return
		}
		parts = append(parts, fmt.Sprintf("-%s=%s", f.Name, f.Value))
	})
	return strings.Join(parts, " ")
}

// writeOut writes text to -out/name and the report as JSON beside it.
func writeOut(t *testing.T, name, text string, rep *report) {
	if *outDir == "" {
		return
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*outDir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	zeroNaN(reflect.ValueOf(rep))
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(name, filepath.Ext(name))
	if err := os.WriteFile(filepath.Join(*outDir, base+".json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
}

// zeroNaN sets every NaN float reachable from v to 0: JSON has no NaN
// (a histogram with no sample has no mean).
func zeroNaN(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			zeroNaN(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			// An embedded struct's fields are encoded as the outer
			// struct's, even when its type is unexported.
			if f := v.Type().Field(i); f.IsExported() || f.Anonymous {
				zeroNaN(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			zeroNaN(v.Index(i))
		}
	case reflect.Float64:
		if math.IsNaN(v.Float()) && v.CanSet() {
			v.SetFloat(0)
		}
	}
}

// writeRaw writes a file under -out (the scheduler's /metrics of a run).
func writeRaw(name string, data []byte) {
	if *outDir == "" {
		return
	}
	path := filepath.Join(*outDir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		_ = os.WriteFile(path, data, 0o644)
	}
}

func sortFloats(xs []float64) { sort.Float64s(xs) }

// spread formats the median of xs with its range over runs.
func spread(xs []float64, format string) string {
	var ok []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			ok = append(ok, x)
		}
	}
	xs = ok
	s := stats(xs)
	if len(xs) == 0 {
		return "n/a"
	}
	if len(xs) == 1 {
		return fmt.Sprintf(format, s.median())
	}
	return fmt.Sprintf(format+" ["+format+"–"+format+"]", s.median(), s.min, s.max)
}

func micro(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", x*1e6)
}

// throughputMarkdown renders the tables of docs/throughput.md.
func (rep *report) throughputMarkdown(cs []perfCase) string {
	var b strings.Builder
	byCase := map[string][]*runResult{}
	for _, r := range rep.Runs {
		byCase[r.Case] = append(byCase[r.Case], r)
	}
	col := func(rs []*runResult, f func(*runResult) float64) []float64 {
		out := make([]float64, 0, len(rs))
		for _, r := range rs {
			out = append(out, f(r))
		}
		return out
	}
	fmt.Fprintf(&b, "Machine: %s.\n\nFlags: `%s`; scheduler binary sha256 %s.\n\n", rep.Machine, rep.Flags, rep.Binary)

	b.WriteString("Pods/s from per-second samples of the bound-pod count (scheduler_perf's method: avg, p50, p90, p99 of the samples of a run); overall is bound pods over the time from the first bind to the last. Each cell is the median over runs [min–max]. CPU is user+system seconds from /proc over the sampled window, per 1000 pods decided in it.\n\n")
	b.WriteString("| case | runs | avg pods/s | p50 | p90 | p99 | overall pods/s | decisions/s (bound+refused) | window s | start→first bind s | scheduler CPU s/1000 pods | API server+etcd CPU s/1000 pods |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cs {
		rs := byCase[c.name]
		if len(rs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.name, len(rs),
			spread(col(rs, func(r *runResult) float64 { return r.Avg }), "%.0f"),
			spread(col(rs, func(r *runResult) float64 { return r.P50 }), "%.0f"),
			spread(col(rs, func(r *runResult) float64 { return r.P90 }), "%.0f"),
			spread(col(rs, func(r *runResult) float64 { return r.P99 }), "%.0f"),
			spread(col(rs, func(r *runResult) float64 { return r.Overall }), "%.0f"),
			spread(col(rs, func(r *runResult) float64 { return r.DecAvg }), "%.0f"),
			spread(col(rs, func(r *runResult) float64 { return r.Window }), "%.0f"),
			spread(col(rs, func(r *runResult) float64 { return r.StartToFirstBind }), "%.1f"),
			spread(col(rs, func(r *runResult) float64 { return r.SchedCPUPer1000 }), "%.2f"),
			spread(col(rs, func(r *runResult) float64 { return r.SelfCPUPer1000 }), "%.2f"))
	}

	// Paired ratios: each run's cases ran back to back. The table goes
	// to pr, after the summary of its medians.
	var pr strings.Builder
	pr.WriteString("Ratios per run (average pods/s of the run's cases; the refused case counts bound pods only):\n\n")
	pr.WriteString("| run | order | baseline | userquota | refused | control | userquota/baseline | refused/userquota | refused/baseline | control/baseline (A/A) | scheduler CPU/pod userquota/baseline |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	var ratioQ, ratioR, ratioRB, ratioC, ratioCPU []float64
	runs := map[int]map[string]*runResult{}
	var runIDs []int
	for _, r := range rep.Runs {
		if runs[r.Run] == nil {
			runs[r.Run] = map[string]*runResult{}
			runIDs = append(runIDs, r.Run)
		}
		runs[r.Run][r.Case] = r
	}
	// The average of the samples; a run too short for samples (a smoke
	// run) falls back to its overall rate.
	rate := func(r *runResult) float64 {
		if math.IsNaN(r.Avg) {
			return r.Overall
		}
		return r.Avg
	}
	avg := func(r *runResult) string {
		if r == nil {
			return "–"
		}
		return fmt.Sprintf("%.0f", rate(r))
	}
	ratio := func(a, b *runResult, into *[]float64) string {
		if a == nil || b == nil || rate(b) == 0 {
			return "–"
		}
		x := rate(a) / rate(b)
		*into = append(*into, x)
		return fmt.Sprintf("%.3f", x)
	}
	cpuRatio := func(a, b *runResult, into *[]float64) string {
		if a == nil || b == nil || b.SchedCPUPer1000 == 0 {
			return "–"
		}
		x := a.SchedCPUPer1000 / b.SchedCPUPer1000
		*into = append(*into, x)
		return fmt.Sprintf("%.3f", x)
	}
	for _, id := range runIDs {
		m := runs[id]
		order := runOrder(m, cs)
		fmt.Fprintf(&pr, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", id, order,
			avg(m["baseline"]), avg(m["userquota"]), avg(m["refused"]), avg(m["control"]),
			ratio(m["userquota"], m["baseline"], &ratioQ), ratio(m["refused"], m["userquota"], &ratioR),
			ratio(m["refused"], m["baseline"], &ratioRB), ratio(m["control"], m["baseline"], &ratioC), cpuRatio(m["userquota"], m["baseline"], &ratioCPU))
	}
	sd := func(xs []float64) string {
		s := stats(xs)
		if len(xs) < 2 {
			return ""
		}
		return fmt.Sprintf(", sd %.3f", s.stdev)
	}
	fmt.Fprintf(&pr, "| **median [min–max]** | | | | | | **%s**%s | **%s**%s | %s%s | %s%s | %s%s |\n",
		spread(ratioQ, "%.3f"), sd(ratioQ), spread(ratioR, "%.3f"), sd(ratioR), spread(ratioRB, "%.3f"), sd(ratioRB),
		spread(ratioC, "%.3f"), sd(ratioC), spread(ratioCPU, "%.3f"), sd(ratioCPU))

	// The summary: each ratio beside the A/A control's, so a reader can
	// judge whether this machine resolves it.
	b.WriteString("\nSummary, paired per run (median [min–max] over runs, sd):\n\n")
	aa := "no A/A control in this run (add `control` to -case)"
	if len(ratioC) > 0 {
		aa = fmt.Sprintf("%s%s", spread(ratioC, "%.3f"), sd(ratioC))
	}
	if len(ratioR) > 0 {
		fmt.Fprintf(&b, "- refused/userquota bound pods/s (%.0f %% of users at their limit against all admitted; target >= 0.95): **%s**%s\n", *atLimitFlag*100, spread(ratioR, "%.3f"), sd(ratioR))
	}
	if len(ratioQ) > 0 {
		fmt.Fprintf(&b, "- userquota/baseline pods/s (target >= 0.97): **%s**%s; scheduler CPU per pod userquota/baseline %s%s\n", spread(ratioQ, "%.3f"), sd(ratioQ), spread(ratioCPU, "%.3f"), sd(ratioCPU))
	}
	fmt.Fprintf(&b, "- A/A control/baseline pods/s (two identical cases: the spread any ratio above has here): %s\n\n", aa)
	b.WriteString(pr.String())

	b.WriteString("\nExtension points, from the scheduler's /metrics at the end of each run (median over runs of each run's mean, in µs). `UserQuota` columns are `scheduler_plugin_execution_duration_seconds{plugin=\"UserQuota\"}` (the framework times a 10 % sample of cycles); the others are `scheduler_framework_extension_point_duration_seconds` over all plugins of the profile, every cycle. p50/p99 are interpolated in the histogram's buckets (coarse below 15 µs).\n\n")
	b.WriteString("| case | UserQuota PreFilter mean / p50 / p99 µs (samples) | UserQuota Reserve mean / p50 / p99 µs (samples) | PreFilter (all plugins) µs | Filter µs | Score µs | Reserve (all) µs | algorithm µs | attempt incl. binding, ms | refused attempt µs | refusals | client limiter wait µs (mean) | heap in use MiB |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	med := func(rs []*runResult, f func(*runResult) float64) float64 { return stats(col(rs, f)).median() }
	for _, c := range cs {
		rs := byCase[c.name]
		if len(rs) == 0 {
			continue
		}
		q := func(f func(*runMetrics) histSummary) string {
			count := med(rs, func(r *runResult) float64 { return f(&r.Metrics).Count })
			if count == 0 {
				return "–"
			}
			return fmt.Sprintf("%s / %s / %s (%.0f)", micro(med(rs, func(r *runResult) float64 { return f(&r.Metrics).Mean })),
				micro(med(rs, func(r *runResult) float64 { return f(&r.Metrics).P50 })),
				micro(med(rs, func(r *runResult) float64 { return f(&r.Metrics).P99 })), count)
		}
		mean := func(f func(*runMetrics) histSummary) string {
			return micro(med(rs, func(r *runResult) float64 { return f(&r.Metrics).Mean }))
		}
		ms := func(f func(*runMetrics) histSummary) string {
			x := med(rs, func(r *runResult) float64 { return f(&r.Metrics).Mean })
			if math.IsNaN(x) {
				return "–"
			}
			return fmt.Sprintf("%.2f", x*1e3)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %s | %.0f |\n", c.name,
			q(func(m *runMetrics) histSummary { return m.QuotaPreFilter }),
			q(func(m *runMetrics) histSummary { return m.QuotaReserve }),
			mean(func(m *runMetrics) histSummary { return m.PreFilter }),
			mean(func(m *runMetrics) histSummary { return m.Filter }),
			mean(func(m *runMetrics) histSummary { return m.Score }),
			mean(func(m *runMetrics) histSummary { return m.Reserve }),
			mean(func(m *runMetrics) histSummary { return m.Algorithm }),
			ms(func(m *runMetrics) histSummary { return m.AttemptScheduled }),
			mean(func(m *runMetrics) histSummary { return m.AttemptUnschedulable }),
			med(rs, func(r *runResult) float64 { return r.Metrics.Refusals }),
			mean(func(m *runMetrics) histSummary { return m.LimiterWait }),
			med(rs, func(r *runResult) float64 { return r.Metrics.HeapInuse })/(1<<20))
	}
	return b.String()
}

// backlogMarkdown renders TestBacklog's report: the cases, the targets
// beside the A/A control's spread, each run paired with the floor of the
// same run, and the API writes counted.
func (rep *report) backlogMarkdown(cs []perfCase, n, held int) string {
	var b strings.Builder
	byCase := map[string][]*backlogResult{}
	runs := map[int]map[string]*backlogResult{}
	var runIDs []int
	for _, r := range rep.Backlog {
		byCase[r.Case] = append(byCase[r.Case], r)
		if runs[r.Run] == nil {
			runs[r.Run] = map[string]*backlogResult{}
			runIDs = append(runIDs, r.Run)
		}
		runs[r.Run][r.Case] = r
	}
	col := func(rs []*backlogResult, f func(*backlogResult) float64) []float64 {
		out := make([]float64, 0, len(rs))
		for _, r := range rs {
			out = append(out, f(r))
		}
		return out
	}
	statusClient := fmt.Sprintf("the plugin's defaults (statusQPS 20, statusBurst 50, and statusBusyQPS 1 while pods bind), as shipped: the holds' %d writes trickle for about %.0f s, so a backlog run ends after its last bind and its API writes are counted up to then, per held pod whose status said held by then", 2*held, float64(2*held)/20)
	switch {
	case *statusQPS > 0 && trickles(held):
		statusClient = fmt.Sprintf("statusQPS and statusBurst %d (-status-qps; statusBusyQPS 1 while pods bind, below it): the holds' %d writes trickle for about %.0f s, so a backlog run ends after its last bind and its API writes are counted up to then", *statusQPS, 2*held, float64(2*held)/float64(*statusQPS))
	case *statusQPS > 0:
		statusClient = fmt.Sprintf("statusQPS and statusBurst %d (-status-qps; statusBusyQPS 1 while pods bind, below it; at the plugin's default of 20/s the holds' %d writes would take about %.0f s)", *statusQPS, 2*held, float64(2*held)/20)
	}
	fmt.Fprintf(&b, "Machine: %s.\n\nFlags: `%s`; scheduler binary sha256 %s.\n\n", rep.Machine, rep.Flags, rep.Binary)
	fmt.Fprintf(&b, "%d pods a run, of which %d are held for the whole run and %d bind. **backlog**: UserQuota enabled; each user's limit admits its pods among the first %d, the rest are over quota and held at PreEnqueue. **floor**: the same pods, the %d parked by a `%s` scheduling gate, the scheduler without UserQuota (baseline profile); **floor-control** is the floor again (A/A). UserQuota's status client in backlog: %s.\n\n",
		n, held, n-held, n-held, held, parkedGate, statusClient)
	if slices.ContainsFunc(cs, func(c perfCase) bool { return c.name == "gated-quota" }) {
		b.WriteString("**gated-quota**: the floor's pods with UserQuota enabled: it charges the pods that bind and holds none. The summary below pairs only the backlog and the floor-control with the floor; `go run ./test/perf/paired -report=DIR/backlog.json -against=floor` pairs every case.\n\n")
	}
	b.WriteString("Pods/s: TestThroughput's samples of the bound-pod count (avg, p50, p90 of a run), over the pods that bind; overall is bound pods over the time from the first bind to the last. CPU per bound pod: user+system CPU of the scheduler (from /proc) over the sampled window, in ms per bound pod (= s per 1000). " +
		"API writes: the in-process API server's `apiserver_request_total`, every response code, verbs POST, PUT, PATCH, APPLY and DELETE on `pods` (with subresources: `pods/status`, `pods/binding`) and on `events` (core and `events.k8s.io`), from after the pods were created, before the scheduler starts, until every held pod's status says held (QuotaHeld in backlog; SchedulingGated, set at creation, in the floor) and the counters have not moved for 2 s. " +
		"Per held pod: (the case − the floor of the same run) / held pods. Memory: the scheduler's peak RSS (VmHWM) and Go heap in use (its /metrics) at the end of the run. Each cell is the median over runs [min–max].\n\n")

	b.WriteString("| case | runs | bound | held, status said held | avg bound pods/s | p50 | p90 | overall | window s | start→first bind s | scheduler CPU ms/bound pod | API server+etcd CPU ms/bound pod | held said held by the last bind | all said held, s after start | scheduler CPU s, whole run | API writes | peak RSS MiB | heap in use MiB | attempts scheduled / unschedulable | UserQuota holds / status writes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cs {
		rs := byCase[c.name]
		if len(rs) == 0 {
			continue
		}
		f := func(format string, g func(*backlogResult) float64) string { return spread(col(rs, g), format) }
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s |\n", c.name, len(rs),
			f("%.0f", func(r *backlogResult) float64 { return float64(r.Bound) }),
			f("%.0f", func(r *backlogResult) float64 { return float64(r.HeldSaid) }),
			f("%.0f", func(r *backlogResult) float64 { return r.Avg }),
			f("%.0f", func(r *backlogResult) float64 { return r.P50 }),
			f("%.0f", func(r *backlogResult) float64 { return r.P90 }),
			f("%.0f", func(r *backlogResult) float64 { return r.Overall }),
			f("%.0f", func(r *backlogResult) float64 { return r.Window }),
			f("%.1f", func(r *backlogResult) float64 { return r.StartToFirstBind }),
			f("%.2f", func(r *backlogResult) float64 { return r.SchedCPUPer1000 }),
			f("%.2f", func(r *backlogResult) float64 { return r.SelfCPUPer1000 }),
			f("%.0f", func(r *backlogResult) float64 { return float64(r.HeldSaidAtLastBind) }),
			f("%.0f", func(r *backlogResult) float64 {
				if r.Trickle {
					return math.NaN() // not waited for
				}
				return r.HeldSaidSeconds
			}),
			f("%.1f", func(r *backlogResult) float64 { return r.SchedCPURun }),
			f("%.0f", func(r *backlogResult) float64 { return r.WritesTotal }),
			f("%.0f", func(r *backlogResult) float64 { return r.PeakRSS / (1 << 20) }),
			f("%.0f", func(r *backlogResult) float64 { return r.Metrics.HeapInuse / (1 << 20) }),
			f("%.0f", func(r *backlogResult) float64 { return r.Metrics.AttemptScheduled.Count }),
			f("%.0f", func(r *backlogResult) float64 { return r.Metrics.AttemptUnschedulable.Count }),
			f("%.0f", func(r *backlogResult) float64 { return r.Metrics.Holds }),
			f("%.0f", func(r *backlogResult) float64 { return r.Metrics.StatusWrites }))
	}

	// Each measure of a case against the floor of its run: backlog's, and
	// floor-control's (A/A) for the spread.
	rate := func(r *backlogResult) float64 {
		if math.IsNaN(r.Avg) {
			return r.Overall
		}
		return r.Avg
	}
	perHeld := func(r *backlogResult) float64 { return float64(r.Held) }
	// Writes per held pod: per pod written (all of them unless Trickle).
	perWritten := func(r *backlogResult) float64 { return float64(r.HeldSaid) }
	measures := []struct {
		name, target, format string
		f                    func(a, floor *backlogResult) float64
	}{
		{"bound pods/s, case/floor", "", "%.3f", func(a, fl *backlogResult) float64 { return rate(a) / rate(fl) }},
		{"scheduler CPU per bound pod, case/floor", "<= 1.05", "%.3f", func(a, fl *backlogResult) float64 {
			if a.SchedCPUPer1000 == 0 || fl.SchedCPUPer1000 == 0 {
				return math.NaN() // no pod bound within the sampled window (a smoke run)
			}
			return a.SchedCPUPer1000 / fl.SchedCPUPer1000
		}},
		{"API writes per held pod, (case − floor)/held", "<= 3", "%.2f", func(a, fl *backlogResult) float64 { return (a.WritesTotal - fl.WritesTotal) / perWritten(a) }},
		{"scheduler peak RSS per held pod, KiB, (case − floor)/held", "", "%.2f", func(a, fl *backlogResult) float64 { return (a.PeakRSS - fl.PeakRSS) / perHeld(a) / 1024 }},
		{"scheduler heap in use per held pod, KiB, (case − floor)/held", "", "%.2f", func(a, fl *backlogResult) float64 {
			return (a.Metrics.HeapInuse - fl.Metrics.HeapInuse) / perHeld(a) / 1024
		}},
		{"scheduler CPU per held pod over the whole run, ms, (case − floor)/held", "", "%.3f", func(a, fl *backlogResult) float64 { return (a.SchedCPURun - fl.SchedCPURun) / perHeld(a) * 1000 }},
	}
	ours := make([][]float64, len(measures))
	aa := make([][]float64, len(measures))
	var pr strings.Builder
	pr.WriteString("| run | order |")
	for _, m := range measures {
		fmt.Fprintf(&pr, " %s: backlog | A/A floor-control |", m.name)
	}
	pr.WriteString("\n|---|---|" + strings.Repeat("---|---|", len(measures)) + "\n")
	for _, id := range runIDs {
		m := runs[id]
		order := runOrder(m, cs)
		fmt.Fprintf(&pr, "| %d | %s |", id, order)
		floor := m["floor"]
		for k, ms := range measures {
			for _, side := range []struct {
				r    *backlogResult
				into *[]float64
			}{{m["backlog"], &ours[k]}, {m["floor-control"], &aa[k]}} {
				if side.r == nil || floor == nil {
					pr.WriteString(" – |")
					continue
				}
				x := ms.f(side.r, floor)
				if !math.IsNaN(x) && !math.IsInf(x, 0) {
					*side.into = append(*side.into, x)
				}
				fmt.Fprintf(&pr, " "+ms.format+" |", x)
			}
		}
		pr.WriteString("\n")
	}
	sd := func(xs []float64) string {
		if len(xs) < 2 {
			return ""
		}
		return fmt.Sprintf(", sd %.3f", stats(xs).stdev)
	}
	b.WriteString("\nSummary, each run's backlog against the floor of the same run (median [min–max] over runs, sd), beside the A/A control (floor-control against the floor):\n\n")
	for k, ms := range measures {
		target := ""
		if ms.target != "" {
			target = " (target " + ms.target + ")"
		}
		a := "no floor-control in this run"
		if len(aa[k]) > 0 {
			a = spread(aa[k], ms.format) + sd(aa[k])
		}
		fmt.Fprintf(&b, "- %s%s: **%s**%s; A/A %s\n", ms.name, target, spread(ours[k], ms.format), sd(ours[k]), a)
	}
	b.WriteString("\nPer run:\n\n")
	b.WriteString(pr.String())

	// The writes, by verb and resource: median over the runs of a case.
	keys := map[string]bool{}
	for _, r := range rep.Backlog {
		for k := range r.Writes {
			keys[k] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	b.WriteString("\nAPI writes counted, by verb, API group and resource (median over runs):\n\n| verb group resource |")
	for _, c := range cs {
		if len(byCase[c.name]) > 0 {
			fmt.Fprintf(&b, " %s |", c.name)
		}
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(byCase)) + "\n")
	for _, k := range sorted {
		fmt.Fprintf(&b, "| %s |", k)
		for _, c := range cs {
			rs := byCase[c.name]
			if len(rs) == 0 {
				continue
			}
			fmt.Fprintf(&b, " %.0f |", stats(col(rs, func(r *backlogResult) float64 { return r.Writes[k] })).median())
		}
		b.WriteString("\n")
	}
	return b.String()
}

// profileTops lists, for each run's CPU profile (-pprof), the top
// functions by flat samples (`go tool pprof -top`) and the share of the
// samples under kube-scheduler's walk of the unschedulable pods
// (PriorityQueue.MoveAllToActiveOrBackoffQueue), as pprof prints them. It
// is empty without profiles, and says so when pprof cannot run.
func profileTops(rs []*backlogResult) string {
	var b strings.Builder
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	for _, r := range rs {
		path, ok := saved(r.Profile)
		if !ok {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n## CPU profiles\n\n`go tool pprof -top -nodecount=20 PROFILE`, and the header of `-focus=MoveAllToActiveOrBackoffQueue` (the queue's walk of its unschedulable pods, gated ones included), for each run's profile under -out.\n")
		}
		fmt.Fprintf(&b, "\n### run %d %s (%s)\n\n```\n", r.Run, r.Case, r.Profile)
		out, err := exec.Command(goTool, "tool", "pprof", "-top", "-nodecount=20", path).CombinedOutput()
		if err != nil {
			fmt.Fprintf(&b, "go tool pprof: %v\n", err)
		}
		b.Write(out)
		out, _ = exec.Command(goTool, "tool", "pprof", "-top", "-nodecount=1", "-focus=MoveAllToActiveOrBackoffQueue", path).CombinedOutput()
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "Active filters") || strings.HasPrefix(l, "   focus=") || strings.HasPrefix(l, "Showing nodes accounting") {
				fmt.Fprintf(&b, "%s\n", l)
			}
		}
		b.WriteString("```\n")
	}
	for _, r := range rs {
		path, ok := saved(r.HeapProfile)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "\n### run %d %s, heap in use when the writes settled (%s)\n\n`go tool pprof -top -sample_index=inuse_space -nodecount=15 PROFILE`\n\n```\n", r.Run, r.Case, r.HeapProfile)
		out, err := exec.Command(goTool, "tool", "pprof", "-top", "-sample_index=inuse_space", "-nodecount=15", path).CombinedOutput()
		if err != nil {
			fmt.Fprintf(&b, "go tool pprof: %v\n", err)
		}
		b.Write(out)
		b.WriteString("```\n")
	}
	return b.String()
}

// saved is the path of a run's file name under -out, when there is one.
func saved(name string) (string, bool) {
	if name == "" || *outDir == "" {
		return "", false
	}
	path := filepath.Join(*outDir, name)
	if _, err := os.Stat(path); err != nil {
		return "", false
	}
	return path, true
}

// runOrder lists a run's cases in the order they ran.
func runOrder[R interface{ position() int }](m map[string]R, cs []perfCase) string {
	var order []string
	for _, c := range cs {
		if r, ok := m[c.name]; ok {
			order = append(order, fmt.Sprintf("%d:%s", r.position(), c.name))
		}
	}
	sort.Strings(order)
	for i := range order {
		_, order[i], _ = strings.Cut(order[i], ":")
	}
	return strings.Join(order, ", ")
}
