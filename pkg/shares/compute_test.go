package shares

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/userquota/userquota/pkg/resources"
)

var (
	units = resources.Intern("example.com/units")
	cpu   = resources.Intern(resources.CPU)
)

func abs(v int64) Amount { return Amount{Value: v} }

// pct is a percentage in 1/PercentScale of a percent: pct(12345) is 12.345%.
func pct(p int64) Amount { return Amount{Percent: p} }

func u(v int64) Amounts { return Amounts{units: abs(v)} }

func dem(v int64) resources.Vector {
	var d resources.Vector
	d.Set(units, v)
	return d
}

// both is a demand of v units and v cpu.
func both(v int64) resources.Vector {
	d := dem(v)
	d.Set(cpu, v)
	return d
}

func capUnits(v int64) resources.Limit { return resources.Limit{{ID: units, Max: v}} }

// expect is what a test checks of one queue for the resource `units`; a nil
// field is not checked. Unlimited in a Limit field means "absent".
type expect struct {
	runtime, guaranteed, configured, demand, weight, max *int64
}

func i64(v int64) *int64 { return &v }

func rt(v int64) expect { return expect{runtime: i64(v)} }

// limitValue reads a Limit as the rest of the package does: absent is
// Unlimited.
func limitValue(l resources.Limit, id resources.ID) int64 {
	if v, ok := l.Get(id); ok {
		return v
	}
	return Unlimited
}

