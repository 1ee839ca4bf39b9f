package simulator

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzRun feeds arbitrary traces to Run: it must never panic, never fail on
// a readable trace, and print exactly one line per non-blank trace line plus
// the snapshot; with Options.Requeue (an elastic config, a starvation wait
// of 1m) at least that, every line beyond it an allow line of a let-in.
// The golden traces are the seed corpus.
func FuzzRun(f *testing.F) {
	var traces []string
	for _, d := range traceDirs {
		found, _ := filepath.Glob(filepath.Join(d.dir, "*.jsonl"))
		traces = append(traces, found...)
	}
	for _, p := range traces {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			f.Add(line)
		}
	}
	f.Add("\x00\n\r\n{}")
	f.Fuzz(func(t *testing.T, trace string) {
		var out bytes.Buffer
		if err := Run([]byte(leafConfig), strings.NewReader(trace), &out, Options{}); err != nil {
			t.Fatalf("Run: %v", err)
		}
		want := 1 // the snapshot
		for _, line := range strings.Split(strings.TrimPrefix(trace, "\ufeff"), "\n") {
			if !isBlank([]byte(line)) {
				want++
			}
		}
		if got := strings.Count(out.String(), "\n"); got != want {
			t.Fatalf("%d output lines for %d non-blank trace lines + snapshot:\n%s", got, want-1, out.String())
		}

		var rq bytes.Buffer
		if err := Run([]byte(elasticConfig), strings.NewReader(trace), &rq, Options{Requeue: true, Starvation: time.Minute}); err != nil {
			t.Fatalf("Run --requeue: %v", err)
		}
		got := strings.Count(rq.String(), "\n")
		if got < want {
			t.Fatalf("--requeue: %d output lines for %d non-blank trace lines + snapshot:\n%s", got, want-1, rq.String())
		}
		if !strings.Contains(rq.String(), `"pending":[`) {
			t.Fatalf("--requeue: no pending list in the snapshot:\n%s", rq.String())
		}
		if extra := got - want; strings.Count(rq.String(), `"allowed":true`) < extra {
			t.Fatalf("--requeue: %d lines beyond one per trace line, not all allow lines:\n%s", extra, rq.String())
		}
	})
}
