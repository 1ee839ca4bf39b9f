package accounting

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

func vec(t testing.TB, m map[string]string) resources.Vector {
	t.Helper()
	v, err := resources.Parse(m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func cpu(t testing.TB, q string) resources.Vector { return vec(t, map[string]string{"cpu": q}) }

func req(t testing.TB, user, group, queue, q string) *ugm.Request {
	r := &ugm.Request{User: user, Queue: queue, App: ugm.AppKey{Namespace: "ns", ID: user}, Resources: cpu(t, q)}
	if group != "" {
		r.Groups = []string{group}
	}
	return r
}

// step is one step of a scenario: at an offset from t0, a charge or
// release of a user's cpu (in a group), or a new guaranteed share of
// root.a (cpu; "-": none).
type step struct {
	at      time.Duration
	op      string // "+", "-", "g"
	user    string
	cpu     string
	queue   string
	guarant string
}

// run plays steps on books begun at t0 and returns them at t0+end.
func run(t *testing.T, users bool, steps []step, end time.Duration) (*Books, *testingclock.FakeClock) {
	t.Helper()
	c := testingclock.NewFakeClock(t0)
	b := New(c, Options{Users: users})
	for _, s := range steps {
		c.SetTime(t0.Add(s.at))
		switch s.op {
		case "+", "-":
			q := s.queue
			if q == "" {
				q = "root.a"
			}
			r := req(t, s.user, "g-"+s.user, q, s.cpu)
			if s.op == "+" {
				b.Charged(r)
			} else {
				b.Released(r)
			}
		case "g":
			if s.guarant == "-" {
				b.SetGuaranteed(nil)
			} else {
				b.SetGuaranteed(map[string]resources.Vector{"root.a": cpu(t, s.guarant)})
			}
		}
	}
	c.SetTime(t0.Add(end))
	return b, c
}

// cpuSeconds are the report's cpu rows of kind by, in cpu-seconds:
// "queue[/name]" -> the parts (guaranteed, borrowed, unshared, idle).
func cpuSeconds(t *testing.T, b *Books, by Kind) map[string][4]float64 {
	t.Helper()
	r, err := b.Report(time.Time{}, time.Time{}, by)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][4]float64{}
	for _, row := range r.Rows {
		if row.Resource.Name() != resources.CPU {
			continue
		}
		k := row.Key.Queue
		if row.Key.Name != "" {
			k += "/" + row.Key.Name
		}
		var v [4]float64
		for i := range v {
			v[i] = row.Values[i] / 1000
		}
		out[k] = v
	}
	return out
}

func close(a, b [4]float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-6*math.Max(1, math.Abs(b[i])) {
			return false
		}
	}
	return true
}

