package simulator

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// elasticConfig: an elastic root with two leaves, each guaranteed 50 units
// and max 200 (equal default weights; the max never binds before the
// share); sue may use 10 units in root.a.
var elasticConfig = queueconfigtest.Root(`
properties:
  quota.sharing: elastic
queues:
  - name: a
    resources:
      guaranteed: {example.com/units: 50}
      max: {example.com/units: 200}
    limits:
      - limit: sue
        users: [sue]
        maxresources: {example.com/units: 10}
  - name: b
    resources:
      guaranteed: {example.com/units: 50}
      max: {example.com/units: 200}
`)

// maxConfig: no elastic queue; root.q may hold 10 units.
var maxConfig = queueconfigtest.Root(`
queues:
  - name: q
    resources:
      max: {example.com/units: 10}
`)

// units is an allocate line of n units.
func units(pod, queue, n string, extra ...string) string {
	fields := []string{`"op":"allocate"`, `"pod":"` + pod + `"`, `"queue":"` + queue + `"`}
	fields = append(fields, extra...)
	fields = append(fields, `"resources":{"example.com/units":"`+n+`"}`)
	return "{" + strings.Join(fields, ",") + "}"
}

// runLines replays trace lines and returns the output lines, the snapshot
// last.
func runLines(t *testing.T, cfg string, opts Options, lines ...string) []string {
	t.Helper()
	var out bytes.Buffer
	if err := Run([]byte(cfg), strings.NewReader(strings.Join(lines, "\n")), &out, opts); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
}

// checkLines compares every output line but the snapshot. A want line
// ending in "..." matches any line with that prefix.
func checkLines(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want)+1 {
		t.Fatalf("got %d lines, want %d + snapshot:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if p, ok := strings.CutSuffix(w, "..."); ok {
			if !strings.HasPrefix(got[i], p) {
				t.Errorf("line %d:\ngot:  %s\nwant: %s...", i+1, got[i], p)
			}
		} else if got[i] != w {
			t.Errorf("line %d:\ngot:  %s\nwant: %s", i+1, got[i], w)
		}
	}
}

// checkPending compares the pending list of the snapshot, got's last line,
// with want: nil for a snapshot without one, empty for one where nothing
// is held.
func checkPending(t *testing.T, got, want []string) {
	t.Helper()
	var s struct {
		Pending *[]string `json:"pending"`
	}
	if err := json.Unmarshal([]byte(got[len(got)-1]), &s); err != nil {
		t.Fatal(err)
	}
	var p []string
	if s.Pending != nil {
		p = *s.Pending
	}
	if (p == nil) != (want == nil) || !slices.Equal(p, want) {
		t.Errorf("snapshot pending = %#v, want %#v", p, want)
	}
}

// TestRequeueLetsInInOrder: one application per pod, all of one age
// order: the release lets them in oldest first, and one that does not fit
// does not block a smaller one behind it.
func TestRequeueLetsInInOrder(t *testing.T) {
	got := runLines(t, maxConfig, Options{Requeue: true},
		units("x1", "root.q", "10"),
		units("p1", "root.q", "6"),
		units("p2", "root.q", "4"),
		units("p3", "root.q", "5"),
		`{"op":"release","pod":"x1"}`,
		`{"op":"release","pod":"p1"}`,
	)
	checkLines(t, got, []string{
		`{"pod":"x1","allowed":true}`,
		`{"pod":"p1","allowed":false,...`,
		`{"pod":"p2","allowed":false,...`,
		`{"pod":"p3","allowed":false,...`,
		`{"pod":"x1","released":true}`,
		// p1 and p2 fill the queue oldest first; p3 would fit before p2
		// but waits its turn.
		`{"pod":"p1","allowed":true}`,
		`{"pod":"p2","allowed":true}`,
		`{"pod":"p1","released":true}`,
		`{"pod":"p3","allowed":true}`,
	})
	checkPending(t, got, []string{})
}

// TestRequeuePlacementWaitsForConfig: a pod held because it has no queue
// is not let in by a release, even one whose admissions create its queue
// (the plugin lets in only the pods of the limits a release touched); a
// config line tries every held pod.
func TestRequeuePlacementWaitsForConfig(t *testing.T) {
	cfg := `partitions:
  - name: default
    placementrules:
      - name: provided
      - name: tag
        value: namespace
        create: true
        filter:
          type: allow
          users: [maker]
        parent:
          name: fixed
          value: root.t
    queues:
      - name: root
        queues:
          - name: t
            parent: true
            resources:
              max: {example.com/units: 10}
            queues:
              - name: q
`
	cfgLine, err := json.Marshal(map[string]string{"op": "config", "config": cfg})
	if err != nil {
		t.Fatal(err)
	}
	got := runLines(t, cfg, Options{Requeue: true},
		units("x1", "root.t.q", "10"),
		// Only maker's pods create root.t.dev; p1 needs it to exist.
		units("p1", "root.t.dev", "1", `"user":"user"`),
		units("p2", "", "1", `"user":"maker"`, `"namespace":"dev"`),
		`{"op":"release","pod":"x1"}`,
		string(cfgLine),
	)
	checkLines(t, got, []string{
		`{"pod":"x1","allowed":true,"queue":"root.t.q"}`,
		`{"pod":"p1","allowed":false,"reason":"no placement rule placed the pod: ...`,
		`{"pod":"p2","allowed":false,...`,
		`{"pod":"x1","released":true}`,
		`{"pod":"p2","allowed":true,"queue":"root.t.dev"}`,
		`{"config":"applied"}`,
		`{"pod":"p1","allowed":true,"queue":"root.t.dev"}`,
	})
}