func checkShare(t *testing.T, tab *Table, path string, id resources.ID, e expect) {
	t.Helper()
	s := tab.Get(path)
	if s == nil {
		t.Fatalf("%s: no share", path)
	}
	check := func(what string, want *int64, got int64) {
		t.Helper()
		if want != nil && *want != got {
			t.Errorf("%s %s %s = %d, want %d", path, id, what, got, *want)
		}
	}
	check("runtime", e.runtime, limitValue(s.Runtime, id))
	check("guaranteed", e.guaranteed, s.Guaranteed.Get(id))
	check("configured", e.configured, s.Configured.Get(id))
	check("demand", e.demand, s.Demand.Get(id))
	check("weight", e.weight, s.Weight.Get(id))
	check("max", e.max, limitValue(s.Max, id))
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name     string
		root     *Queue
		capacity resources.Limit
		want     map[string]expect // by path, for resource units
		wantCPU  map[string]expect // by path, for resource cpu
		scaled   []Scaling
	}{
		{
			// Koordinator's "Calculate RuntimeQuota" example: A lends 5,
			// the surplus of 45 is offered 14/12/19 to B/C/D, B needs only
			// 5 and returns 9, which C and D split 3/6.
			name:     "koordinator runtime quota",
			capacity: capUnits(100),
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.a", Guaranteed: u(15), Max: u(20), Demand: dem(10)},
				{Path: "root.b", Guaranteed: u(15), Max: u(60), Demand: dem(20)},
				{Path: "root.c", Guaranteed: u(15), Max: u(50), Demand: dem(50)},
				{Path: "root.d", Guaranteed: u(15), Max: u(80), Demand: dem(80)},
			}},
			want: map[string]expect{
				"root":   {runtime: i64(100), demand: i64(160), max: i64(100), configured: i64(100)},
				"root.a": {runtime: i64(10), guaranteed: i64(15), configured: i64(15), weight: i64(20), demand: i64(10), max: i64(20)},
				"root.b": {runtime: i64(20), guaranteed: i64(15), configured: i64(15), weight: i64(60), demand: i64(20), max: i64(60)},
				"root.c": {runtime: i64(30), guaranteed: i64(15), configured: i64(15), weight: i64(50), demand: i64(50), max: i64(50)},
				"root.d": {runtime: i64(40), guaranteed: i64(15), configured: i64(15), weight: i64(80), demand: i64(80), max: i64(80)},
			},
		},
		{
			// HTCondor's group quotas: the surplus goes in proportion to
			// quota. 40 left over splits 6.67/13.33/20: the spare unit goes
			// to the largest remainder, a.
			name:     "htcondor surplus by quota",
			capacity: capUnits(100),
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.a", Guaranteed: u(10), Weight: map[resources.ID]int64{units: 10}, Demand: dem(1000)},
				{Path: "root.b", Guaranteed: u(20), Weight: map[resources.ID]int64{units: 20}, Demand: dem(1000)},
				{Path: "root.c", Guaranteed: u(30), Weight: map[resources.ID]int64{units: 30}, Demand: dem(1000)},
			}},
			want: map[string]expect{
				"root":   {runtime: i64(100), demand: i64(3000)},
				"root.a": {runtime: i64(17), weight: i64(10), max: i64(Unlimited)},
				"root.b": {runtime: i64(33), weight: i64(20)},
				"root.c": {runtime: i64(50), weight: i64(30)},
			},
		},
		{
			// HTCondor's "float locally" example: A does not take surplus
			// (weight 0) but its children A.B and A.C float against each
			// other inside A's quota; C's idle quota goes to B first, and
			// what A does not use goes to x. A.B's weight (its guaranteed,
			// as HTCondor shares by quota) only matters against A.C.
			name:     "htcondor surplus shared at the lowest level",
			capacity: capUnits(100),
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.a", Guaranteed: u(60), Weight: map[resources.ID]int64{units: 0}, Children: []*Queue{
					{Path: "root.a.b", Guaranteed: u(20), Weight: map[resources.ID]int64{units: 20}, Demand: dem(50)},
					{Path: "root.a.c", Guaranteed: u(40), Weight: map[resources.ID]int64{units: 40}, Demand: dem(0)},
				}},
				{Path: "root.x", Guaranteed: u(40), Weight: map[resources.ID]int64{units: 40}, Demand: dem(1000)},
			}},
			want: map[string]expect{
				"root.a":   {runtime: i64(50), demand: i64(50)},
				"root.a.b": {runtime: i64(50)},
				"root.a.c": {runtime: i64(0)},
				"root.x":   {runtime: i64(50)},
			},
		},
		{
			// p1 demands min(50, 30) + 40 = 70 and gets 30 + 29 of the
			// surplus; inside p1, a is offered 29 but can take only 20, and
			// b gets 10 then the 9 a returned.
			name:     "two levels",
			capacity: capUnits(100),
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.p1", Guaranteed: u(30), Max: u(80), Children: []*Queue{
					{Path: "root.p1.a", Guaranteed: u(10), Max: u(30), Demand: dem(50)},
					{Path: "root.p1.b", Guaranteed: u(10), Demand: dem(40)},
				}},
				{Path: "root.p2", Guaranteed: u(30), Children: []*Queue{
					{Path: "root.p2.c", Demand: dem(60)},
				}},
			}},
			want: map[string]expect{
				"root":      {runtime: i64(100), demand: i64(130)},
				"root.p1":   {runtime: i64(59), demand: i64(70), weight: i64(80)},
				"root.p2":   {runtime: i64(41), demand: i64(60), weight: i64(30)},
				"root.p1.a": {runtime: i64(30), weight: i64(30)},
				"root.p1.b": {runtime: i64(29), weight: i64(10)},
				"root.p2.c": {runtime: i64(41), weight: i64(1), guaranteed: i64(0)},
			},
		},
		{
			name:     "lending",
			capacity: capUnits(100),
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.a", Guaranteed: u(40), Demand: dem(10)},
				{Path: "root.b", Guaranteed: u(40), Demand: dem(100)},
				{Path: "root.c", Guaranteed: u(20), Demand: dem(100)},
			}},
			want: map[string]expect{"root.a": rt(10), "root.b": rt(60), "root.c": rt(30)},
		},
		{
			// The same with a not lending: it keeps 40 it does not use.
			name:     "lending off",
			capacity: capUnits(100),
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.a", Guaranteed: u(40), NoLend: true, Demand: dem(10)},
				{Path: "root.b", Guaranteed: u(40), Demand: dem(100)},
				{Path: "root.c", Guaranteed: u(20), Demand: dem(100)},
			}},
			want: map[string]expect{"root.a": rt(40), "root.b": rt(40), "root.c": rt(20)},
		},
		{
			// p: max 50% of 200 = 100, guaranteed 40% of 200 = 80;
			// x: 25% of p's guaranteed = 20; y: max 50% of p's max = 50;
			// z: 12.345% of 80 = 9.876, floored.
			name:     "percentages",
			capacity: capUnits(200),
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.p", Guaranteed: Amounts{units: pct(40_000)}, Max: Amounts{units: pct(50_000)}, Children: []*Queue{
					{Path: "root.p.x", Guaranteed: Amounts{units: pct(25_000)}, Demand: dem(100)},
					{Path: "root.p.y", Max: Amounts{units: pct(50_000)}, Demand: dem(100)},
					{Path: "root.p.z", Guaranteed: Amounts{units: pct(12_345)}, Demand: dem(5)},
				}},
				{Path: "root.q", Demand: dem(500)},
			}},
			want: map[string]expect{
				"root.p":   {runtime: i64(100), configured: i64(80), max: i64(100), demand: i64(155), weight: i64(100)},
				"root.q":   {runtime: i64(100), configured: i64(0), max: i64(Unlimited)},
				"root.p.x": {runtime: i64(45), configured: i64(20), max: i64(Unlimited), weight: i64(20)},
				"root.p.y": {runtime: i64(50), configured: i64(0), max: i64(50), weight: i64(50)},
				"root.p.z": {runtime: i64(5), configured: i64(9), guaranteed: i64(9)},
			},
		},
		{
			// A guaranteed above the max is clamped to it.
			name:     "guaranteed clamped to max",
			capacity: capUnits(100),
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.a", Guaranteed: u(50), Max: u(30), NoLend: true},
			}},
			want: map[string]expect{"root.a": {runtime: i64(30), configured: i64(30), guaranteed: i64(30)}},
		},
		{
			// The cluster shrank to 40 units and 10 cpu: the guarantees
			// (60 units, 15 cpu) are scaled down to add up exactly.
			// units: 6.67/13.33/20 -> a gets the spare unit (remainder);
			// cpu: 3.33 each -> a gets it (tie, first by path).
			name:     "shrinking capacity",
			capacity: resources.Limit{{ID: cpu, Max: 10}, {ID: units, Max: 40}},
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.c", Guaranteed: Amounts{units: abs(30), cpu: abs(5)}, Demand: both(100)},
				{Path: "root.a", Guaranteed: Amounts{units: abs(10), cpu: abs(5)}, Demand: both(100)},
				{Path: "root.b", Guaranteed: Amounts{units: abs(20), cpu: abs(5)}, Demand: both(100)},
			}},
			want: map[string]expect{
				"root.a": {runtime: i64(7), configured: i64(10), guaranteed: i64(7)},
				"root.b": {runtime: i64(13), configured: i64(20), guaranteed: i64(13)},
				"root.c": {runtime: i64(20), configured: i64(30), guaranteed: i64(20)},
			},
			wantCPU: map[string]expect{
				"root.a": {runtime: i64(4), configured: i64(5), guaranteed: i64(4)},
				"root.b": {runtime: i64(3), configured: i64(5), guaranteed: i64(3)},
				"root.c": {runtime: i64(3), configured: i64(5), guaranteed: i64(3)},
			},
			scaled: []Scaling{
				{Parent: "root", Resource: cpu, Sum: 15, Share: 10},
				{Parent: "root", Resource: units, Sum: 60, Share: 40},
			},
		},
		{
			// Scaling happens where the guarantees stop fitting: here
			// inside p, whose share (its guaranteed 30) is below the 40
			// its children are guaranteed.
			name:     "scaling below a parent",
			capacity: capUnits(30),
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.p", Guaranteed: u(30), Children: []*Queue{
					{Path: "root.p.a", Guaranteed: u(10), Demand: dem(100)},
					{Path: "root.p.b", Guaranteed: u(30), Demand: dem(100)},
				}},
			}},
			want: map[string]expect{
				"root.p":   rt(30),
				"root.p.a": {runtime: i64(8), guaranteed: i64(8)},
				"root.p.b": {runtime: i64(22), guaranteed: i64(22)},
			},
			scaled: []Scaling{{Parent: "root.p", Resource: units, Sum: 40, Share: 30}},
		},
		{
			// Three equal claims on 10 units: 3 each and the spare unit to
			// the first by path, whatever the input order.
			name:     "ties by path",
			capacity: capUnits(10),
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.c", Demand: dem(100)},
				{Path: "root.b", Demand: dem(100)},
				{Path: "root.a", Demand: dem(100)},
			}},
			want: map[string]expect{"root.a": rt(4), "root.b": rt(3), "root.c": rt(3)},
		},
		{
			// Nothing bounds the resource: every queue gets what it asks
			// for within its max. c's guaranteed is 50% of Unlimited and it
			// does not lend, so its runtime is Unlimited too; d has weight 0
			// and gets no surplus, not even from an unlimited cluster.
			// c keeps its (unlimited) guarantee, so root's demand is unlimited too.
			name: "unlimited capacity",
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.a", Max: u(30), Demand: dem(50)},
				{Path: "root.b", Demand: dem(20)},
				{Path: "root.c", Guaranteed: Amounts{units: pct(50_000)}, NoLend: true, Demand: dem(5)},
				{Path: "root.d", Weight: map[resources.ID]int64{units: 0}, Demand: dem(10)},
			}},
			want: map[string]expect{
				"root":   {runtime: i64(Unlimited), demand: i64(Unlimited), max: i64(Unlimited)},
				"root.a": rt(30),
				"root.b": rt(20),
				"root.c": {runtime: i64(Unlimited), guaranteed: i64(Unlimited), weight: i64(Unlimited)},
				"root.d": {runtime: i64(0), weight: i64(0)},
			},
		},
		{
			// Nobody wants more than 30 of 100: 70 stays idle.
			name:     "idle surplus",
			capacity: capUnits(100),
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.a", Guaranteed: u(50), Demand: dem(10)},
				{Path: "root.b", Demand: dem(20)},
			}},
			want: map[string]expect{"root.a": rt(10), "root.b": rt(20)},
		},
		{
			// Sums and percentages near MaxInt64 saturate instead of
			// wrapping negative.
			name:     "saturation",
			capacity: capUnits(Unlimited - 1),
			root: &Queue{Path: "root", Children: []*Queue{
				{Path: "root.p", Max: Amounts{units: pct(100_000)}, Children: []*Queue{
					{Path: "root.p.a", Demand: dem(Unlimited - 5)},
					{Path: "root.p.b", Demand: dem(Unlimited - 5)},
				}},
			}},
			want: map[string]expect{
				"root.p":   {runtime: i64(Unlimited - 1), demand: i64(Unlimited), max: i64(Unlimited - 1)},
				"root.p.a": rt((Unlimited - 1) / 2),
				"root.p.b": rt((Unlimited - 1) / 2),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab := Compute(tc.root, tc.capacity)
			for path, e := range tc.want {
				checkShare(t, tab, path, units, e)
			}
			for path, e := range tc.wantCPU {
				checkShare(t, tab, path, cpu, e)
			}
			if !reflect.DeepEqual(tab.Scaled, tc.scaled) {
				t.Errorf("Scaled = %+v, want %+v", tab.Scaled, tc.scaled)
			}
			checkInvariants(t, tc.root, tc.capacity, tab)
		})
	}
}