// TestIntegration: the resource-seconds of queues, groups and users, in
// cpu-seconds as (guaranteed, borrowed, unshared, idle), exact between
// events on a fake clock.
func TestIntegration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  []step
		end    time.Duration
		queues map[string][4]float64
		users  map[string][4]float64
	}{
		{
			name:  "guaranteed 2 cpu, running 3 for an hour",
			steps: []step{{op: "g", guarant: "2"}, {op: "+", user: "sue", cpu: "3"}},
			end:   time.Hour,
			queues: map[string][4]float64{
				"root.a": {7200, 3600, 0, 0},
				"root":   {0, 0, 10800, 0}, // root is not elastic here
			},
			users: map[string][4]float64{"root.a/sue": {7200, 3600, 0, 0}},
		},
		{
			name:   "within the guaranteed: the rest idle",
			steps:  []step{{op: "g", guarant: "4"}, {op: "+", user: "sue", cpu: "3"}},
			end:    time.Hour,
			queues: map[string][4]float64{"root.a": {10800, 0, 0, 3600}, "root": {0, 0, 10800, 0}},
			users:  map[string][4]float64{"root.a/sue": {10800, 0, 0, 0}},
		},
		{
			name:   "idle all along, nothing running",
			steps:  []step{{op: "g", guarant: "4"}, {op: "+", user: "sue", cpu: "1", queue: "root.a"}, {op: "-", user: "sue", cpu: "1", queue: "root.a"}},
			end:    time.Hour,
			queues: map[string][4]float64{"root.a": {0, 0, 0, 14400}},
			users:  map[string][4]float64{},
		},
		{
			name:   "no share in force: unshared",
			steps:  []step{{op: "+", user: "sue", cpu: "3"}},
			end:    time.Hour,
			queues: map[string][4]float64{"root.a": {0, 0, 10800, 0}, "root": {0, 0, 10800, 0}},
			users:  map[string][4]float64{"root.a/sue": {0, 0, 10800, 0}},
		},
		{
			name: "the guaranteed share grows from 2 to 3 half-way",
			steps: []step{{op: "g", guarant: "2"}, {op: "+", user: "sue", cpu: "3"},
				{at: 30 * time.Minute, op: "g", guarant: "3"}},
			end:    time.Hour,
			queues: map[string][4]float64{"root.a": {2*1800 + 3*1800, 1800, 0, 0}},
			users:  map[string][4]float64{"root.a/sue": {9000, 1800, 0, 0}},
		},
		{
			name: "the share goes away half-way (shares off)",
			steps: []step{{op: "g", guarant: "2"}, {op: "+", user: "sue", cpu: "3"},
				{at: 30 * time.Minute, op: "g", guarant: "-"}},
			end:    time.Hour,
			queues: map[string][4]float64{"root.a": {3600, 1800, 5400, 0}},
			users:  map[string][4]float64{"root.a/sue": {3600, 1800, 5400, 0}},
		},
		{
			name:   "two users, pro rata to the queue's split",
			steps:  []step{{op: "g", guarant: "2"}, {op: "+", user: "alice", cpu: "2"}, {op: "+", user: "bob", cpu: "1"}},
			end:    time.Hour,
			queues: map[string][4]float64{"root.a": {7200, 3600, 0, 0}},
			users:  map[string][4]float64{"root.a/alice": {4800, 2400, 0, 0}, "root.a/bob": {2400, 1200, 0, 0}},
		},
		{
			name: "a second user comes half-way: both borrow from then",
			steps: []step{{op: "g", guarant: "2"}, {op: "+", user: "alice", cpu: "2"},
				{at: 30 * time.Minute, op: "+", user: "bob", cpu: "2"}},
			end:    time.Hour,
			queues: map[string][4]float64{"root.a": {7200, 3600, 0, 0}},
			users:  map[string][4]float64{"root.a/alice": {5400, 1800, 0, 0}, "root.a/bob": {1800, 1800, 0, 0}},
		},
		{
			name: "released after an hour: nothing more",
			steps: []step{{op: "g", guarant: "2"}, {op: "+", user: "sue", cpu: "3"},
				{at: time.Hour, op: "-", user: "sue", cpu: "3"}},
			end:    3 * time.Hour,
			queues: map[string][4]float64{"root.a": {7200, 3600, 0, 2 * 7200}},
			users:  map[string][4]float64{"root.a/sue": {7200, 3600, 0, 0}},
		},
		{
			name: "a resize (a release and a charge) changes the rate at its moment",
			steps: []step{{op: "g", guarant: "2"}, {op: "+", user: "sue", cpu: "1"},
				{at: 20 * time.Minute, op: "-", user: "sue", cpu: "1"}, {at: 20 * time.Minute, op: "+", user: "sue", cpu: "4"}},
			end:    80 * time.Minute,
			queues: map[string][4]float64{"root.a": {1200 + 7200, 7200, 0, 1200}},
			users:  map[string][4]float64{"root.a/sue": {8400, 7200, 0, 0}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := run(t, true, tc.steps, tc.end)
			got := cpuSeconds(t, b, Queue)
			for q, want := range tc.queues {
				if !close(got[q], want) {
					t.Errorf("queue %s: %v cpu-seconds (guaranteed, borrowed, unshared, idle), want %v", q, got[q], want)
				}
			}
			got = cpuSeconds(t, b, User)
			if len(got) != len(tc.users) {
				t.Errorf("users %v, want %v", got, tc.users)
			}
			for u, want := range tc.users {
				if !close(got[u], want) {
					t.Errorf("user %s: %v cpu-seconds, want %v", u, got[u], want)
				}
			}
			// Groups (each user's own here) are booked as their users.
			groups := cpuSeconds(t, b, Group)
			for u, want := range tc.users {
				q, name, _ := strings.Cut(u, "/")
				if g := groups[q+"/g-"+name]; !close(g, want) {
					t.Errorf("group g-%s: %v, want %v", name, g, want)
				}
			}
		})
	}
}

