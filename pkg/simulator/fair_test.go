package simulator

import (
	"bytes"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

var fairQueue = queueconfigtest.Root(`
submitacl: "*"
queues:
- name: q
  resources: {max: {vcore: 2}}
  properties: {userquota.fairness: user}
`)

func replay(t *testing.T, config, trace string, opts Options) []string {
	t.Helper()
	var out bytes.Buffer
	if err := Run([]byte(config), strings.NewReader(trace), &out, opts); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(out.String()), "\n")
}

// TestRuntime: a pod with a runtime completes when the clock passes it
// (in time order, then charge order), and lets in what it frees; one
// released before is not completed; bad runtimes are line errors.
func TestRuntime(t *testing.T) {
	trace := `{"op":"allocate","pod":"a","user":"sue","queue":"root.q","resources":{"cpu":"1"},"runtime":"10m"}
{"op":"allocate","pod":"b","user":"sue","queue":"root.q","resources":{"cpu":"1"},"runtime":"5m"}
{"op":"allocate","pod":"c","user":"bob","queue":"root.q","resources":{"cpu":"1"},"runtime":"1m"}
{"op":"release","pod":"a"}
{"op":"allocate","pod":"a","user":"sue","queue":"root.q","resources":{"cpu":"1"},"runtime":"20m"}
{"op":"time","advance":"12m"}
{"op":"allocate","pod":"x","queue":"root.q","resources":{"cpu":"1"},"runtime":"0s"}
{"op":"allocate","pod":"x","queue":"root.q","resources":{"cpu":"1"},"runtime":"-1m"}
{"op":"allocate","pod":"x","queue":"root.q","resources":{"cpu":"1"},"runtime":"soon"}
{"op":"time","advance":"1h"}`
	got := replay(t, fairQueue, trace, Options{Requeue: true})
	want := []string{
		`{"pod":"a","allowed":true}`,
		`{"pod":"b","allowed":true}`,
		`{"pod":"c","allowed":false,"reason":"queue root.q would exceed max: cpu 2+1 > 2","who":"queue","name":"root.q","queue":"root.q","limit":"resources","resource":"cpu"}`,
		`{"pod":"a","released":true}`,
		`{"pod":"c","allowed":true}`,
		`{"pod":"a","allowed":false,"reason":"queue root.q would exceed max: cpu 2+1 > 2","who":"queue","name":"root.q","queue":"root.q","limit":"resources","resource":"cpu"}`,
		`{"advance":"12m0s"}`,
		`{"pod":"c","completed":"1m0s"}`,
		`{"pod":"a","allowed":true}`,
		`{"pod":"b","completed":"5m0s"}`,
		`{"line":7,"error":"allocate: \"runtime\" \"0s\" must be above 0 (leave it out for a pod that runs until released)"}`,
		`{"line":8,"error":"allocate: \"runtime\" \"-1m\" must be above 0 (leave it out for a pod that runs until released)"}`,
		`{"line":9,"error":"allocate: bad \"runtime\" \"soon\" (a Go duration, e.g. \"90s\" or \"3m\")"}`,
		`{"advance":"1h0m0s"}`,
		`{"pod":"a","completed":"21m0s"}`,
	}
	if len(got) < len(want) {
		t.Fatalf("got %d lines:\n%s", len(got), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, got[i], w)
		}
	}
}

// TestJainIndex: the index over the dominant shares of the users that run
// or wait: 1 while one user runs alone, 1/n when one of n runs
// everything, mean over the samples and over the simulated time.
func TestJainIndex(t *testing.T) {
	trace := `{"op":"allocate","pod":"a1","user":"sue","queue":"root.q","resources":{"cpu":"1"}}
{"op":"allocate","pod":"a2","user":"sue","queue":"root.q","resources":{"cpu":"1"},"runtime":"30m"}
{"op":"allocate","pod":"b1","user":"bob","queue":"root.q","resources":{"cpu":"1"}}
{"op":"time","advance":"1h"}`
	got := replay(t, fairQueue, trace, Options{Requeue: true, Fairness: true})
	// Samples: after a1 (sue alone: 1), a2 (1), b1 held (sue 2 of 2,
	// bob 0: 1/2), at 30m a2 completes and b1 is let in (1 each: 1),
	// after the time line (1). Over time: 1/2 for 30m, 1 for 30m.
	want := `{"fairness":{"index":"jain over users' dominant shares","samples":5,"mean":0.9,"timeMean":0.75,"min":0.5,"last":1}}`
	if last := got[len(got)-1]; last != want {
		t.Errorf("got  %s\nwant %s", last, want)
	}
	// Without the option no line is added.
	if got := replay(t, fairQueue, trace, Options{Requeue: true}); strings.Contains(got[len(got)-1], "fairness") {
		t.Error("a fairness line without Options.Fairness")
	}
}

// TestFairnessTurnedOn: a config that turns fairness on orders the held
// pods by the usage of the pods that ran before it (the history, which
// recorded nothing without a fair queue, is synced from the live
// charges): bob, who runs nothing, goes before sue, who runs a pod,
// though sue's pod came first.
func TestFairnessTurnedOn(t *testing.T) {
	plain := strings.Replace(fairQueue, "properties: {userquota.fairness: user}", "", 1)
	trace := strings.Join([]string{
		`{"op":"allocate","pod":"s1","user":"sue","queue":"root.q","resources":{"cpu":"1"}}`,
		`{"op":"allocate","pod":"x","user":"ann","queue":"root.q","resources":{"cpu":"1"}}`,
		`{"op":"config","config":` + jsonString(fairQueue) + `}`,
		`{"op":"allocate","pod":"s2","user":"sue","queue":"root.q","resources":{"cpu":"1"}}`,
		`{"op":"allocate","pod":"b1","user":"bob","queue":"root.q","resources":{"cpu":"1"}}`,
		`{"op":"release","pod":"x"}`,
	}, "\n")
	got := replay(t, plain, trace, Options{Requeue: true})
	want := `{"pod":"b1","allowed":true}`
	for i, line := range got {
		if strings.HasPrefix(line, `{"pod":"x","released":true}`) {
			if i+1 >= len(got) || got[i+1] != want {
				t.Fatalf("after x's release got:\n%s\nwant next %s", strings.Join(got[i:], "\n"), want)
			}
			return
		}
	}
	t.Fatalf("x was not released:\n%s", strings.Join(got, "\n"))
}
