package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

var validConfig = queueconfigtest.Root(`
queues:
  - name: a
    limits:
      - limit: per user
        users: ["*"]
        maxresources: {vcore: 2}
      - limit: eng
        groups: [eng]
        maxapplications: 3
  - name: b
`)

// invalidConfig has two problems: an unknown key and an all-zero limit.
var invalidConfig = queueconfigtest.Root(`
colour: blue
queues:
  - name: a
    limits:
      - limit: nothing allowed
        users: [sue]
        maxresources: {vcore: 0}
`)

const trace = `{"op":"allocate","pod":"p1","queue":"root.a","resources":{"cpu":"1"}}
this is not JSON
{"op":"allocate","pod":"p2","queue":"root.a","resources":{"cpu":"2"}}
{"op":"release","pod":"p1"}
`

// requeueTrace: p2 is refused by the user limit until p1 ends.
const requeueTrace = `{"op":"allocate","pod":"p1","queue":"root.a","resources":{"cpu":"2"}}
{"op":"allocate","pod":"p2","queue":"root.a","resources":{"cpu":"1"}}
{"op":"release","pod":"p1"}
`

// files writes the test inputs and returns their paths by name.
func files(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	paths := map[string]string{"dir": dir, "missing": filepath.Join(dir, "missing.yaml")}
	for name, text := range map[string]string{
		"valid.yaml":    validConfig,
		"invalid.yaml":  invalidConfig,
		"trace.jsonl":   trace,
		"requeue.jsonl": requeueTrace,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
	}
	return paths
}

