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
			if v.Type().Field(i).IsExported() {
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

	// Paired ratios: each run's cases ran back to back.
	b.WriteString("\nRatios per run (average pods/s of the run's cases; the refused case counts bound pods only):\n\n")
	b.WriteString("| run | order | baseline | userquota | refused | control | userquota/baseline | refused/userquota | refused/baseline | control/baseline (A/A) | scheduler CPU/pod userquota/baseline |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
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
		var order []string
		for _, c := range cs {
			if r := m[c.name]; r != nil {
				order = append(order, fmt.Sprintf("%d:%s", r.Order, c.name))
			}
		}
		sort.Strings(order)
		for i := range order {
			_, order[i], _ = strings.Cut(order[i], ":")
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", id, strings.Join(order, ", "),
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
	fmt.Fprintf(&b, "| **median [min–max]** | | | | | | **%s**%s | **%s**%s | %s%s | %s%s | %s%s |\n",
		spread(ratioQ, "%.3f"), sd(ratioQ), spread(ratioR, "%.3f"), sd(ratioR), spread(ratioRB, "%.3f"), sd(ratioRB),
		spread(ratioC, "%.3f"), sd(ratioC), spread(ratioCPU, "%.3f"), sd(ratioCPU))

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
