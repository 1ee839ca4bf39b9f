// Command paired prints, for a TestThroughput or TestBacklog report, each
// case against a reference case of the same run: bound pods/s (the run's
// mean) and scheduler CPU per bound pod as ratios, per run and as the
// median [min–max] over runs. TestBacklog's report pairs only the backlog
// and the floor-control with the floor; this pairs every case, such as
// gated-quota (docs/throughput.md, "Backlog at scale"). A run whose
// reference has no rate or CPU sampled (a smoke run binds before the
// first sample) is left out. Several reports (comma-separated) are
// pooled, their runs told apart by report:
//
//	go run ./test/perf/paired -report=_output/bench-scale/backlog.json -against=floor
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/userquota/userquota/test/perf/perfreport"
)

func main() {
	report := flag.String("report", "", "throughput.json or backlog.json of a TestThroughput or TestBacklog run; several, comma-separated, are pooled")
	against := flag.String("against", "floor", "the reference case (floor for TestBacklog, baseline for TestThroughput)")
	flag.Parse()
	if err := table(os.Stdout, strings.Split(*report, ","), *against); err != nil {
		fmt.Fprintln(os.Stderr, "paired:", err)
		os.Exit(1)
	}
}

// ratio is one case against the reference of its run.
type ratio struct{ pods, cpu float64 }

// pooledRun is a run of one of the pooled reports; run numbers it by
// report (the first report's runs keep theirs).
type pooledRun struct {
	perfreport.Run
	report int
}

func table(w io.Writer, reports []string, against string) error {
	var runs []pooledRun
	ref := map[[2]int]perfreport.Run{}
	for i, report := range reports {
		rs, err := perfreport.Runs(report)
		if err != nil {
			return err
		}
		found := false
		for _, rn := range rs {
			runs = append(runs, pooledRun{rn, i})
			if rn.Case == against {
				ref[[2]int{i, rn.Run}], found = rn, true
			}
		}
		if !found {
			return fmt.Errorf("%s: no run of the case %q", report, against)
		}
	}
	byCase := map[string][]ratio{}
	var order []string
	fmt.Fprintf(w, "| run | case | bound pods/s | against %s | CPU per bound pod, against %s |\n|---|---|---|---|---|\n", against, against)
	for _, rn := range runs {
		r, ok := ref[[2]int{rn.report, rn.Run.Run}]
		if rn.Case == against || !ok || r.Avg <= 0 || r.CPUPer1000 <= 0 {
			continue
		}
		x := ratio{rn.Avg / r.Avg, rn.CPUPer1000 / r.CPUPer1000}
		if _, seen := byCase[rn.Case]; !seen {
			order = append(order, rn.Case)
		}
		byCase[rn.Case] = append(byCase[rn.Case], x)
		fmt.Fprintf(w, "| %s | %s | %.1f | %.3f | %.3fx |\n", runName(rn), rn.Case, rn.Avg, x.pods, x.cpu)
	}
	fmt.Fprintf(w, "\n| case | runs | bound pods/s against %s | CPU per bound pod |\n|---|---|---|---|\n", against)
	for _, c := range order {
		xs := byCase[c]
		pods, cpu := make([]float64, len(xs)), make([]float64, len(xs))
		for i, x := range xs {
			pods[i], cpu[i] = x.pods, x.cpu
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s |\n", c, len(xs), spread(pods, "%.3f"), spread(cpu, "%.3fx"))
	}
	return nil
}

// runName is the run's number, with its report's (from 1) after the
// first report.
func runName(rn pooledRun) string {
	if rn.report == 0 {
		return strconv.Itoa(rn.Run.Run)
	}
	return fmt.Sprintf("%d.%d", rn.report+1, rn.Run.Run)
}

// spread is "median [min–max]" of xs, as the reports print it.
func spread(xs []float64, format string) string {
	return fmt.Sprintf(format+" ["+format+"–"+format+"]", perfreport.Median(xs), slices.Min(xs), slices.Max(xs))
}
