package ugm

import (
	"errors"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
)

// elasticConfig: root shares 20 cpu; shared splits its part between a (guaranteed 4) and b
// (guaranteed 6); c is outside sharing (no quota.sharing on it or above).
var elasticConfig = queueconfigtest.Root(`
submitacl: "*"
queues:
  - name: shared
    properties: {quota.sharing: elastic}
    queues:
      - name: a
        resources: {guaranteed: {cpu: 4}, max: {cpu: 10}}
      - name: b
        resources: {guaranteed: {cpu: 6}, max: {cpu: 10}}
      - name: tenants
        parent: true
        childtemplate:
          resources: {guaranteed: {cpu: 1}, max: {cpu: 5}}
  - name: c
    resources: {guaranteed: {cpu: 1}}
`)

func TestShareCheck(t *testing.T) {
	cpu := func(s string) resources.Vector { return res(t, "cpu", s) }
	capacity := resources.NewLimit(map[string]int64{"cpu": 20000})
	setup := func(t *testing.T, pending map[string]resources.Vector) *Manager {
		m := withConfig(t, elasticConfig)
		if err := m.Increase(req("bob", nil, "root.shared.b", "b1", cpu("6"))); err != nil {
			t.Fatal(err)
		}
		m.SetShares(m.ComputeShares(pending, capacity))
		return m
	}

	t.Run("borrows what a does not use, up to its demand", func(t *testing.T) {
		m := setup(t, map[string]resources.Vector{"root.shared.b": cpu("2")})
		if s := m.Shares().Get("root.shared.b"); s == nil || mustGet(s.Runtime, resources.Intern("cpu")) != 8000 {
			t.Fatalf("b's share = %+v, want runtime cpu 8", s)
		}
		if err := m.Increase(req("bob", nil, "root.shared.b", "b2", cpu("2"))); err != nil {
			t.Fatalf("pending pod refused: %v", err)
		}
		err := m.Check(req("bob", nil, "root.shared.b", "b3", cpu("1")))
		var r *Refusal
		if !errors.As(err, &r) || r.Limit != LimitShare || r.Queue != "root.shared.b" {
			t.Fatalf("pod beyond the share: %v, want a share refusal", err)
		}
		want := "queue root.shared.b is at its share: cpu 8+1 > 8 (guaranteed 6, lent 2 by idle queues)"
		if err.Error() != want {
			t.Errorf("reason %q, want %q", err.Error(), want)
		}
	})
	t.Run("a pod within its queue's guaranteed share is never refused by shares", func(t *testing.T) {
		// b holds 6 and borrowed nothing: a's demand was 0 when shares were
		// computed, so a's share is 0, but a stays within its guaranteed 4.
		m := setup(t, nil)
		if err := m.Check(req("ann", nil, "root.shared.a", "a1", cpu("4"))); err != nil {
			t.Fatalf("pod within guaranteed refused: %v", err)
		}
		err := m.Check(req("ann", nil, "root.shared.a", "a1", cpu("5")))
		var r *Refusal
		if !errors.As(err, &r) || r.Limit != LimitShare {
			t.Fatalf("pod above guaranteed with no share: %v, want a share refusal", err)
		}
		if want := "queue root.shared.a is at its share: cpu 0+5 > 0 (guaranteed 4, nothing lent by other queues)"; err.Error() != want {
			t.Errorf("reason %q, want %q", err.Error(), want)
		}
	})
	t.Run("queues outside sharing are not checked", func(t *testing.T) {
		m := setup(t, nil)
		if err := m.Check(req("cy", nil, "root.c", "c1", cpu("20"))); err != nil {
			t.Fatalf("non-elastic queue refused: %v", err)
		}
	})
	t.Run("no table: shares are not checked", func(t *testing.T) {
		m := setup(t, nil)
		m.SetShares(nil)
		if err := m.Check(req("bob", nil, "root.shared.b", "b3", cpu("4"))); err != nil {
			t.Fatalf("refused without a share table: %v", err)
		}
	})
	t.Run("a dynamic queue pods wait for has a share before it exists", func(t *testing.T) {
		m := setup(t, map[string]resources.Vector{"root.shared.tenants.t1": cpu("3")})
		s := m.Shares().Get("root.shared.tenants.t1")
		if s == nil || mustGet(s.Runtime, resources.Intern("cpu")) != 3000 {
			t.Fatalf("t1's share = %+v, want runtime cpu 3", s)
		}
		r := req("tia", nil, "root.shared.tenants.t1", "t1", cpu("3"))
		r.Create = true
		if err := m.Check(r); err != nil {
			t.Fatalf("pending pod for a new queue refused: %v", err)
		}
		r.Resources = cpu("4")
		var ref *Refusal
		if err := m.Check(r); !errors.As(err, &ref) || ref.Limit != LimitShare || ref.Queue != "root.shared.tenants.t1" {
			t.Fatalf("pod above the new queue's share: %v, want a share refusal", err)
		}
	})
	t.Run("pending pods of a parent queue are ignored", func(t *testing.T) {
		m := setup(t, map[string]resources.Vector{"root.shared": cpu("5"), "bad": cpu("1")})
		if s := m.Shares().Get("root.shared"); s == nil || s.Demand.Get(resources.Intern("cpu")) != 6000 {
			t.Fatalf("root.shared demand = %+v, want cpu 6 (b's usage)", s)
		}
	})
}
