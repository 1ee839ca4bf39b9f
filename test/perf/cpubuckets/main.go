// Command cpubuckets splits the scheduler's CPU profiles from a
// TestThroughput or TestBacklog report (-pprof) into buckets of work and
// prints each per pod bound in the profile's span, so that cases of one
// run compare per pod rather than per second:
//
//	go run ./test/perf/cpubuckets -report=_output/bench-scale/throughput.json -pprof=20s
//
// Each sample's stack goes to the first bucket one of its frames matches
// (GC first: a GC assist is GC whoever allocated). The pods bound in the
// span are the sum of the run's per-second samples over the profile's
// length from the first binding, where the profile starts (-pprof-from
// bind), so a figure is good to about one second's pods.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/userquota/userquota/test/perf/perfreport"
)

// bucket is a kind of work, told by a frame of its stacks.
type bucket struct {
	name  string
	frame *regexp.Regexp
}

var buckets = []bucket{
	{"GC", regexp.MustCompile(`^runtime\.(gcBgMarkWorker|gcAssistAlloc|bgsweep|bgscavenge|gcStart|gcMarkDone|gcMarkTermination)\b`)},
	{"UserQuota", regexp.MustCompile(`^github\.com/userquota/userquota/pkg/`)},
	{"allocation", regexp.MustCompile(`^runtime\.mallocgc\b`)},
	{"filter and score", regexp.MustCompile(`workqueue\.ParallelizeUntil`)},
	{"scheduling cycle, rest", regexp.MustCompile(`scheduler\.\(\*Scheduler\)\.schedulingCycle\b`)},
	{"binding cycle", regexp.MustCompile(`scheduler\.\(\*Scheduler\)\.bindingCycle\b`)},
	{"informers and queue", regexp.MustCompile(`client-go/tools/cache\.|scheduler/backend/queue\.`)},
	{"API client", regexp.MustCompile(`^net/http\.|golang\.org/x/net/http2\.|client-go/rest\.`)},
}

const other = "other"

func main() {
	report := flag.String("report", "", "throughput.json or backlog.json of a run with -pprof")
	span := flag.Duration("pprof", 60*time.Second, "the -pprof the report was run with (the profile's length)")
	flag.Parse()
	if err := buckets2md(os.Stdout, *report, *span); err != nil {
		fmt.Fprintln(os.Stderr, "cpubuckets:", err)
		os.Exit(1)
	}
}

func buckets2md(w io.Writer, report string, span time.Duration) error {
	runs, err := perfreport.Runs(report)
	if err != nil {
		return err
	}
	names := append(bucketNames(), other, "total")
	perCase := map[string][]map[string]float64{}
	var cases []string
	fmt.Fprintf(w, "Scheduler CPU per pod bound in the profile's span, µs, by bucket (%s):\n\n", report)
	fmt.Fprintf(w, "| run | case | pods | %s |\n|---|---|---|%s\n", strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	for _, rn := range runs {
		profile := filepath.Join(filepath.Dir(report), "pprof", fmt.Sprintf("run%d-%s.pb.gz", rn.Run, rn.Case))
		secs, err := split(profile)
		if err != nil {
			return err
		}
		pods := 0.0
		for i, s := range rn.Samples {
			if i >= int(span.Seconds()) {
				break
			}
			pods += s
		}
		if pods <= 0 {
			return fmt.Errorf("run %d %s: no pod bound in the profile's span", rn.Run, rn.Case)
		}
		us := map[string]float64{}
		cells := make([]string, len(names))
		for i, n := range names {
			us[n] = secs[n] / pods * 1e6
			cells[i] = strconv.FormatFloat(us[n], 'f', 0, 64)
		}
		fmt.Fprintf(w, "| %d | %s | %.0f | %s |\n", rn.Run, rn.Case, pods, strings.Join(cells, " | "))
		if _, ok := perCase[rn.Case]; !ok {
			cases = append(cases, rn.Case)
		}
		perCase[rn.Case] = append(perCase[rn.Case], us)
	}
	fmt.Fprintf(w, "\nMedian over runs:\n\n| case | %s |\n|---|%s\n", strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	for _, c := range cases {
		cells := make([]string, len(names))
		for i, n := range names {
			var v []float64
			for _, us := range perCase[c] {
				v = append(v, us[n])
			}
			cells[i] = strconv.FormatFloat(perfreport.Median(v), 'f', 0, 64)
		}
		fmt.Fprintf(w, "| %s | %s |\n", c, strings.Join(cells, " | "))
	}
	return nil
}

func bucketNames() []string {
	n := make([]string, len(buckets))
	for i, b := range buckets {
		n[i] = b.name
	}
	return n
}

// split reads a CPU profile (symbolized, as Go's /debug/pprof/profile
// writes it) and returns the seconds of each bucket, other and total.
func split(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	secs, err := bucketSeconds(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return secs, nil
}

// bucketSeconds sums the CPU time of p's samples by bucket, other and
// total.
func bucketSeconds(p *profile.Profile) (map[string]float64, error) {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("not a CPU profile: no cpu/nanoseconds sample type")
	}
	secs := map[string]float64{}
	for _, s := range p.Sample {
		var frames []string
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function != nil {
					frames = append(frames, line.Function.Name)
				}
			}
		}
		v := float64(s.Value[idx]) / 1e9
		secs[classify(frames)] += v
		secs["total"] += v
	}
	return secs, nil
}

func classify(frames []string) string {
	for _, b := range buckets {
		for _, f := range frames {
			if b.frame.MatchString(f) {
				return b.name
			}
		}
	}
	return other
}
