package ugm

import (
	"fmt"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// gangConfig is issue 19's scenario: root.g runs at most 20 cpu and 3
// applications; each user at most 16 cpu there.
var gangConfig = queueconfigtest.Root(`
submitacl: "*"
queues:
- name: g
  maxapplications: 3
  resources: {max: {vcore: 20}}
  limits:
  - limit: everyone
    users: ["*"]
    maxresources: {vcore: 16}
`)

func TestGangs(t *testing.T) {
	cpu := func(user, app, n string) *Request {
		return req(user, nil, "root.g", app, res(t, "cpu", n, "pods", "1"))
	}
	gang := func(user, app string, members int) *Request {
		return req(user, nil, "root.g", app, res(t, "cpu", fmt.Sprint(members), "pods", fmt.Sprint(members)))
	}
	for _, tc := range []struct {
		name string
		ops  []admitOp
		// held: what each gang still holds at the end ("holds " and the
		// amounts, "" for no reservation).
		held map[string]string
	}{
		{name: "a gang's minimum is reserved whole or not at all", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 8)},
			{op: "reserve", key: "bob-1", r: gang("bob", "b1", 8)},
			// 16 of 20 held: a third gang of 8 does not fit, and nothing of
			// it is held.
			{op: "reserve", key: "sue-2", r: gang("sue", "s2", 8), want: "queue root.g would exceed max: cpu 16+8 > 20 (16 of it admitted, not running yet)"},
			{op: "admit", key: "lone", r: cpu("ann", "a1", "4")},
			{op: "admit", key: "more", r: cpu("ann", "a1", "1"), want: "queue root.g would exceed max: cpu 20+1 > 20 (20 of it admitted, not running yet)"},
		}, held: map[string]string{"sue-1": "holds cpu=8,pods=8", "bob-1": "holds cpu=8,pods=8", "sue-2": ""}},
		{name: "members draw without a check; beyond the minimum they are ordinary", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 2)},
			{op: "admit", key: "other", r: cpu("bob", "b1", "16")},
			// The queue is full (2 held + 16 + ...), yet members draw.
			{op: "admit", key: "x", r: cpu("ann", "a1", "4"), want: "queue root.g would exceed max: cpu 18+4 > 20 (18 of it admitted, not running yet)"},
			{op: "draw", key: "sue-1/p1", r: cpu("sue", "s1", "1")},
			{op: "draw", key: "sue-1/p2", r: cpu("sue", "s1", "1")},
			{op: "commit", key: "sue-1/p1", r: cpu("sue", "s1", "1")},
			// A third member draws nothing and is checked as any pod: 2
			// more cpu fit the queue (16 + 2 + 2 = 20).
			{op: "draw", key: "sue-1/p3", r: cpu("sue", "s1", "2")},
			{op: "draw", key: "sue-1/p4", r: cpu("sue", "s1", "1"), want: "queue root.g would exceed max: cpu 20+1 > 20 (19 of it admitted, not running yet)"},
		}, held: map[string]string{"sue-1": "holds "}},
		{name: "a member larger than its share draws what is left and is checked for the rest", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 2)},
			{op: "admit", key: "other", r: cpu("bob", "b1", "16")},
			{op: "draw", key: "sue-1/big", r: cpu("sue", "s1", "5"), want: "queue root.g would exceed max: cpu 16+5 > 20 (16 of it admitted, not running yet)"},
			{op: "draw", key: "sue-1/ok", r: cpu("sue", "s1", "4")},
		}, held: map[string]string{"sue-1": "holds pods=1"}},
		{name: "a member that goes without running gives its part back", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 2)},
			{op: "draw", key: "sue-1/p1", r: cpu("sue", "s1", "1")},
			{op: "unadmit", key: "sue-1/p1"},
			{op: "admit", key: "other", r: cpu("bob", "b1", "16")},
			// The reservation holds 2 again: no room for 3 more.
			{op: "admit", key: "x", r: cpu("ann", "a1", "3"), want: "queue root.g would exceed max: cpu 18+3 > 20 (18 of it admitted, not running yet)"},
			{op: "draw", key: "sue-1/p2", r: cpu("sue", "s1", "1")},
			{op: "draw", key: "sue-1/p3", r: cpu("sue", "s1", "1")},
		}, held: map[string]string{"sue-1": "holds "}},
		{name: "a released reservation frees what is left; drawn pods keep theirs", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 8)},
			{op: "draw", key: "sue-1/p1", r: cpu("sue", "s1", "1")},
			{op: "releaseGang", key: "sue-1"},
			{op: "admit", key: "other", r: cpu("bob", "b1", "16")},
			{op: "admit", key: "x", r: cpu("ann", "a1", "3")},
			{op: "admit", key: "y", r: cpu("ann", "a1", "1"), want: "queue root.g would exceed max: cpu 20+1 > 20 (20 of it admitted, not running yet)"},
			// Gone with no reservation: nothing is given back.
			{op: "unadmit", key: "sue-1/p1"},
			{op: "admit", key: "y", r: cpu("ann", "a1", "1")},
			{op: "draw", key: "sue-1/p2", r: cpu("sue", "s1", "1"), want: "sue-1: gang holds no reservation"},
		}, held: map[string]string{"sue-1": ""}},
		{name: "what the gang's application runs is not reserved again", ops: []admitOp{
			{op: "commit", key: "ran1", r: cpu("sue", "s1", "1")},
			{op: "commit", key: "ran2", r: cpu("sue", "s1", "1")},
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 5)},
		}, held: map[string]string{"sue-1": "holds cpu=3,pods=3"}},
		{name: "a gang that runs its minimum is not reserved", ops: []admitOp{
			{op: "commit", key: "ran1", r: cpu("sue", "s1", "1")},
			{op: "commit", key: "ran2", r: cpu("sue", "s1", "1")},
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 2), want: "sue-1: gang runs its minimum already"},
		}, held: map[string]string{"sue-1": ""}},
		{name: "a reservation ends when its whole minimum runs", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 2)},
			{op: "draw", key: "sue-1/p1", r: cpu("sue", "s1", "1")},
			{op: "draw", key: "sue-1/p2", r: cpu("sue", "s1", "1")},
			{op: "commit", key: "sue-1/p1", r: cpu("sue", "s1", "1")},
			{op: "commit", key: "sue-1/p2", r: cpu("sue", "s1", "1")},
		}, held: map[string]string{"sue-1": ""}},
		{name: "a member admitted after its charge (a stale copy) is dropped as run: the reservation ends", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 2)},
			{op: "draw", key: "sue-1/p1", r: cpu("sue", "s1", "1")},
			{op: "force", key: "sue-1/p1", r: cpu("sue", "s1", "1")},
			// p2 was bound and charged before a stale copy of it drew.
			{op: "force", key: "sue-1/p2", r: cpu("sue", "s1", "1")},
			{op: "draw", key: "sue-1/p2", r: cpu("sue", "s1", "1")},
			{op: "dropRunning", key: "sue-1/p2"},
			// Nothing given back: 2 run, 18 fit.
			{op: "admit", key: "other", r: cpu("bob", "b1", "16")},
			{op: "admit", key: "x", r: cpu("ann", "a1", "2")},
			{op: "dropRunning", key: "sue-1/p2", want: "not admitted"},
		}, held: map[string]string{"sue-1": ""}},
		{name: "members found running that drew nothing trim the reservation to what the minimum still needs", ops: []admitOp{
			// Reserved with 1 of 5 running: 4 held.
			{op: "force", key: "sue-1/driver", r: cpu("sue", "s1", "1")},
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 5)},
			{op: "draw", key: "sue-1/p1", r: cpu("sue", "s1", "1")},
			// p2 and p3 are found running without having drawn: 5 - 3
			// running - 1 drawn = 1 still needed, held (3 were).
			{op: "force", key: "sue-1/p2", r: cpu("sue", "s1", "1")},
			{op: "force", key: "sue-1/p3", r: cpu("sue", "s1", "1")},
			{op: "trimGang", key: "sue-1", r: gang("sue", "s1", 5)},
			// Again: nothing more (the running pods are not counted twice).
			{op: "trimGang", key: "sue-1", r: gang("sue", "s1", 5), want: "nothing trimmed"},
			// The 2 let go are room for others: 3 running, 1 drawn, 1 held
			// and 15 = 20.
			{op: "admit", key: "other", r: cpu("bob", "b1", "15")},
			{op: "admit", key: "more", r: cpu("bob", "b1", "1"), want: "queue root.g would exceed max: cpu 20+1 > 20 (17 of it admitted, not running yet)"},
		}, held: map[string]string{"sue-1": "holds cpu=1,pods=1"}},
		{name: "a trim to nothing with no pod drawing ends the reservation", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 2)},
			{op: "force", key: "sue-1/p1", r: cpu("sue", "s1", "1")},
			{op: "force", key: "sue-1/p2", r: cpu("sue", "s1", "1")},
			{op: "trimGang", key: "sue-1", r: gang("sue", "s1", 2)},
			{op: "trimGang", key: "sue-1", r: gang("sue", "s1", 2), want: "nothing trimmed"},
			{op: "admit", key: "other", r: cpu("bob", "b1", "16")},
			{op: "admit", key: "x", r: cpu("ann", "a1", "2")},
		}, held: map[string]string{"sue-1": ""}},
		{name: "a gang is reserved once", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 2)},
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 2), want: "sue-1: gang is reserved already"},
		}, held: map[string]string{"sue-1": "holds cpu=2,pods=2"}},
		{name: "a gang is one application", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 2)},
			{op: "draw", key: "sue-1/p1", r: cpu("sue", "s1", "1")},
			{op: "admit", key: "b", r: cpu("bob", "b1", "1")},
			{op: "admit", key: "c", r: cpu("cat", "c1", "1")},
			{op: "reserve", key: "dan-1", r: gang("dan", "d1", 2), want: "queue root.g would exceed maxapplications: 3+1 > 3"},
		}},
		{name: "the user limit counts the reservation", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 8)},
			{op: "reserve", key: "sue-2", r: gang("sue", "s2", 8)},
			{op: "reserve", key: "sue-3", r: gang("sue", "s3", 1), want: `user "sue" would exceed maxresources in root.g: cpu 16+1 > 16 (16 of it admitted, not running yet)`},
		}},
		{name: "only the gang's user, queue and application draw on it", ops: []admitOp{
			{op: "reserve", key: "sue-1", r: gang("sue", "s1", 2)},
			{op: "draw", key: "sue-1/bob", r: cpu("bob", "s1", "1"), want: "gang sue-1 is reserved for user sue in queue root.g (application ns/s1), not user bob in queue root.g (application ns/s1)"},
			{op: "draw", key: "sue-1/other", r: cpu("sue", "s9", "1"), want: "gang sue-1 is reserved for user sue in queue root.g (application ns/s1), not user sue in queue root.g (application ns/s9)"},
		}, held: map[string]string{"sue-1": "holds cpu=2,pods=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := withConfig(t, gangConfig)
			runOps(t, m, tc.ops)
			for key, want := range tc.held {
				v, ok := m.GangHeld(key)
				got := ""
				if ok {
					got = "holds " + v.String()
				}
				if got != want {
					t.Errorf("gang %s holds %q, want %q", key, got, want)
				}
			}
		})
	}
}