// TestKoordinatorRuntimeLimit checks the whole Runtime and Max limits of the
// worked example, not only the value for one resource: a queue's runtime
// names exactly the resources in play.
func TestKoordinatorRuntimeLimit(t *testing.T) {
	root := &Queue{Path: "root", Children: []*Queue{
		{Path: "root.a", Guaranteed: u(15), Max: u(20), Demand: dem(10)},
		{Path: "root.b", Guaranteed: u(15), Max: u(60), Demand: dem(20)},
	}}
	tab := Compute(root, capUnits(100))
	if got, want := tab.Get("root.a").Runtime, capUnits(10); !reflect.DeepEqual(got, want) {
		t.Errorf("root.a runtime = %v, want %v", got, want)
	}
	if got, want := tab.Get("root").Runtime, capUnits(100); !reflect.DeepEqual(got, want) {
		t.Errorf("root runtime = %v, want %v", got, want)
	}
	var paths []string
	for _, s := range tab.All() {
		paths = append(paths, s.Path)
	}
	if want := []string{"root", "root.a", "root.b"}; !slices.Equal(paths, want) {
		t.Errorf("All() paths = %v, want %v", paths, want)
	}
	if tab.Get("root.x") != nil {
		t.Errorf("Get of an unknown path is not nil")
	}
}

