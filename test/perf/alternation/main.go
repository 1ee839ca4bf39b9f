// Command alternation prints, for each run of a TestThroughput or
// TestBacklog report, how its per-second bound-pod samples alternate: the
// lag-1 autocorrelation of the samples, the first and last two (the ramp
// up and down) left out. Near 0 the rate wanders; clearly negative, fast
// and slow seconds take turns, as something periodic stalls the binds
// (docs/throughput.md, "Backlog at scale"):
//
//	go run ./test/perf/alternation -report=_output/bench-scale/backlog.json
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/userquota/userquota/test/perf/perfreport"
)

func main() {
	report := flag.String("report", "", "throughput.json or backlog.json of a TestThroughput or TestBacklog run")
	flag.Parse()
	if err := table(os.Stdout, *report); err != nil {
		fmt.Fprintln(os.Stderr, "alternation:", err)
		os.Exit(1)
	}
}

func table(w io.Writer, report string) error {
	runs, err := perfreport.Runs(report)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "| run | case | bound pods/s (avg) | samples | lag-1 autocorrelation |\n|---|---|---|---|---|\n")
	for _, rn := range runs {
		a, ok := lag1(rn.Samples)
		cell := "n/a"
		if ok {
			cell = fmt.Sprintf("%.2f", a)
		}
		fmt.Fprintf(w, "| %d | %s | %.1f | %d | %s |\n", rn.Run, rn.Case, rn.Avg, len(rn.Samples), cell)
	}
	return nil
}

// lag1 is the lag-1 autocorrelation of s without its first and last two
// samples; false when fewer than three are left or they do not vary.
func lag1(s []float64) (float64, bool) {
	if len(s) < 7 {
		return 0, false
	}
	s = s[2 : len(s)-2]
	mean := 0.0
	for _, x := range s {
		mean += x
	}
	mean /= float64(len(s))
	var v, c float64
	for i, x := range s {
		v += (x - mean) * (x - mean)
		if i+1 < len(s) {
			c += (x - mean) * (s[i+1] - mean)
		}
	}
	if v == 0 {
		return 0, false
	}
	return c / v, true
}
