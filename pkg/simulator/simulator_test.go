package simulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// leafConfig has one leaf, root.a, where each user may use 2 cpu.
var leafConfig = queueconfigtest.Root(`
queues:
  - name: a
    limits:
      - limit: per user
        users: ["*"]
        maxresources: {vcore: 2}
`)

// twoPartitions limits root.a to 1 cpu per user in partition "tight" only.
var twoPartitions = leafConfig + `- name: tight
  queues:
  - name: root
    queues:
      - name: a
        limits:
          - limit: per user
            users: ["*"]
            maxresources: {vcore: 1}
`

// emptySnapshot is the last line when nothing is held.
const emptySnapshot = `{"users":[],"groups":[],"queues":{"queuePath":"root","resourceUsage":{},"runningApplications":[],"maxResources":{},"maxApplications":0,"children":[{"queuePath":"root.a","resourceUsage":{},"runningApplications":[],"maxResources":{},"maxApplications":0,"children":[]}]}}`

const allocA = `{"op":"allocate","pod":"p1","queue":"root.a","resources":{"cpu":"1500m"}}`

func TestRunLines(t *testing.T) {
	tests := []struct {
		name  string
		trace string
		opts  Options
		want  []string // output lines before the snapshot
	}{{
		name:  "blank lines print nothing but count",
		trace: "\n  \n" + `{"op":"nope"}` + "\n\t\r\n" + `{"op":"nope"}`,
		want: []string{
			`{"line":3,"error":"unknown op \"nope\" (want allocate, release, config, capacity, shares, time, wait or gang)"}`,
			`{"line":5,"error":"unknown op \"nope\" (want allocate, release, config, capacity, shares, time, wait or gang)"}`,
		},
	}, {
		name:  "CRLF, a byte order mark and no final newline",
		trace: "\ufeff" + allocA + "\r\n" + `{"op":"release","pod":"p1"}`,
		want:  []string{`{"pod":"p1","allowed":true}`, `{"pod":"p1","released":true}`},
	}, {
		name:  "the partition option picks the limits",
		trace: allocA,
		opts:  Options{Partition: "tight"},
		want:  []string{`{"pod":"p1","allowed":false,"reason":"user \"nobody\" would exceed maxresources in root.a: cpu 0+1500m > 1","who":"user","name":"nobody","queue":"root.a","limit":"resources","resource":"cpu"}`},
	}, {
		name:  "no HTML escaping",
		trace: `{"op":"allocate","pod":"<p&1>","queue":"root.a","resources":{"cpu":"3"}}`,
		want:  []string{`{"pod":"<p&1>","allowed":false,"reason":"user \"nobody\" would exceed maxresources in root.a: cpu 0+3 > 2","who":"user","name":"nobody","queue":"root.a","limit":"resources","resource":"cpu"}`},
	}, {
		name: "decode errors",
		trace: strings.Join([]string{
			`{"op":"allocate","pod":7}`,
			`{"op":"allocate","pod":"p","groups":[1]}`,
			`{"op":"allocate","pod":"p","labels":{"a":true}}`,
			`{"op":"config","config":{}}`,
			`"allocate"`,
			`null`,
			`{}{}`,
			`{"op":"allocate","pod":"p","extra":1}`,
			`{"op":"allocate",`,
			`{"op":"allocate","pod":"p","resources":null,"queue":"root.a"}`,
			`{"op":"allocate","pod":"","resources":{},"queue":"root.a"}`,
			`{"op":"allocate","Pod":"p","resources":{},"queue":"root.a"}`,
			`{"op":"release","pod":"p"} ]`,
		}, "\n"),
		want: []string{
			`{"line":1,"error":"field \"pod\" must be a string (found a number)"}`,
			`{"line":2,"error":"field \"groups\" must be a list of strings (found a number)"}`,
			`{"line":3,"error":"field \"labels\" must be an object of strings (found a bool)"}`,
			`{"line":4,"error":"field \"config\" must be a string (found an object)"}`,
			`{"line":5,"error":"a trace line must be a JSON object, not a string"}`,
			`{"line":6,"error":"a trace line must be a JSON object, not null"}`,
			`{"line":7,"error":"invalid JSON: unexpected data after the object"}`,
			`{"line":8,"error":"unknown field \"extra\""}`,
			`{"line":9,"error":"invalid JSON: unexpected end of line"}`,
			`{"line":10,"error":"allocate: missing \"resources\" (Kubernetes quantities, e.g. {\"cpu\":\"1\",\"memory\":\"1Gi\"})"}`,
			`{"line":11,"error":"allocate: missing \"pod\""}`,
			`{"line":12,"error":"unknown field \"Pod\""}`,
			`{"line":13,"error":"invalid JSON: unexpected data after the object"}`,
		},
	}, {
		name: "config ops",
		trace: strings.Join([]string{
			`{"op":"config","config":"partitions: [{name: other, queues: [{name: root}]}]"}`,
			`{"op":"config","config":""}`,
			`{"op":"config","config":"partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n          - name: a\n"}`,
			allocA,
		}, "\n"),
		want: []string{
			`{"config":"rejected","errors":["partition \"default\" is not in the config"]}`,
			"", // the parser's wording: checked below only for being a rejection
			`{"config":"applied"}`,
			`{"pod":"p1","allowed":true}`,
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			cfg := leafConfig
			if tc.opts.Partition != "" {
				cfg = twoPartitions
			}
			if err := Run([]byte(cfg), strings.NewReader(tc.trace), &out, tc.opts); err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(got) != len(tc.want)+1 {
				t.Fatalf("got %d lines, want %d + snapshot:\n%s", len(got), len(tc.want), out.String())
			}
			for i, w := range tc.want {
				if w == "" {
					if !strings.HasPrefix(got[i], `{"config":"rejected","errors":["`) {
						t.Errorf("line %d: got %s, want a rejection", i+1, got[i])
					}
					continue
				}
				if got[i] != w {
					t.Errorf("line %d:\ngot:  %s\nwant: %s", i+1, got[i], w)
				}
			}
		})
	}
}

