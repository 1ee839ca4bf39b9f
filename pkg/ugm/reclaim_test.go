package ugm

import (
	"errors"
	"reflect"
	"testing"

	"github.com/userquota/userquota/pkg/resources"
)

// TestCheckReclaim: b borrows in root.shared; a pod of a within a's runtime
// share but not within root.shared's is refused by Check and needs
// root.shared's room from CheckReclaim; a refusal by its own queue's share,
// or by any other limit, stays a refusal.
func TestCheckReclaim(t *testing.T) {
	cpu := func(s string) resources.Vector { return res(t, "cpu", s) }
	m := withConfig(t, elasticConfig)
	for _, r := range []*Request{req("bob", nil, "root.shared.b", "b1", cpu("10")), req("ann", nil, "root.shared.a", "a1", cpu("4"))} {
		if err := m.Increase(r); err != nil {
			t.Fatal(err)
		}
	}
	// 14 cpu: a 4+2 (demand 6), b 6+2, so b (10) is 2 over its share.
	m.SetShares(m.ComputeShares(map[string]resources.Vector{"root.shared.a": cpu("2")}, resources.NewLimit(map[string]int64{"cpu": 14000})))
	if s := m.Shares().Get("root.shared.a"); mustGet(s.Runtime, resources.Intern("cpu")) != 6000 {
		t.Fatalf("a's share = %v, want cpu 6", s.Runtime)
	}
	eq := m.ElasticQueues()
	if b := eq["root.shared.b"]; b.Usage.Get(resources.Intern("cpu")) != 10000 || mustGet(b.Share.Runtime, resources.Intern("cpu")) != 8000 {
		t.Fatalf("ElasticQueues b = %+v", b)
	}
	if _, ok := eq["root.c"]; ok {
		t.Error("ElasticQueues lists root.c, which is not elastic")
	}

	fits := req("ann", nil, "root.shared.a", "a1", cpu("2"))
	var r *Refusal
	if err := m.Check(fits); !errors.As(err, &r) || r.Limit != LimitShare || r.Queue != "root.shared" {
		t.Fatalf("Check = %v, want a share refusal on root.shared", err)
	}
	blocked, err := m.CheckReclaim(fits)
	if err != nil || !reflect.DeepEqual(blocked, []string{"root.shared"}) {
		t.Fatalf("CheckReclaim = %v, %v; want [root.shared], nil", blocked, err)
	}
	if err := m.Check(fits); err == nil {
		t.Fatal("CheckReclaim changed what Check says")
	}

	// Over a's own share: no room to take back.
	if _, err := m.CheckReclaim(req("ann", nil, "root.shared.a", "a1", cpu("3"))); !errors.As(err, &r) || r.Queue != "root.shared.a" {
		t.Errorf("over its own share: %v, want a refusal on root.shared.a", err)
	}
	// Within every share: nothing needed.
	m.SetShares(m.ComputeShares(map[string]resources.Vector{"root.shared.a": cpu("2")}, resources.NewLimit(map[string]int64{"cpu": 20000})))
	if blocked, err := m.CheckReclaim(fits); err != nil || len(blocked) != 0 {
		t.Errorf("fits: CheckReclaim = %v, %v; want nothing", blocked, err)
	}
}