// TestRequeueUserRefusedIsNoDemand: a pod waiting on sue's user limit does
// not take root.a's share from root.b, until a config lifts the limit and
// the pod waits on the share instead.
func TestRequeueUserRefusedIsNoDemand(t *testing.T) {
	lifted := strings.Replace(elasticConfig, "maxresources: {example.com/units: 10}", "maxresources: {example.com/units: 100}", 1)
	cfgLine, err := json.Marshal(map[string]string{"op": "config", "config": lifted})
	if err != nil {
		t.Fatal(err)
	}
	got := runLines(t, elasticConfig, Options{Requeue: true},
		`{"op":"capacity","resources":{"example.com/units":"100"}}`,
		// Above root.a's guaranteed: no exemption from the share.
		units("s1", "root.a", "60", `"user":"sue"`),
		`{"op":"shares"}`,
		units("b1", "root.b", "100"),
		string(cfgLine),
		`{"op":"shares"}`,
		units("b2", "root.b", "10"),
	)
	checkLines(t, got, []string{
		`{"capacity":"applied"}`,
		`{"pod":"s1","allowed":false,"reason":"user \"sue\" would exceed maxresources in root.a: example.com/units 0+60 > 10","who":"user",...`,
		// s1 waits but is no demand.
		`{"shares":[{"queue":"root","guaranteed":{"example.com/units":100},"max":{"example.com/units":100},"demand":{},"runtime":{"example.com/units":100}},` +
			`{"queue":"root.a","guaranteed":{"example.com/units":50},"max":{"example.com/units":200},"demand":{},"runtime":{"example.com/units":0}},` +
			`{"queue":"root.b","guaranteed":{"example.com/units":50},"max":{"example.com/units":200},"demand":{},"runtime":{"example.com/units":0}}]}`,
		// So root.b may borrow root.a's whole guaranteed share.
		`{"pod":"b1","allowed":true}`,
		`{"config":"applied"}`,
		// The retry refuses s1 for root.a's share: it is demand again.
		`{"shares":[{"queue":"root","guaranteed":{"example.com/units":100},"max":{"example.com/units":100},"demand":{"example.com/units":160,"pods":2},"runtime":{"example.com/units":100}},` +
			`{"queue":"root.a","guaranteed":{"example.com/units":50},"max":{"example.com/units":200},"demand":{"example.com/units":60,"pods":1},"runtime":{"example.com/units":50,"pods":1}},` +
			`{"queue":"root.b","guaranteed":{"example.com/units":50},"max":{"example.com/units":200},"demand":{"example.com/units":100,"pods":1},"runtime":{"example.com/units":50,"pods":1}}]}`,
		`{"pod":"b2","allowed":false,"reason":"queue root.b is at its share: example.com/units 100+10 > 50 (guaranteed 50, nothing lent by other queues)","who":"queue","name":"root.b","queue":"root.b","limit":"share","resource":"example.com/units"}`,
	})
	checkPending(t, got, []string{"s1", "b2"})
}

// TestSharesAskingPodIsDemand: without --requeue the pod being decided is
// its queue's demand, and no longer once refused.
func TestSharesAskingPodIsDemand(t *testing.T) {
	got := runLines(t, elasticConfig, Options{},
		`{"op":"capacity","resources":{"example.com/units":"100"}}`,
		// Demand 80 with b idle: a's share is 80.
		units("a1", "root.a", "80"),
		units("b1", "root.b", "60"),
		`{"op":"shares"}`,
		`{"op":"release","pod":"a1"}`,
	)
	checkLines(t, got, []string{
		`{"capacity":"applied"}`,
		`{"pod":"a1","allowed":true}`,
		`{"pod":"b1","allowed":false,"reason":"queue root.b is at its share: example.com/units 0+60 > 50 (guaranteed 50, nothing lent by other queues)",...`,
		`{"shares":[{"queue":"root","guaranteed":{"example.com/units":100},"max":{"example.com/units":100},"demand":{"example.com/units":80,"pods":1},"runtime":{"example.com/units":100}},` +
			`{"queue":"root.a","guaranteed":{"example.com/units":50},"max":{"example.com/units":200},"demand":{"example.com/units":80,"pods":1},"runtime":{"example.com/units":80,"pods":1}},` +
			`{"queue":"root.b","guaranteed":{"example.com/units":50},"max":{"example.com/units":200},"demand":{},"runtime":{"example.com/units":0,"pods":0}}]}`,
		// No retry without --requeue: b1 is gone.
		`{"pod":"a1","released":true}`,
	})
	if strings.Contains(got[len(got)-1], `"pending"`) {
		t.Errorf("snapshot without --requeue lists pending pods: %s", got[len(got)-1])
	}
}

