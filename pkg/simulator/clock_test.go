package simulator

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTimeLines: the contract's time op moves the clock as the wait op
// does, and its bad lines are line errors that change nothing, worded as
// the wait op's. Both ops move one clock: 30s of each reach a 60s gang
// timeout.
func TestTimeLines(t *testing.T) {
	got := runLines(t, maxConfig, Options{Requeue: true, Starvation: DefaultStarvation},
		`{"op":"time","advance":"90s"}`,
		`{"op":"time","advance":"0s"}`,
		`{"op":"time"}`,
		`{"op":"time","advance":null}`,
		`{"op":"time","advance":"3 minutes"}`,
		`{"op":"time","advance":"-1m"}`,
		`{"op":"time","advance":90}`,
		`{"op":"time","duration":"90s"}`,
		`{"op":"wait","advance":"90s"}`,
		`{"op":"time","advance":"1m","pod":"p1"}`,
		`{"op":"time","advance":"1m","delay":"1m"}`,
		gangDecl("g", `{"example.com/units":"4"}`, `"timeout":"60s"`),
		member("p1", "g", "1"),
		`{"op":"time","advance":"30s"}`,
		`{"op":"wait","duration":"29s"}`,
		`{"op":"time","advance":"1s"}`,
	)
	checkLines(t, got, []string{
		`{"advance":"1m30s"}`,
		`{"advance":"0s"}`,
		`{"line":3,"error":"time: missing \"advance\" (a Go duration, e.g. \"90s\" or \"3m\")"}`,
		`{"line":4,"error":"time: missing \"advance\" (a Go duration, e.g. \"90s\" or \"3m\")"}`,
		`{"line":5,"error":"time: bad \"advance\" \"3 minutes\" (a Go duration, e.g. \"90s\" or \"3m\")"}`,
		`{"line":6,"error":"time: \"advance\" \"-1m\" is negative: the clock only moves on"}`,
		`{"line":7,"error":"field \"advance\" must be a string (found a number)"}`,
		`{"line":8,"error":"time: missing \"advance\" (a Go duration, e.g. \"90s\" or \"3m\"); \"duration\" is the wait op's"}`,
		`{"line":9,"error":"wait: missing \"duration\" (a Go duration, e.g. \"90s\" or \"3m\"); \"advance\" is the time op's"}`,
		// Fields of other ops are ignored, as on every op.
		`{"advance":"1m0s"}`,
		`{"line":11,"error":"unknown field \"delay\""}`,
		`{"gang":"g","declared":true}`,
		`{"gang":"g","reserved":true}`,
		`{"pod":"p1","allowed":true}`,
		`{"advance":"30s"}`,
		`{"wait":"29s"}`,
		`{"advance":"1s"}`,
		`{"gang":"g","timedout":true}`,
	})
}

// TestTimeIsWait replays every golden case that has wait lines with each
// one written as the contract's time line ({"op":"time","advance":D} for
// {"op":"wait","duration":D}): the output is the golden one but for each
// {"wait":D} line, which reads {"advance":D}. So the two ops are one,
// holding, starvation and gang timeouts included.
func TestTimeIsWait(t *testing.T) {
	waitOut := regexp.MustCompile(`(?m)^\{"wait":("[^"]*")\}$`)
	cases := 0
	for _, d := range traceDirs {
		traces, err := filepath.Glob(filepath.Join(d.dir, "*.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, trace := range traces {
			base := strings.TrimSuffix(trace, ".jsonl")
			in, waits := waitsAsTime(t, mustRead(t, trace))
			if waits == 0 {
				continue
			}
			cases++
			t.Run(filepath.Base(base), func(t *testing.T) {
				var out bytes.Buffer
				if err := Run(mustRead(t, base+".yaml"), bytes.NewReader(in), &out, caseOptions(t, base)); err != nil {
					t.Fatalf("Run: %v", err)
				}
				want := waitOut.ReplaceAll(mustRead(t, base+".golden"), []byte(`{"advance":$1}`))
				if bytes.Equal(want, mustRead(t, base+".golden")) {
					t.Fatal("the golden output has no wait line")
				}
				diffLines(t, want, out.Bytes())
			})
		}
	}
	// hold-big-head, hold-starvation, gang-fit, gang-timeout-soft and
	// gang-timeout-hard at least.
	if cases < 5 {
		t.Fatalf("%d golden cases with wait lines, want at least 5", cases)
	}
}

// waitsAsTime writes each wait line of trace as a time line, and counts
// them. Other lines are kept byte for byte.
func waitsAsTime(t *testing.T, trace []byte) ([]byte, int) {
	t.Helper()
	lines := bytes.SplitAfter(trace, []byte("\n"))
	n := 0
	for i, line := range lines {
		var l map[string]any
		if json.Unmarshal(line, &l) != nil || l["op"] != opWait {
			continue
		}
		d, ok := l["duration"].(string)
		if !ok || len(l) != 2 {
			t.Fatalf("wait line %d is not {\"op\":\"wait\",\"duration\":D}: %s", i+1, line)
		}
		out, err := json.Marshal(map[string]string{"op": opTime, "advance": d})
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = append(out, '\n')
		n++
	}
	return bytes.Join(lines, nil), n
}
