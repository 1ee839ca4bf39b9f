package ugm

import (
	"errors"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
)

// npConfig: a (guaranteed 4 cpu) and free (no guaranteed) share 20 cpu;
// tenants' dynamic leaves are guaranteed 1 cpu each; c is not elastic.
var npConfig = queueconfigtest.Root(`
submitacl: "*"
queues:
  - name: shared
    properties: {quota.sharing: elastic}
    queues:
      - name: a
        resources: {guaranteed: {cpu: 4}, max: {cpu: 20}}
      - name: free
        resources: {max: {cpu: 20}}
      - name: tenants
        parent: true
        childtemplate:
          resources: {guaranteed: {cpu: 1}, max: {cpu: 5}}
  - name: c
`)

func npReq(user, queue, app string, v resources.Vector) *Request {
	r := req(user, nil, queue, app, v)
	r.NonPreemptible = true
	return r
}

func TestNonPreemptibleOnlyWithinGuaranteed(t *testing.T) {
	cpu := func(s string) resources.Vector { return res(t, "cpu", s) }
	capacity := resources.NewLimit(map[string]int64{"cpu": 20000})
	setup := func(t *testing.T) *Manager {
		m := withConfig(t, npConfig)
		// a's demand is high, so its runtime share is well above its
		// guaranteed: only the non-preemptible rule can refuse below it.
		m.SetShares(m.ComputeShares(map[string]resources.Vector{
			"root.shared.a": cpu("14"), "root.shared.free": cpu("1"), "root.shared.tenants.t1": cpu("2"),
		}, capacity))
		return m
	}
	guaranteedRefusal := func(t *testing.T, err error, queue, want string) {
		t.Helper()
		var r *Refusal
		if !errors.As(err, &r) || r.Limit != LimitGuaranteed || r.Queue != queue {
			t.Fatalf("got %v, want a guaranteed refusal on %s", err, queue)
		}
		if err.Error() != want {
			t.Errorf("reason %q, want %q", err.Error(), want)
		}
	}

	for _, tc := range []struct {
		name string
		run  func(t *testing.T, m *Manager)
	}{
		{"up to the guaranteed share, then refused", func(t *testing.T, m *Manager) {
			if err := m.Increase(npReq("ann", "root.shared.a", "np1", cpu("3"))); err != nil {
				t.Fatalf("within guaranteed: %v", err)
			}
			guaranteedRefusal(t, m.Check(npReq("ann", "root.shared.a", "np2", cpu("2"))), "root.shared.a",
				"queue root.shared.a has no guaranteed room left for non-preemptible pods: cpu 3+2 > 4 (non-preemptible pods never use capacity lent by other queues)")
			// A preemptible pod may still borrow.
			if err := m.Check(req("ann", nil, "root.shared.a", "p1", cpu("8"))); err != nil {
				t.Fatalf("preemptible pod refused: %v", err)
			}
		}},
		{"preemptible usage does not count", func(t *testing.T, m *Manager) {
			if err := m.Increase(req("ann", nil, "root.shared.a", "p1", cpu("10"))); err != nil {
				t.Fatal(err)
			}
			if err := m.Check(npReq("ann", "root.shared.a", "np1", cpu("4"))); err != nil {
				t.Fatalf("non-preemptible pod within guaranteed refused: %v", err)
			}
		}},
		{"released and resized non-preemptible usage is tracked", func(t *testing.T, m *Manager) {
			r := npReq("ann", "root.shared.a", "np1", cpu("4"))
			if err := m.Increase(r); err != nil {
				t.Fatal(err)
			}
			if err := m.Resize(r, cpu("2")); err != nil {
				t.Fatal(err)
			}
			r.Resources = cpu("2")
			if err := m.Check(npReq("ann", "root.shared.a", "np2", cpu("2"))); err != nil {
				t.Fatalf("after shrinking to 2: %v", err)
			}
			if err := m.Decrease(r); err != nil {
				t.Fatal(err)
			}
			if err := m.Check(npReq("ann", "root.shared.a", "np2", cpu("4"))); err != nil {
				t.Fatalf("after release: %v", err)
			}
		}},
		{"a queue without a guaranteed share takes none", func(t *testing.T, m *Manager) {
			guaranteedRefusal(t, m.Check(npReq("fay", "root.shared.free", "np1", cpu("1"))), "root.shared.free",
				"queue root.shared.free has no guaranteed share: non-preemptible pods run only on guaranteed capacity, never on capacity lent by other queues")
			if err := m.Check(req("fay", nil, "root.shared.free", "p1", cpu("1"))); err != nil {
				t.Fatalf("preemptible pod refused: %v", err)
			}
		}},
		{"a dynamic queue not created yet has its template's guaranteed", func(t *testing.T, m *Manager) {
			r := npReq("tia", "root.shared.tenants.t1", "np1", cpu("1"))
			r.Create = true
			if err := m.Check(r); err != nil {
				t.Fatalf("within the template's guaranteed: %v", err)
			}
			r.Resources = cpu("2")
			guaranteedRefusal(t, m.Check(r), "root.shared.tenants.t1",
				"queue root.shared.tenants.t1 has no guaranteed room left for non-preemptible pods: cpu 0+2 > 1 (non-preemptible pods never use capacity lent by other queues)")
		}},
		{"queues outside sharing are not checked", func(t *testing.T, m *Manager) {
			if err := m.Check(npReq("cy", "root.c", "np1", cpu("15"))); err != nil {
				t.Fatalf("non-elastic queue refused: %v", err)
			}
		}},
		{"no table yet: not checked", func(t *testing.T, m *Manager) {
			m.SetShares(nil)
			if err := m.Check(npReq("fay", "root.shared.free", "np1", cpu("1"))); err != nil {
				t.Fatalf("refused without a share table: %v", err)
			}
		}},
		{"the check allocates nothing", func(t *testing.T, m *Manager) {
			if err := m.Increase(npReq("ann", "root.shared.a", "np1", cpu("1"))); err != nil {
				t.Fatal(err)
			}
			r := npReq("ann", "root.shared.a", "np1", cpu("1"))
			if n := testing.AllocsPerRun(100, func() {
				if err := m.Check(r); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("Check of a non-preemptible pod allocates %v times, want 0", n)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, setup(t)) })
	}
}