func TestRequeueEdgeCases(t *testing.T) {
	got := runLines(t, maxConfig, Options{Requeue: true},
		units("x1", "root.q", "10"),
		units("p1", "root.q", "5"),
		// Named again while it waits: the first line stands.
		units("p1", "root.q", "1"),
		units("x1", "root.q", "1"),
		// A line error and a malformed allocate are not retried.
		`{"op":"release"}`,
		`{"op":"allocate","pod":"p9","queue":"root.q","resources":{"example.com/units":"x"}}`,
		// A pod in no queue waits too.
		units("p2", "root.nope", "1"),
		// A held pod released is withdrawn, not released: it frees
		// nothing, so nothing is let in.
		`{"op":"release","pod":"p1"}`,
		units("p1", "root.q", "1"),
		// A rejected config changes nothing and lets nothing in.
		`{"op":"config","config":"partitions: []"}`,
		// A config creating root.nope lets p2 in (held for placement,
		// without a queue, it sorts first); every held pod is tried
		// after a config line, so p1 too now that q holds 20.
		`{"op":"config","config":"partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n          - name: q\n            resources:\n              max: {example.com/units: 20}\n          - name: nope\n"}`,
	)
	checkLines(t, got, []string{
		`{"pod":"x1","allowed":true}`,
		`{"pod":"p1","allowed":false,...`,
		`{"pod":"p1","error":"already pending"}`,
		`{"pod":"x1","error":"already allocated"}`,
		`{"line":5,"error":"release: missing \"pod\""}`,
		`{"line":6,"error":"allocate: resources: ...`,
		`{"pod":"p2","allowed":false,"reason":"queue \"root.nope\" does not exist in the queue config"}`,
		`{"pod":"p1","released":false}`,
		`{"pod":"p1","allowed":false,...`,
		`{"config":"rejected",...`,
		`{"config":"applied"}`,
		`{"pod":"p2","allowed":true}`,
		`{"pod":"p1","allowed":true}`,
	})
	checkPending(t, got, []string{})
}

// TestRequeueConfigMovesDemand: after a config line a waiting pod is the
// demand of the queue the new config places it in.
func TestRequeueConfigMovesDemand(t *testing.T) {
	// Rules send pods to root.<namespace>; the second config sends them
	// to root.b instead, fixed.
	rules := func(rule string) string {
		return `partitions:
  - name: default
    placementrules:
` + rule + `
    queues:
      - name: root
        properties:
          quota.sharing: elastic
        queues:
          - name: a
            resources:
              guaranteed: {example.com/units: 50}
          - name: b
            resources:
              guaranteed: {example.com/units: 50}
`
	}
	first := rules("      - name: fixed\n        value: root.a")
	second, err := json.Marshal(map[string]string{"op": "config", "config": rules("      - name: fixed\n        value: root.b")})
	if err != nil {
		t.Fatal(err)
	}
	got := runLines(t, first, Options{Requeue: true},
		`{"op":"capacity","resources":{"example.com/units":"0"}}`,
		`{"op":"allocate","pod":"p1","resources":{"example.com/units":"7"}}`,
		string(second),
		`{"op":"shares"}`,
	)
	checkLines(t, got, []string{
		`{"capacity":"applied"}`,
		`{"pod":"p1","allowed":false,...`,
		`{"config":"applied"}`,
		`{"shares":[{"queue":"root","guaranteed":{},"max":{"example.com/units":0},"demand":{"example.com/units":7,"pods":1},"runtime":{"example.com/units":0}},` +
			`{"queue":"root.a","guaranteed":{},"max":{},"demand":{},"runtime":{"example.com/units":0,"pods":0}},` +
			`{"queue":"root.b","guaranteed":{},"max":{},"demand":{"example.com/units":7,"pods":1},"runtime":{"example.com/units":0,"pods":1}}]}`,
	})
}

// TestNonElasticUnchangedByCapacity: shares bind only elastic queues; a
// capacity line does not limit a config without quota.sharing.
func TestNonElasticUnchangedByCapacity(t *testing.T) {
	got := runLines(t, maxConfig, Options{},
		`{"op":"capacity","resources":{"example.com/units":"1"}}`,
		units("p1", "root.q", "10"),
	)
	checkLines(t, got, []string{`{"capacity":"applied"}`, `{"pod":"p1","allowed":true}`})
}