func TestRunSnapshotWhenEmpty(t *testing.T) {
	var out bytes.Buffer
	if err := Run([]byte(leafConfig), strings.NewReader(""), &out, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSuffix(out.String(), "\n"); got != emptySnapshot {
		t.Errorf("got  %s\nwant %s", got, emptySnapshot)
	}
}

func TestRunLongLine(t *testing.T) {
	// A config op carries a whole YAML file: far beyond bufio.Scanner's
	// default 64 KiB token.
	pad := "#" + strings.Repeat("x", 200_000) + "\n"
	text, err := json.Marshal(pad + leafConfig)
	if err != nil {
		t.Fatal(err)
	}
	trace := `{"op":"config","config":` + string(text) + `}`
	var out bytes.Buffer
	if err := Run([]byte(leafConfig), strings.NewReader(trace), &out, Options{}); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); first != `{"config":"applied"}` {
		t.Errorf("got %s", first)
	}
}

func TestRunInitialConfigErrors(t *testing.T) {
	tests := []struct {
		name, cfg, partition string
		want                 []string // substrings, one per expected problem
	}{
		{name: "invalid", cfg: "partitions:\n  - name: default\n    colour: blue\n    queues:\n      - name: root\n", want: []string{"colour"}},
		{name: "not YAML", cfg: "partitions: [", want: []string{""}},
		{name: "missing partition", cfg: leafConfig, partition: "gpu", want: []string{`partition "gpu" is not in the config`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Run([]byte(tc.cfg), strings.NewReader(allocA), &out, Options{Partition: tc.partition})
			var cfgErr *ConfigError
			if !errors.As(err, &cfgErr) {
				t.Fatalf("got %v, want a *ConfigError", err)
			}
			if len(cfgErr.Errs) != len(tc.want) {
				t.Fatalf("got %q, want %d problems", cfgErr.Errs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(cfgErr.Errs[i], w) {
					t.Errorf("problem %d: %q does not mention %q", i, cfgErr.Errs[i], w)
				}
			}
			if out.Len() != 0 {
				t.Errorf("printed %q before refusing the config", out.String())
			}
		})
	}
}

// failingReader returns its data, then err.
type failingReader struct {
	data string
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestRunReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	var out bytes.Buffer
	err := Run([]byte(leafConfig), &failingReader{data: allocA + "\n" + `{"op":"rel`, err: boom}, &out, Options{})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("got %v, want the read error at line 2", err)
	}
	if strings.Contains(out.String(), `"users"`) {
		t.Errorf("printed a snapshot for a trace not read to the end: %s", out.String())
	}
}

// failingWriter accepts n bytes, then fails.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, io.ErrShortWrite
	}
	w.n -= len(p)
	return len(p), nil
}

func TestRunWriteError(t *testing.T) {
	for _, n := range []int{0, 10} {
		err := Run([]byte(leafConfig), strings.NewReader(allocA), &failingWriter{n: n}, Options{})
		if !errors.Is(err, io.ErrShortWrite) {
			t.Errorf("writer failing after %d bytes: got %v", n, err)
		}
	}
}

func TestRunLogsNotices(t *testing.T) {
	cfg := leafConfig + "  placementrules:\n  - name: provided\n    create: true\n"
	var out, log bytes.Buffer
	if err := Run([]byte(cfg), strings.NewReader(""), &out, Options{Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(log.String(), "config: note: ") {
		t.Errorf("log = %q, want a config note", log.String())
	}
}
