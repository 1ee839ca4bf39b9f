package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTablePairsEveryCase(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "backlog.json")
	body := `{"backlog":[
{"case":"floor","run":1,"avg":200,"schedulerCPUSecondsPer1000":5},
{"case":"gated-quota","run":1,"avg":190,"schedulerCPUSecondsPer1000":5.5},
{"case":"backlog","run":1,"avg":180,"schedulerCPUSecondsPer1000":6},
{"case":"backlog","run":2,"avg":150,"schedulerCPUSecondsPer1000":6},
{"case":"floor","run":2,"avg":100,"schedulerCPUSecondsPer1000":4},
{"case":"backlog","run":3,"avg":99,"schedulerCPUSecondsPer1000":1}]}`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := table(&out, []string{p}, "floor"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| 1 | gated-quota | 190.0 | 0.950 | 1.100x |",
		"| 2 | backlog | 150.0 | 1.500 | 1.500x |",
		// Run 3 has no floor: not paired. Two runs: the median is their mean.
		"| backlog | 2 | 1.200 [0.900–1.500] | 1.350x [1.200x–1.500x] |",
		"| gated-quota | 1 | 0.950 [0.950–0.950] | 1.100x [1.100x–1.100x] |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "| 3 |") {
		t.Errorf("run 3, without a floor, paired:\n%s", out.String())
	}
	if err := table(&strings.Builder{}, []string{p}, "baseline"); err == nil {
		t.Error("a reference case with no run: no error")
	}
}

// TestTablePoolsReports: runs of several reports are paired within their
// report and summarized together.
func TestTablePoolsReports(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, body := range []string{
		`{"backlog":[{"case":"floor","run":1,"avg":200,"schedulerCPUSecondsPer1000":5},{"case":"backlog","run":1,"avg":180,"schedulerCPUSecondsPer1000":6}]}`,
		`{"backlog":[{"case":"floor","run":1,"avg":100,"schedulerCPUSecondsPer1000":4},{"case":"backlog","run":1,"avg":120,"schedulerCPUSecondsPer1000":4}]}`,
	} {
		p := filepath.Join(dir, fmt.Sprintf("r%d.json", i))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var out strings.Builder
	if err := table(&out, paths, "floor"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| 1 | backlog | 180.0 | 0.900 | 1.200x |",
		"| 2.1 | backlog | 120.0 | 1.200 | 1.000x |",
		"| backlog | 2 | 1.050 [0.900–1.200] | 1.100x [1.000x–1.200x] |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}
