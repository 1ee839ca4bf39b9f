package ugm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// admitConfig: sue may use 2 cpu in root.a; root.a runs 2 applications at
// most; root.dyn creates a leaf per user with at most 3 cpu.
const admitConfig = `
partitions:
- name: default
  placementrules: [{name: user, create: true, parent: {name: fixed, value: root.dyn}}]
  queues:
  - name: root
    submitacl: "*"
    queues:
    - name: a
      maxapplications: 2
      limits:
      - limit: sue
        users: [sue]
        maxresources: {vcore: 2}
    - name: dyn
      parent: true
      childtemplate:
        resources: {max: {vcore: 3}}
`

// admitOp is one step of an admission scenario: admit, unadmit, commit,
// force (ForceCommit), release (Decrease of a committed pod) or decide
// (Decide for key), and the refusal text wanted ("" for success).
type admitOp struct {
	op, key string
	r       *Request
	want    string
}

func TestAdmissions(t *testing.T) {
	cpu1 := func(user, queue, app string) *Request { return req(user, nil, queue, app, res(t, "cpu", "1")) }
	for _, tc := range []struct {
		name string
		ops  []admitOp
	}{
		{"admitted room counts for others, not for the pod itself", []admitOp{
			{op: "admit", key: "p1", r: cpu1("sue", "root.a", "app")},
			{op: "admit", key: "p2", r: cpu1("sue", "root.a", "app")},
			{op: "admit", key: "p3", r: cpu1("sue", "root.a", "app"),
				want: `user "sue" would exceed maxresources in root.a: cpu 2+1 > 2 (2 of it admitted, not running yet)`},
			{op: "decide", key: "p1", r: cpu1("sue", "root.a", "app")},
			{op: "decide", key: "p9", r: cpu1("sue", "root.a", "app"), want: `user "sue" would exceed maxresources in root.a: cpu 2+1 > 2 (2 of it admitted, not running yet)`},
		}},
		{"a commit turns the room into usage; an unadmit frees it", []admitOp{
			{op: "admit", key: "p1", r: cpu1("sue", "root.a", "app")},
			{op: "admit", key: "p2", r: cpu1("sue", "root.a", "app")},
			{op: "commit", key: "p1", r: cpu1("sue", "root.a", "app")},
			{op: "decide", key: "p3", r: cpu1("sue", "root.a", "app"), want: `user "sue" would exceed maxresources in root.a: cpu 2+1 > 2 (1 of it admitted, not running yet)`},
			{op: "unadmit", key: "p2"},
			{op: "decide", key: "p3", r: cpu1("sue", "root.a", "app")},
			{op: "unadmit", key: "p2", want: "not admitted"},
		}},
		{"an admitted application counts for maxapplications", []admitOp{
			{op: "admit", key: "x1", r: cpu1("bob", "root.a", "x")},
			{op: "admit", key: "y1", r: cpu1("bob", "root.a", "y")},
			{op: "admit", key: "z1", r: cpu1("bob", "root.a", "z"), want: "queue root.a would exceed maxapplications: 2+1 > 2"},
			{op: "admit", key: "x2", r: cpu1("bob", "root.a", "x")},
			{op: "commit", key: "x1", r: cpu1("bob", "root.a", "x")},
			{op: "admit", key: "z1", r: cpu1("bob", "root.a", "z"), want: "queue root.a would exceed maxapplications: 2+1 > 2"},
			// x runs; its last pod going leaves x admitted only (x2).
			{op: "release", key: "x1", r: cpu1("bob", "root.a", "x")},
			{op: "admit", key: "z1", r: cpu1("bob", "root.a", "z"), want: "queue root.a would exceed maxapplications: 2+1 > 2"},
			{op: "unadmit", key: "x2"},
			{op: "admit", key: "z1", r: cpu1("bob", "root.a", "z")},
		}},
		{"an application admitted for one user is not another's", []admitOp{
			{op: "admit", key: "s1", r: cpu1("sue", "root.a", "shared")},
			{op: "admit", key: "b1", r: cpu1("bob", "root.a", "shared"),
				want: `application ns/shared is already charged to user "sue" in queue root.a (this pod: user "bob", queue root.a)`},
		}},
		{"a queue to create holds room before it exists", []admitOp{
			{op: "admit", key: "d1", r: withCreate(req("ann", nil, "root.dyn.ann", "app", res(t, "cpu", "2")))},
			{op: "admit", key: "d2", r: withCreate(req("ann", nil, "root.dyn.ann", "app", res(t, "cpu", "2"))),
				want: "queue root.dyn.ann would exceed max: cpu 2+2 > 3 (2 of it admitted, not running yet)"},
			{op: "commit", key: "d1", r: withCreate(req("ann", nil, "root.dyn.ann", "app", res(t, "cpu", "2")))},
			{op: "decide", key: "d2", r: withCreate(req("ann", nil, "root.dyn.ann", "app", res(t, "cpu", "2"))),
				want: "queue root.dyn.ann would exceed max: cpu 2+2 > 3"},
		}},
		{"a pod found running drops its room", []admitOp{
			{op: "admit", key: "p1", r: cpu1("sue", "root.a", "app")},
			{op: "force", key: "p1", r: cpu1("sue", "root.a", "app")},
			{op: "unadmit", key: "p1", want: "not admitted"},
		}},
		{"admitting again replaces the pod's room", []admitOp{
			{op: "admit", key: "p1", r: cpu1("sue", "root.a", "app")},
			{op: "admit", key: "p1", r: req("sue", nil, "root.a", "app", res(t, "cpu", "2"))},
			{op: "decide", key: "p2", r: cpu1("sue", "root.a", "app"), want: `user "sue" would exceed maxresources in root.a: cpu 2+1 > 2 (2 of it admitted, not running yet)`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := withConfig(t, admitConfig)
			runOps(t, m, tc.ops)
		})
	}
}

// runOps runs an admission or gang scenario on m, failing at the first
// step whose error text is not the one wanted. Gang ops: reserve
// (ReserveGang), draw (DrawGang on the gang before the key's slash),
// releaseGang (ReleaseGang).
func runOps(t *testing.T, m *Manager, ops []admitOp) {
	t.Helper()
	for i, op := range ops {
		var err error
		switch op.op {
		case "admit":
			err = m.Admit(op.key, op.r)
		case "unadmit":
			if _, ok := m.Unadmit(op.key); !ok {
				err = fmt.Errorf("not admitted")
			}
		case "dropRunning":
			if !m.DropRunning(op.key) {
				err = fmt.Errorf("not admitted")
			}
		case "commit":
			err = m.Commit(op.key, op.r)
		case "force":
			_, err = m.ForceCommit(op.key, op.r)
		case "release":
			err = m.Decrease(op.r)
		case "decide":
			r := *op.r
			err = m.Decide(op.key, func(*InForce, Queues) (Request, error) { return r, nil }, false).Err
		case "reserve":
			err = m.ReserveGang(op.key, op.r)
		case "draw":
			gang, _, _ := strings.Cut(op.key, "/")
			_, err = m.DrawGang(gang, op.key, op.r)
		case "releaseGang":
			if _, ok := m.ReleaseGang(op.key); !ok {
				err = fmt.Errorf("no reservation")
			}
		case "trimGang":
			// op.r is the gang's minimum.
			if _, ok := m.TrimGang(op.key, op.r.Resources); !ok {
				err = fmt.Errorf("nothing trimmed")
			}
		default:
			t.Fatalf("step %d: unknown op %q", i, op.op)
		}
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != op.want {
			t.Fatalf("step %d (%s %s): %q, want %q", i, op.op, op.key, got, op.want)
		}
	}
}

func withCreate(r *Request) *Request { r.Create = true; return r }

// TestAdmissionsAreNotUsage: room held shows nowhere as usage, and a user
// with admissions only is no tracked user.
func TestAdmissionsAreNotUsage(t *testing.T) {
	m := withConfig(t, admitConfig)
	if err := m.Admit("p1", req("sue", []string{"dev"}, "root.a", "app", res(t, "cpu", "1"))); err != nil {
		t.Fatal(err)
	}
	if u := m.Users(); len(u) != 0 {
		t.Errorf("users with admissions only: %+v", u)
	}
	if q := m.Queues(); !q.ResourceUsage.IsZero() || len(q.RunningApplications) != 0 {
		t.Errorf("root shows admissions as usage: %+v", q)
	}
	if !m.Admitted("p1") || m.AdmittedCount() != 1 {
		t.Error("p1 not admitted")
	}
	m.Unadmit("p1")
	if !m.adm.none() || len(m.adm.users) != 0 || len(m.adm.queues) != 0 || len(m.adm.apps) != 0 {
		t.Errorf("room left behind: %+v", m.adm)
	}
}

// TestAdmissionsConcurrent admits, commits, releases and unadmits from
// several goroutines (run with -race); afterwards nothing is held and
// nothing is used.
func TestAdmissionsConcurrent(t *testing.T) {
	m := withConfig(t, admitConfig)
	parallel(4, func(g int) {
		for i := 0; i < 200; i++ {
			key := fmt.Sprintf("g%d-%d", g, i)
			r := req(fmt.Sprintf("u%d", g), nil, "root.a", fmt.Sprintf("app%d", i%2), res(t, "cpu", "100m"))
			if m.Admit(key, r) != nil {
				continue
			}
			if i%3 == 0 {
				m.Unadmit(key)
				continue
			}
			if m.Commit(key, r) == nil {
				if err := m.Decrease(r); err != nil {
					t.Error(err)
				}
			}
		}
	})
	if !m.adm.none() || len(m.adm.queues) != 0 || len(m.adm.apps) != 0 {
		t.Errorf("room left behind: %d admissions, %d queues, %d apps", len(m.adm.byKey), len(m.adm.queues), len(m.adm.apps))
	}
	if diff := cmp.Diff(0, len(m.apps)); diff != "" {
		t.Errorf("applications left running (-want,+got):\n%s", diff)
	}
}

// TestUnadmitAll: a config change drops every admission; the usage stays.
func TestUnadmitAll(t *testing.T) {
	m := withConfig(t, admitConfig)
	for i := 0; i < 2; i++ {
		if err := m.Admit(fmt.Sprint("p", i), req("sue", nil, "root.a", "app", res(t, "cpu", "1"))); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.UnadmitAll(); n != 2 || !m.adm.none() || m.AdmittedCount() != 0 {
		t.Fatalf("UnadmitAll = %d, %d left", n, m.AdmittedCount())
	}
	if err := m.Admit("p9", req("sue", nil, "root.a", "app", res(t, "cpu", "2"))); err != nil {
		t.Errorf("room left after UnadmitAll: %v", err)
	}
}
