package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLag1(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []float64
		want    float64
		ok      bool
	}{
		{"alternating", []float64{0, 0, 1, 3, 1, 3, 1, 3, 0, 0}, -5.0 / 6, true},
		{"a ramp", []float64{9, 9, 1, 2, 3, 4, 5, 9, 9}, 0.4, true},
		{"flat", []float64{1, 2, 5, 5, 5, 5, 5, 2, 1}, 0, false},
		{"too short", []float64{1, 2, 3, 4, 5, 6}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := lag1(tc.samples)
			if ok != tc.ok || math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("lag1(%v) = %v, %v; want %v, %v", tc.samples, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestPrintReadsBothReports(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"throughput.json": `{"runs":[{"case":"userquota","run":1,"avg":2,"samples":[0,0,1,3,1,3,1,3,0,0]}]}`,
		"backlog.json":    `{"backlog":[{"case":"backlog","run":2,"avg":2,"samples":[0,0,1,3,1,3,1,3,0,0]}]}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := table(&out, p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(out.String(), "| -0.83 |") {
			t.Errorf("%s: no run with -0.83 in\n%s", name, out.String())
		}
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := table(&strings.Builder{}, empty); err == nil {
		t.Error("a report with no runs: no error")
	}
}
