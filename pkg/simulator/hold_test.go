package simulator

import (
	"strings"
	"testing"
	"time"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// starving: root.q holds 4 units.
var starving = queueconfigtest.Root(`
queues:
  - name: q
    resources:
      max: {example.com/units: 4}
`)

func TestWaitLines(t *testing.T) {
	got := runLines(t, starving, Options{Requeue: true, Starvation: DefaultStarvation},
		`{"op":"wait","duration":"90s"}`,
		`{"op":"wait","duration":"0s"}`,
		`{"op":"wait"}`,
		`{"op":"wait","duration":null}`,
		`{"op":"wait","duration":"3 minutes"}`,
		`{"op":"wait","duration":"-1m"}`,
		`{"op":"wait","duration":90}`,
		`{"op":"wait","duration":"1m","pod":"p1"}`,
		`{"op":"wait","duration":"1m","delay":"1m"}`,
	)
	checkLines(t, got, []string{
		`{"wait":"1m30s"}`,
		`{"wait":"0s"}`,
		`{"line":3,"error":"wait: missing \"duration\" (a Go duration, e.g. \"90s\" or \"3m\")"}`,
		`{"line":4,"error":"wait: missing \"duration\" (a Go duration, e.g. \"90s\" or \"3m\")"}`,
		`{"line":5,"error":"wait: bad \"duration\" \"3 minutes\" (a Go duration, e.g. \"90s\" or \"3m\")"}`,
		`{"line":6,"error":"wait: \"duration\" \"-1m\" is negative: the clock only moves on"}`,
		`{"line":7,"error":"field \"duration\" must be a string (found a number)"}`,
		// Fields of other ops are ignored, as on every op.
		`{"wait":"1m0s"}`,
		`{"line":9,"error":"unknown field \"delay\""}`,
	})
}

func TestPriorityField(t *testing.T) {
	got := runLines(t, starving, Options{},
		units("p1", "root.q", "1", `"priority":"high"`),
		units("p2", "root.q", "1", `"priority":1.5`),
		units("p3", "root.q", "1", `"priority":3000000000`),
		units("p4", "root.q", "1", `"priority":-5`),
	)
	checkLines(t, got, []string{
		`{"line":1,"error":"field \"priority\" must be an integer (32-bit) (found a string)"}`,
		`{"line":2,"error":"field \"priority\" must be an integer (32-bit) (found a number 1.5)"}`,
		`{"line":3,"error":"field \"priority\" must be an integer (32-bit) (found a number 3000000000)"}`,
		`{"pod":"p4","allowed":true}`,
	})
}

// TestStarvationOff: with Options.Starvation 0 a pod held for hours keeps
// no room: the small pod that fits goes first.
func TestStarvationOff(t *testing.T) {
	trace := []string{
		units("x1", "root.q", "2"),
		units("x2", "root.q", "2"),
		units("big", "root.q", "3"),
		`{"op":"wait","duration":"5h"}`,
		`{"op":"release","pod":"x2"}`,
		units("s1", "root.q", "1"),
	}
	off := runLines(t, starving, Options{Requeue: true}, trace...)
	checkLines(t, off, []string{
		`{"pod":"x1","allowed":true}`,
		`{"pod":"x2","allowed":true}`,
		`{"pod":"big","allowed":false,...`,
		`{"wait":"5h0m0s"}`,
		`{"pod":"x2","released":true}`,
		`{"pod":"s1","allowed":true}`,
	})
	on := runLines(t, starving, Options{Requeue: true, Starvation: 4*time.Hour + 59*time.Minute}, trace...)
	checkLines(t, on, []string{
		`{"pod":"x1","allowed":true}`,
		`{"pod":"x2","allowed":true}`,
		`{"pod":"big","allowed":false,...`,
		`{"wait":"5h0m0s"}`,
		`{"pod":"x2","released":true}`,
		`{"pod":"s1","allowed":false,"reason":"waiting behind pod big, held since 00:00:00 (longer than the starvation wait): the room it needs is kept for it; it was held because queue root.q would exceed max: example.com/units 2+3 > 4"}`,
	})
	checkPending(t, on, []string{"big", "s1"})
}

// TestStarvingPodOpensTheWayBehindIt: under fair order a small pod of an
// idle application is tried before the starving big one and held behind
// it; when the big one gets in, the pods held behind it are tried at once
// (the plugin's letIn).
func TestStarvingPodOpensTheWayBehindIt(t *testing.T) {
	cfg := queueconfigtest.Root(`
queues:
  - name: q
    properties:
      application.sort.policy: fair
    resources:
      max: {example.com/units: 6}
`)
	got := runLines(t, cfg, Options{Requeue: true, Starvation: DefaultStarvation},
		units("r1", "root.q", "2", `"app":"heavy"`),
		units("r2", "root.q", "1", `"app":"heavy"`),
		units("x1", "root.q", "3"),
		units("big", "root.q", "4", `"app":"heavy"`),
		`{"op":"wait","duration":"3m"}`,
		units("s1", "root.q", "1", `"app":"light"`),
		// 3 free: light (using nothing) goes first; s1 fits but is held
		// behind big, which does not fit (3+4 > 6).
		`{"op":"release","pod":"x1"}`,
		// 5 free: s1 is held behind big again, big gets in, then s1.
		`{"op":"release","pod":"r1"}`,
	)
	checkLines(t, got, []string{
		`{"pod":"r1","allowed":true}`,
		`{"pod":"r2","allowed":true}`,
		`{"pod":"x1","allowed":true}`,
		`{"pod":"big","allowed":false,...`,
		`{"wait":"3m0s"}`,
		`{"pod":"s1","allowed":false,"reason":"queue root.q would exceed max: example.com/units 6+1 > 6",...`,
		`{"pod":"x1","released":true}`,
		`{"pod":"r1","released":true}`,
		`{"pod":"big","allowed":true}`,
		`{"pod":"s1","allowed":true}`,
	})
	checkPending(t, got, []string{})
}

// TestShareChangeLetsIn: a release in root.a touches no limit of a pod
// held by root.b's share, but it changes root.b's runtime share, and the
// plugin's recompute lets the pods held by a share in.
func TestShareChangeLetsIn(t *testing.T) {
	got := runLines(t, elasticConfig, Options{Requeue: true},
		`{"op":"capacity","resources":{"example.com/units":"100"}}`,
		units("a1", "root.a", "80"),
		units("b1", "root.b", "60"),
		`{"op":"release","pod":"a1"}`,
	)
	checkLines(t, got, []string{
		`{"capacity":"applied"}`,
		`{"pod":"a1","allowed":true}`,
		`{"pod":"b1","allowed":false,"reason":"queue root.b is at its share: example.com/units 0+60 > 50 (guaranteed 50, nothing lent by other queues)",...`,
		`{"pod":"a1","released":true}`,
		`{"pod":"b1","allowed":true}`,
	})
}

// TestWithdrawnBarrier: a starving pod withdrawn by a release frees no
// room, but keeps none either: the pod held behind it is tried at once,
// as the plugin does when a held pod is deleted (forgetPod).
func TestWithdrawnBarrier(t *testing.T) {
	got := runLines(t, starving, Options{Requeue: true, Starvation: time.Minute},
		units("x1", "root.q", "2"),
		units("x2", "root.q", "1"),
		units("big", "root.q", "3"),
		`{"op":"wait","duration":"2m"}`,
		`{"op":"release","pod":"x2"}`,
		units("s1", "root.q", "1"),
		`{"op":"release","pod":"big"}`,
		`{"op":"release","pod":"x1"}`,
	)
	checkLines(t, got, []string{
		`{"pod":"x1","allowed":true}`,
		`{"pod":"x2","allowed":true}`,
		`{"pod":"big","allowed":false,...`,
		`{"wait":"2m0s"}`,
		`{"pod":"x2","released":true}`,
		`{"pod":"s1","allowed":false,"reason":"waiting behind pod big, ...`,
		`{"pod":"big","released":false}`,
		`{"pod":"s1","allowed":true}`,
		`{"pod":"x1","released":true}`,
	})
}

// reheldConfig: ann may run 4 units in all; root.b's max comes with the
// config line of TestReheldStarvingPod.
var reheldConfig = queueconfigtest.Root(`
limits:
  - limit: ann
    users: [ann]
    maxresources: {example.com/units: 4}
queues:
  - name: a
  - name: b
`)

// TestReheldStarvingPod: a starving pod held again by a limit the pod
// behind it does not count against keeps no room from it, as in the
// plugin: after the config line big is held by root.b's max and small
// (root.a) is let in without a release.
func TestReheldStarvingPod(t *testing.T) {
	next := strings.Replace(strings.Replace(reheldConfig, "units: 4}", "units: 8}", 1),
		"  - name: b", "  - name: b\n        resources: {max: {example.com/units: 3}}", 1)
	got := runLines(t, reheldConfig, Options{Requeue: true, Starvation: time.Minute},
		units("x1", "root.a", "3", `"user":"ann"`),
		units("y1", "root.b", "2", `"user":"bob"`),
		units("big", "root.b", "2", `"user":"ann"`),
		`{"op":"wait","duration":"2m"}`,
		units("small", "root.a", "1", `"user":"ann"`),
		`{"op":"config","config":`+jsonString(next)+`}`,
	)
	checkLines(t, got, []string{
		`{"pod":"x1","allowed":true}`,
		`{"pod":"y1","allowed":true}`,
		`{"pod":"big","allowed":false,...`,
		`{"wait":"2m0s"}`,
		`{"pod":"small","allowed":false,"reason":"waiting behind pod big, ...`,
		`{"config":...`,
		`{"pod":"small","allowed":true}`,
	})
}