func TestPermutationsGiveIdenticalTables(t *testing.T) {
	mk := func(order []int) *Queue {
		kids := []*Queue{
			{Path: "root.a", Guaranteed: u(5), Demand: dem(100)},
			{Path: "root.b", Guaranteed: u(5), Demand: dem(100)},
			{Path: "root.c", Guaranteed: u(5), Demand: dem(100)},
			{Path: "root.a-x", Guaranteed: u(5), Demand: dem(100)},
		}
		root := &Queue{Path: "root"}
		for _, i := range order {
			root.Children = append(root.Children, kids[i])
		}
		return root
	}
	// Capacity 11 with 20 guaranteed forces scaling and tie-breaking in
	// both the scaling and the surplus.
	want := Compute(mk([]int{0, 1, 2, 3}), capUnits(11))
	for _, order := range [][]int{{3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}} {
		got := Compute(mk(order), capUnits(11))
		if d := diffTables(want, got); d != "" {
			t.Errorf("order %v: %s", order, d)
		}
	}
	// 11 over four equal claims: 2.75 each, the three spare units to the
	// first three by path ("root.a" < "root.a-x" < "root.b" < "root.c").
	for path, v := range map[string]int64{"root.a": 3, "root.a-x": 3, "root.b": 3, "root.c": 2} {
		checkShare(t, want, path, units, expect{guaranteed: i64(v), runtime: i64(v)})
	}
}

