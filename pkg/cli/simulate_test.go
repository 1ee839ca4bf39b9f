package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestSimulateGangs: gang lines need no flag, and --requeue decides
// whether a gang held whole is let in when room frees: with it the
// release reserves gb and lets its three pods in; without it they were
// forgotten when refused, so the same release lets nothing in.
func TestSimulateGangs(t *testing.T) {
	const base = "../../pkg/simulator/testdata/gangs/gang-hold"
	tests := []struct {
		name    string
		flags   []string
		want    []string // substrings of stdout, in order
		absent  string   // not in stdout
		pending string   // the snapshot's end: its pending list, or the queue tree without one
	}{{
		name:    "--requeue",
		flags:   []string{"--requeue"},
		want:    []string{`{"gang":"gb","reserved":false,`, `{"pod":"a2","released":true}`, `{"gang":"gb","reserved":true}`, `{"pod":"b1","allowed":true}`, `{"pod":"b3","allowed":true}`},
		pending: `"pending":[]}`,
	}, {
		name:    "without --requeue",
		want:    []string{`{"gang":"gb","reserved":false,`, `{"pod":"b3","allowed":false,`, `{"pod":"a2","released":true}`, `{"pod":"a3","released":true}`},
		absent:  `{"gang":"gb","reserved":true}`,
		pending: `]}}`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"simulate", "--config", base + ".yaml", "--trace", base + ".jsonl"}, tc.flags...)
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit code %d: %s", code, stderr.String())
			}
			out := stdout.String()
			containsInOrder(t, "stdout", out, tc.want)
			if tc.absent != "" && strings.Contains(out, tc.absent) {
				t.Errorf("stdout contains %q:\n%s", tc.absent, out)
			}
			if !strings.HasSuffix(out, tc.pending+"\n") {
				t.Errorf("stdout does not end with %q:\n%s", tc.pending, out)
			}
		})
	}
}

// TestSimulateContractLines: the design contract's gang line (a minimum
// of cpu only) and time lines, through the command: the output is the
// golden one.
func TestSimulateContractLines(t *testing.T) {
	const base = "../../pkg/simulator/testdata/gangs/gang-contract"
	var stdout, stderr bytes.Buffer
	if code := run([]string{"simulate", "--requeue", "--config", base + ".yaml", "--trace", base + ".jsonl"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	want, err := os.ReadFile(base + ".golden")
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != string(want) {
		t.Errorf("stdout:\n%s\nwant (%s.golden):\n%s", stdout.String(), base, want)
	}
}