func TestRun(t *testing.T) {
	f := files(t)
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // substrings of stdout, in order
		stderr     []string // substrings of stderr, in order
		noStdout   bool
		stdoutRows int // exact number of stdout lines, when > 0
	}{
		{name: "no arguments", args: nil, code: 2, stderr: []string{"Usage:", "userquotactl validate FILE"}, noStdout: true},
		{name: "help", args: []string{"help"}, code: 0, stdout: []string{"Usage:", "userquotactl simulate --config FILE --trace FILE [--partition NAME]"}},
		{name: "--help", args: []string{"--help"}, code: 0, stdout: []string{"Usage:"}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderr: []string{`unknown command "frobnicate"`, "Usage:"}, noStdout: true},

		{name: "validate valid", args: []string{"validate", f["valid.yaml"]}, code: 0,
			stdout: []string{"valid: 1 partition, 3 queues, 2 limits", "note: partitions[0]: no queue sets submitacl"}, stdoutRows: 2},
		{name: "validate invalid", args: []string{"validate", f["invalid.yaml"]}, code: 1,
			stdout: []string{"colour", "\n", "limits[0]"}, stdoutRows: 2},
		{name: "validate missing file", args: []string{"validate", f["missing"]}, code: 1,
			stderr: []string{"missing.yaml"}, noStdout: true},
		{name: "validate no file", args: []string{"validate"}, code: 2, stderr: []string{"validate takes one FILE, got 0"}},
		{name: "validate two files", args: []string{"validate", f["valid.yaml"], f["valid.yaml"]}, code: 2, stderr: []string{"got 2"}},
		{name: "validate unknown flag", args: []string{"validate", "--strict", f["valid.yaml"]}, code: 2, stderr: []string{"flag provided but not defined: -strict"}},
		{name: "validate -h", args: []string{"validate", "-h"}, code: 0, stdout: []string{"Usage:"}},

		{name: "simulate", args: []string{"simulate", "--config", f["valid.yaml"], "--trace", f["trace.jsonl"]}, code: 0,
			stdout: []string{
				`{"pod":"p1","allowed":true}`,
				`{"line":2,"error":"invalid JSON: invalid character 'h' in literal true (expecting 'r')"}`,
				`{"pod":"p2","allowed":false,"reason":"user \"nobody\" would exceed maxresources in root.a: cpu 1+2 > 2"`,
				`{"pod":"p1","released":true}`,
				`{"users":[],"groups":[],"queues":`,
			}, stdoutRows: 5},
		{name: "simulate flags with =", args: []string{"simulate", "-trace=" + f["trace.jsonl"], "-config=" + f["valid.yaml"], "--partition=default"}, code: 0,
			stdout: []string{`{"pod":"p1","allowed":true}`}, stdoutRows: 5},
		{name: "simulate unknown partition", args: []string{"simulate", "--config", f["valid.yaml"], "--trace", f["trace.jsonl"], "--partition", "gpu"}, code: 1,
			stderr: []string{`partition "gpu" is not in the config`}, noStdout: true},
		{name: "simulate invalid config", args: []string{"simulate", "--config", f["invalid.yaml"], "--trace", f["trace.jsonl"]}, code: 1,
			stderr: []string{"colour", "\n", "limits[0]"}, noStdout: true},
		{name: "simulate missing config", args: []string{"simulate", "--config", f["missing"], "--trace", f["trace.jsonl"]}, code: 1,
			stderr: []string{"missing.yaml"}, noStdout: true},
		{name: "simulate missing trace", args: []string{"simulate", "--config", f["valid.yaml"], "--trace", f["missing"]}, code: 1,
			stderr: []string{"missing.yaml"}, noStdout: true},
		{name: "simulate unreadable trace", args: []string{"simulate", "--config", f["valid.yaml"], "--trace", f["dir"]}, code: 1,
			stderr: []string{"is a directory"}, noStdout: true},
		{name: "simulate without flags", args: []string{"simulate"}, code: 2, stderr: []string{"missing --config and --trace", "Usage:"}, noStdout: true},
		{name: "simulate without trace", args: []string{"simulate", "--config", f["valid.yaml"]}, code: 2, stderr: []string{"missing --trace"}, noStdout: true},
		{name: "simulate extra argument", args: []string{"simulate", "--config", f["valid.yaml"], "--trace", f["trace.jsonl"], "more"}, code: 2,
			stderr: []string{`unexpected argument "more"`}, noStdout: true},
		{name: "simulate unknown flag", args: []string{"simulate", "--dry-run"}, code: 2, stderr: []string{"flag provided but not defined: -dry-run"}, noStdout: true},
		{name: "simulate --requeue", args: []string{"simulate", "--requeue", "--config", f["valid.yaml"], "--trace", f["requeue.jsonl"]}, code: 0,
			stdout: []string{
				`{"pod":"p1","allowed":true}`,
				`{"pod":"p2","allowed":false,"reason":"user \"nobody\" would exceed maxresources in root.a: cpu 2+1 > 2"`,
				`{"pod":"p1","released":true}`,
				`{"pod":"p2","allowed":true}`,
				`"pending":[]}`,
			}, stdoutRows: 5},
		{name: "simulate --requeue=false", args: []string{"simulate", "--requeue=false", "--config", f["valid.yaml"], "--trace", f["requeue.jsonl"]}, code: 0,
			stdout: []string{`{"pod":"p1","released":true}`, `{"users":[],"groups":[],"queues":`}, stdoutRows: 4},
		{name: "simulate without --requeue", args: []string{"simulate", "--config", f["valid.yaml"], "--trace", f["requeue.jsonl"]}, code: 0,
			stdout: []string{`{"pod":"p1","released":true}`, `{"users":[],"groups":[],"queues":`}, stdoutRows: 4},
		{name: "simulate --requeue with a value", args: []string{"simulate", "--requeue=maybe", "--config", f["valid.yaml"], "--trace", f["requeue.jsonl"]}, code: 2,
			stderr: []string{`invalid boolean value "maybe" for -requeue`}, noStdout: true},
		{name: "simulate --starvation 0", args: []string{"simulate", "--requeue", "--starvation", "0", "--config", "../../testdata/traces/hold-starvation.yaml",
			"--trace", "../../testdata/traces/hold-starvation.jsonl"}, code: 0,
			// Off: s2, after the wait, fits and is not held behind big.
			stdout: []string{`{"wait":"3m0s"}`, `{"pod":"s2","allowed":true}`}},
		{name: "simulate --starvation negative", args: []string{"simulate", "--starvation=-1m", "--config", f["valid.yaml"], "--trace", f["trace.jsonl"]}, code: 2,
			stderr: []string{"--starvation -1m0s is negative (0 turns it off)"}, noStdout: true},
		{name: "simulate --starvation not a duration", args: []string{"simulate", "--starvation", "soon", "--config", f["valid.yaml"], "--trace", f["trace.jsonl"]}, code: 2,
			stderr: []string{`invalid value "soon" for flag -starvation`}, noStdout: true},
		{name: "simulate flag without value", args: []string{"simulate", "--config"}, code: 2, stderr: []string{"flag needs an argument: -config"}, noStdout: true},
		{name: "simulate empty partition", args: []string{"simulate", "--config", f["valid.yaml"], "--trace", f["trace.jsonl"], "--partition", ""}, code: 2,
			stderr: []string{"--partition must not be empty"}, noStdout: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			containsInOrder(t, "stdout", stdout.String(), tc.stdout)
			containsInOrder(t, "stderr", stderr.String(), tc.stderr)
			if tc.noStdout && stdout.Len() > 0 {
				t.Errorf("stdout should be empty, got:\n%s", stdout.String())
			}
			if tc.stdoutRows > 0 {
				if rows := strings.Count(stdout.String(), "\n"); rows != tc.stdoutRows {
					t.Errorf("stdout has %d lines, want %d:\n%s", rows, tc.stdoutRows, stdout.String())
				}
			}
		})
	}
}