func TestNilRoot(t *testing.T) {
	tab := Compute(nil, capUnits(1))
	if len(tab.All()) != 0 || tab.Get("root") != nil {
		t.Errorf("nil root: got %v", tab.All())
	}
}

// diffTables describes the first difference between two tables, or "".
func diffTables(a, b *Table) string {
	if len(a.All()) != len(b.All()) {
		return fmt.Sprintf("%d shares vs %d", len(a.All()), len(b.All()))
	}
	for i := range a.All() {
		if !reflect.DeepEqual(a.All()[i], b.All()[i]) {
			return fmt.Sprintf("share %d differs:\n%+v\n%+v", i, *a.All()[i], *b.All()[i])
		}
	}
	if !reflect.DeepEqual(a.Scaled, b.Scaled) {
		return fmt.Sprintf("Scaled differs:\n%+v\n%+v", a.Scaled, b.Scaled)
	}
	return ""
}

// TestRootConfigIgnored: root has no guaranteed or max of its own (its
// share is the capacity), and a resource only root configures is not in
// play, so it appears in no runtime.
func TestRootConfigIgnored(t *testing.T) {
	root := &Queue{Path: "root", Guaranteed: u(10), Max: Amounts{units: abs(50), cpu: abs(5)}, Children: []*Queue{
		{Path: "root.a", Demand: dem(80)},
	}}
	tab := Compute(root, capUnits(100))
	if got, want := tab.Get("root.a").Runtime, capUnits(80); !reflect.DeepEqual(got, want) {
		t.Errorf("root.a runtime = %v, want %v", got, want)
	}
	if got, want := tab.Get("root").Max, capUnits(100); !reflect.DeepEqual(got, want) {
		t.Errorf("root max = %v, want the capacity %v", got, want)
	}
}
