package simulator

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update rewrites the golden files: go test ./pkg/simulator -update. Read
// every changed line against the design before committing the result.
var update = flag.Bool("update", false, "rewrite the golden files (*.golden) with the current output")

// tracesDir holds the golden cases: NAME.yaml (the initial config, possibly
// a symlink to an example), NAME.jsonl (the trace), NAME.golden (the output)
// and, optionally, NAME.args (the simulate flags the case runs with,
// whitespace-separated: --requeue, --starvation D, --partition NAME).
const tracesDir = "../../testdata/traces"

// gangsDir holds the gang cases (gang lines and their pods), in the same
// layout; its README says what each pins down.
const gangsDir = "testdata/gangs"

// traceDirs are the golden directories with the fewest cases each must
// hold, which guards against a glob that silently matches nothing.
var traceDirs = []struct {
	dir      string
	minCases int
}{{tracesDir, 15}, {gangsDir, 6}}

func TestGoldenTraces(t *testing.T) {
	var traces []string
	for _, d := range traceDirs {
		found, err := filepath.Glob(filepath.Join(d.dir, "*.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if len(found) < d.minCases {
			t.Fatalf("found %d traces in %s, want at least %d", len(found), d.dir, d.minCases)
		}
		traces = append(traces, found...)
	}
	for _, trace := range traces {
		name := strings.TrimSuffix(filepath.Base(trace), ".jsonl")
		t.Run(name, func(t *testing.T) {
			base := strings.TrimSuffix(trace, ".jsonl")
			cfg := mustRead(t, base+".yaml")
			in := mustRead(t, trace)
			opts := caseOptions(t, base)
			var out, log bytes.Buffer
			opts.Log = &log
			if err := Run(cfg, bytes.NewReader(in), &out, opts); err != nil {
				t.Fatalf("Run: %v", err)
			}
			checkLog(t, log.String())
			golden := base + ".golden"
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			diffLines(t, mustRead(t, golden), out.Bytes())
		})
	}
}

// caseOptions reads the case's NAME.args, the simulate flags it runs
// with; none when the file is absent. Defaults are the command's
// (--starvation 2m), so a case runs as `userquotactl simulate` runs it.
func caseOptions(t *testing.T, base string) Options {
	t.Helper()
	opts := Options{Starvation: DefaultStarvation}
	data, err := os.ReadFile(base + ".args")
	if errors.Is(err, fs.ErrNotExist) {
		return opts
	}
	if err != nil {
		t.Fatal(err)
	}
	fl := flag.NewFlagSet(base+".args", flag.ContinueOnError)
	fl.BoolVar(&opts.Requeue, "requeue", false, "")
	fl.DurationVar(&opts.Starvation, "starvation", DefaultStarvation, "")
	fl.StringVar(&opts.Partition, "partition", "", "")
	fl.BoolVar(&opts.Fairness, "fairness", false, "")
	// --tree FILE, relative to the case's directory, keyed as written.
	fl.Func("tree", "", func(path string) error {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(base), path))
		if err != nil {
			return err
		}
		if opts.Trees == nil {
			opts.Trees = map[string]string{}
		}
		opts.Trees[path] = string(b)
		return nil
	})
	if err := fl.Parse(strings.Fields(string(data))); err != nil {
		t.Fatal(err)
	}
	if fl.NArg() > 0 {
		t.Fatalf("%s.args: unexpected %q", base, fl.Arg(0))
	}
	return opts
}

// TestGoldenFilesComplete catches a case missing a part: a config, a golden
// file or flags without its trace would never run.
func TestGoldenFilesComplete(t *testing.T) {
	for _, d := range traceDirs {
		for _, ext := range []string{".yaml", ".golden", ".args"} {
			files, err := filepath.Glob(filepath.Join(d.dir, "*"+ext))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				trace := strings.TrimSuffix(f, ext) + ".jsonl"
				if _, err := os.Stat(trace); err != nil {
					t.Errorf("%s has no trace: %v", f, err)
				}
			}
		}
	}
}

// checkLog fails on anything but config notices: ugm reports an
// inconsistency on release only when its books are wrong.
func checkLog(t *testing.T, log string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if line != "" && !strings.Contains(line, ": note: ") {
			t.Errorf("unexpected log line: %s", line)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// diffLines reports the first differing line by number, which is also the
// trace line that produced it when the trace has no blank lines.
func diffLines(t *testing.T, want, got []byte) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	w := strings.Split(string(want), "\n")
	g := strings.Split(string(got), "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			t.Fatalf("output line %d differs (run with -update to rewrite, then review):\nwant: %s\ngot:  %s", i+1, wl, gl)
		}
	}
	t.Fatal("output differs from the golden file")
}
