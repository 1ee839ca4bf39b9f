// Package perfreport reads the runs of a TestThroughput or TestBacklog
// report (throughput.json, backlog.json) for the commands that work on
// one after the run (cpubuckets, alternation).
package perfreport

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// Run is what the commands read of a report's run.
type Run struct {
	Case string `json:"case"`
	Run  int    `json:"run"`
	// Avg is the run's mean bound pods a second, Samples the per-second
	// counts it is the mean of.
	Avg     float64   `json:"avg"`
	Samples []float64 `json:"samples"`
	// CPUPer1000 is the scheduler's CPU seconds per 1,000 pods bound in
	// the sampled window.
	CPUPer1000 float64 `json:"schedulerCPUSecondsPer1000"`
}

// Runs returns the runs of the report at path, in its order: TestThroughput
// keeps them under "runs", TestBacklog under "backlog". A report with none
// is an error.
func Runs(path string) ([]Run, error) {
	if path == "" {
		return nil, fmt.Errorf("-report: want the report's JSON")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r struct {
		Runs    []Run `json:"runs"`
		Backlog []Run `json:"backlog"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	runs := append(r.Runs, r.Backlog...)
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no runs", path)
	}
	return runs, nil
}

// Median is the median of v (the mean of the two middle values for an
// even count; 0 for none), as the reports print it.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	return (s[(n-1)/2] + s[n/2]) / 2
}