func containsInOrder(t *testing.T, what, got string, want []string) {
	t.Helper()
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("%s does not contain %q (after the earlier matches):\n%s", what, w, got)
			return
		}
		rest = rest[i+len(w):]
	}
}

// TestValidateExamples keeps every shipped example config valid.
func TestValidateExamples(t *testing.T) {
	examples, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) == 0 {
		t.Fatal("no examples/*.yaml found: the example configs are part of the project")
	}
	for _, ex := range examples {
		t.Run(filepath.Base(ex), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run([]string{"validate", ex}, &stdout, &stderr); code != 0 {
				t.Errorf("exit code %d:\n%s%s", code, stdout.String(), stderr.String())
			}
			if !strings.HasPrefix(stdout.String(), "valid: ") {
				t.Errorf("stdout = %q, want a summary", stdout.String())
			}
		})
	}
}

// TestSimulateMatchesGolden checks the command prints exactly what the
// simulator's golden files hold, so the CLI adds nothing to stdout. A case
// with a NAME.args file runs with those flags (--requeue).
func TestSimulateMatchesGolden(t *testing.T) {
	for _, base := range []string{
		"../../testdata/traces/maxapps",
		"../../testdata/traces/example-multilevel",
		"../../testdata/traces/elastic-borrow",
		"../../testdata/traces/elastic-shares-norequeue",
		"../../testdata/traces/hold-starvation",
	} {
		t.Run(filepath.Base(base), func(t *testing.T) {
			want, err := os.ReadFile(base + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"simulate", "--config", base + ".yaml", "--trace", base + ".jsonl"}
			if flags, err := os.ReadFile(base + ".args"); err == nil {
				args = append(args, strings.Fields(string(flags))...)
			}
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit code %d: %s", code, stderr.String())
			}
			if !bytes.Equal(stdout.Bytes(), want) {
				t.Errorf("stdout differs from %s.golden:\n%s", base, stdout.String())
			}
		})
	}
}

// run is userquotactl's command tree, as its binary runs it.
func run(args []string, stdout, stderr io.Writer) int { return Main(Ctl, args, stdout, stderr) }