// TestNotGuaranteedResource: in an elastic queue, a resource its
// guaranteed does not name is borrowed whole (the pods: 1 of every pod,
// memory when only cpu is guaranteed), as userquota_queue_borrowed counts
// it; it has no idle series.
func TestNotGuaranteedResource(t *testing.T) {
	c := testingclock.NewFakeClock(t0)
	b := New(c, Options{})
	b.SetGuaranteed(map[string]resources.Vector{"root.a": cpu(t, "2")})
	b.Charged(&ugm.Request{User: "sue", Groups: []string{"dev"}, Queue: "root.a", Resources: vec(t, map[string]string{"cpu": "1", "memory": "1Gi", "pods": "1"})})
	c.Step(time.Hour)
	r, err := b.Report(time.Time{}, time.Time{}, Queue)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Values{}
	for _, row := range r.Rows {
		if row.Key.Queue == "root.a" {
			got[row.Resource.Name()] = row.Values
		}
	}
	want := map[string]Values{
		"cpu":    {3600 * 1000, 0, 0, 3600 * 1000},
		"memory": {0, 3600 * (1 << 30), 0, 0},
		"pods":   {0, 3600, 0, 0},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("root.a: %v, want %v", got, want)
	}
	if _, err := b.Report(time.Time{}, time.Time{}, User); err != ErrNoUsers {
		t.Errorf("a report by user without user accounts: %v, want ErrNoUsers", err)
	}
	if _, members := b.Len(); members != 1 {
		t.Errorf("%d member accounts, want the group's alone (no per-user work)", members)
	}
}

// TestIdleWithoutPods: an elastic queue's guaranteed share is booked idle
// from the moment a share table puts it in force, whether or not a pod
// ever ran in the queue: the queue that never used its guarantee is the
// one the idle report is for. A queue whose share names nothing (or that
// is not elastic) has no account until a pod runs in it.
func TestIdleWithoutPods(t *testing.T) {
	c := testingclock.NewFakeClock(t0)
	b := New(c, Options{})
	b.SetGuaranteed(map[string]resources.Vector{"root.a": cpu(t, "4"), "root.b": nil})
	c.Step(time.Hour)
	if got, want := cpuSeconds(t, b, Queue), map[string][4]float64{"root.a": {0, 0, 0, 14400}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("queues %v cpu-seconds (guaranteed, borrowed, unshared, idle), want %v", got, want)
	}
	var idle []string
	for _, ct := range b.Counters() {
		if ct.Key.Kind == Queue && ct.Guaranteed {
			idle = append(idle, fmt.Sprintf("%s %s %v", ct.Key.Queue, ct.Resource.Name(), ct.Values[Idle]/1000))
		}
	}
	if fmt.Sprint(idle) != "[root.a cpu 14400]" {
		t.Errorf("idle counters %v, want root.a's 14400 cpu-seconds", idle)
	}
	// The share goes: nothing more is idle, and the account is kept while
	// a snapshot kept shows its values.
	b.SetGuaranteed(nil)
	c.Step(time.Hour)
	if got := cpuSeconds(t, b, Queue)["root.a"]; got != [4]float64{0, 0, 0, 14400} {
		t.Errorf("after the share went: root.a %v, want the 14400 idle of the first hour", got)
	}
}
