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
// the snapshot, plus a gang's reserved, held, timed-out and released lines;
// with Options.Requeue (an elastic config, a starvation wait of 1m) at
// least that, every line beyond it an allow line of a let-in or a gang's
// line. The golden traces are the seed corpus, line by line, and the gang
// traces whole too (a gang line alone decides little).
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
		if strings.HasPrefix(filepath.Base(p), "gang-") {
			f.Add(string(data))
		}
	}
	f.Add("\x00\n\r\n{}")
	// A Hard gang of root.a (in both configs) that fails, then goes.
	f.Add(strings.Join([]string{
		`{"op":"gang","gang":"g","min":{"cpu":"2","pods":"2"},"style":"Hard","timeout":"1m"}`,
		`{"op":"allocate","pod":"p1","queue":"root.a","gang":"g","resources":{"cpu":"1"}}`,
		`{"op":"allocate","pod":"p2","queue":"root.a","resources":{"cpu":"1"}}`,
		`{"op":"wait","duration":"2m"}`,
		`{"op":"allocate","pod":"p3","queue":"root.a","gang":"g","resources":{"cpu":"1"}}`,
		`{"op":"release","pod":"p1"}`,
		`{"op":"release","pod":"p3"}`,
		`{"op":"allocate","pod":"p4","queue":"root.a","gang":"g","resources":{"cpu":"1"}}`,
	}, "\n"))
	// The contract's shapes: a gang whose minimum counts no pods, and the
	// time op.
	f.Add(strings.Join([]string{
		`{"op":"gang","gang":"g1","app":"a1","min":{"cpu":"2"},"style":"Hard","timeout":"60s"}`,
		`{"op":"allocate","pod":"p1","queue":"root.a","gang":"g1","resources":{"cpu":"1"}}`,
		`{"op":"time","advance":"90s"}`,
		`{"op":"allocate","pod":"p2","queue":"root.a","gang":"g1","resources":{"cpu":"1"}}`,
	}, "\n"))
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
		if got, events := strings.Count(out.String(), "\n"), gangEvents(out.String()); got != want+events {
			t.Fatalf("%d output lines for %d non-blank trace lines + snapshot + %d gang events:\n%s", got, want-1, events, out.String())
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
		if extra := got - want; strings.Count(rq.String(), `"allowed":true`)+gangEvents(rq.String()) < extra {
			t.Fatalf("--requeue: %d lines beyond one per trace line, not all allow or gang lines:\n%s", extra, rq.String())
		}
	})
}

// gangEvents counts the gang lines of out that no trace line printed as
// its own: all but a gang line's {"gang":...,"declared":true}.
func gangEvents(out string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, `{"gang":`) && !strings.Contains(line, `"declared":true`) {
			n++
		}
	}
	return n
}