// TestGangsConcurrent reserves, draws, commits, gives back and releases
// from several goroutines (run with -race); afterwards nothing is held,
// no admission or application is left and nothing runs.
func TestGangsConcurrent(t *testing.T) {
	m := withConfig(t, gangConfig)
	parallel(4, func(g int) {
		user := fmt.Sprintf("u%d", g)
		for i := 0; i < 100; i++ {
			key := fmt.Sprintf("%s-%d", user, i)
			app := fmt.Sprintf("app%d-%d", g, i)
			if m.ReserveGang(key, req(user, nil, "root.g", app, res(t, "cpu", "4", "pods", "4"))) != nil {
				continue
			}
			var ran []*Request
			for p := 0; p < 5; p++ {
				r := req(user, nil, "root.g", app, res(t, "cpu", "1", "pods", "1"))
				pk := fmt.Sprintf("%s/%d", key, p)
				if _, err := m.DrawGang(key, pk, r); err != nil {
					continue
				}
				if p%2 == 0 {
					m.Unadmit(pk)
					continue
				}
				if m.Commit(pk, r) == nil {
					ran = append(ran, r)
				}
			}
			m.ReleaseGang(key)
			for _, r := range ran {
				if err := m.Decrease(r); err != nil {
					t.Error(err)
				}
			}
		}
	})
	if !m.adm.none() || len(m.adm.queues) != 0 || len(m.adm.users) != 0 || len(m.adm.apps) != 0 {
		t.Errorf("room left behind: %d admissions, %d gangs, %d queues, %d apps", len(m.adm.byKey), len(m.adm.gangs), len(m.adm.queues), len(m.adm.apps))
	}
	if len(m.apps) != 0 {
		t.Errorf("%d applications left running", len(m.apps))
	}
}
