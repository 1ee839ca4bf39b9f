package resources

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/userquota/userquota/pkg/resources/resourcestest"
)

func TestParseQuantity(t *testing.T) {
	tests := []struct {
		name, res, in string
		want          int64
		wantErr       error
		anyErr        bool
	}{
		{name: "cpu cores", res: "cpu", in: "2", want: 2000},
		{name: "cpu milli", res: "cpu", in: "1500m", want: 1500},
		{name: "cpu decimal", res: "cpu", in: "0.5", want: 500},
		{name: "cpu below a milli rounds up", res: "cpu", in: "0.0001", want: 1},
		{name: "vcore is cpu", res: "vcore", in: "10", want: 10000},
		{name: "memory binary", res: "memory", in: "1Gi", want: 1 << 30},
		{name: "memory decimal suffix", res: "memory", in: "250G", want: 250_000_000_000},
		{name: "memory fractional binary", res: "memory", in: "1.5Gi", want: 3 << 29},
		{name: "plain bytes", res: "memory", in: "1000", want: 1000},
		{name: "extended", res: "nvidia.com/gpu", in: "4", want: 4},
		{name: "zero", res: "pods", in: "0", want: 0},
		{name: "negative", res: "memory", in: "-1", wantErr: ErrNegative},
		{name: "negative cpu", res: "cpu", in: "-100m", wantErr: ErrNegative},
		{name: "overflow bytes", res: "memory", in: "10E", wantErr: ErrOverflow},
		{name: "overflow cpu millis", res: "cpu", in: "9223372036854775807", wantErr: ErrOverflow},
		{name: "largest bytes", res: "memory", in: "9223372036854775807", want: math.MaxInt64},
		{name: "garbage", res: "cpu", in: "12X", anyErr: true},
		{name: "exponent", res: "memory", in: "2e3", want: 2000},
		{name: "exponent with zeros", res: "memory", in: "2e+0003", want: 2000},
		{name: "tiny exponent rounds up", res: "cpu", in: "1e-30", want: 1},
		{name: "hostile exponent", res: "memory", in: "1e1000000000", wantErr: ErrOverflow},
		{name: "hostile cpu exponent", res: "cpu", in: "1E1000000000", wantErr: ErrOverflow},
		{name: "hostile negative exponent", res: "cpu", in: "1e-1000000000", anyErr: true},
		{name: "exbi at 2^63 (apimachinery caps it at MaxInt64)", res: "memory", in: "8Ei", wantErr: ErrOverflow},
		{name: "exbi times a large number", res: "memory", in: "99999999999999999999999999999999Ei", wantErr: ErrOverflow},
		{name: "largest exbi", res: "memory", in: "7Ei", want: 7 << 60},
		{name: "exponent 9E18 fits in bytes", res: "memory", in: "9E18", want: 9e18},
		{name: "exponent 9E18 overflows millicores", res: "cpu", in: "9E18", wantErr: ErrOverflow},
		{name: "exa", res: "memory", in: "9E", want: 9e18},
		{name: "exponent wrapping apimachinery's int32", res: "memory", in: "1e4294967296", wantErr: ErrOverflow},
		{name: "too long", res: "cpu", in: "0." + strings.Repeat("0", 100) + "1", anyErr: true},
		{name: "empty", res: "cpu", in: "", anyErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseQuantity(tc.res, tc.in)
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ParseQuantity(%q, %q) error = %v, want %v", tc.res, tc.in, err, tc.wantErr)
				}
			case tc.anyErr:
				if err == nil {
					t.Fatalf("ParseQuantity(%q, %q) = %d, want an error", tc.res, tc.in, got)
				}
			default:
				if err != nil || got != tc.want {
					t.Fatalf("ParseQuantity(%q, %q) = %d, %v; want %d", tc.res, tc.in, got, err, tc.want)
				}
			}
		})
	}
}

func vec(m map[string]int64) Vector { return FromMap(m) }

func TestVectorAddSub(t *testing.T) {
	v := vec(map[string]int64{"cpu": 1000, "memory": 10})
	if err := v.Add(vec(map[string]int64{"cpu": 500, "nvidia.com/gpu": 1})); err != nil {
		t.Fatal(err)
	}
	if want := vec(map[string]int64{"cpu": 1500, "memory": 10, "nvidia.com/gpu": 1}); !v.Equal(want) {
		t.Fatalf("after Add = %v, want %v", v, want)
	}
	before := v.Clone()
	if err := v.Add(vec(map[string]int64{"memory": math.MaxInt64})); !errors.Is(err, ErrOverflow) {
		t.Fatalf("Add overflow error = %v", err)
	}
	if !v.Equal(before) {
		t.Fatalf("failed Add changed the vector: %v, was %v", v, before)
	}
	if err := v.Sub(vec(map[string]int64{"cpu": 2000})); !errors.Is(err, ErrNegative) {
		t.Fatalf("Sub below zero error = %v", err)
	}
	if !v.Equal(before) {
		t.Fatalf("failed Sub changed the vector: %v", v)
	}
	if err := v.Sub(vec(map[string]int64{"cpu": 1500, "memory": 10, "nvidia.com/gpu": 1})); err != nil || !v.IsZero() {
		t.Fatalf("Sub to zero = %v, %v", v, err)
	}
	if clamped := v.SubClamped(vec(map[string]int64{"cpu": 1})); !clamped || !v.IsZero() {
		t.Fatalf("SubClamped = %v, clamped %v", v, clamped)
	}
}

// TestBaseUnitsByMagnitude: a Quantity as a decoded object carries it
// (not parsed by ParseQuantity's guards) is decided in bounded time when
// its exponent is hostile. Without byMagnitude each case takes minutes.
func TestBaseUnitsByMagnitude(t *testing.T) {
	tests := []struct {
		name    string
		res     string
		q       resource.Quantity
		want    int64
		wantErr error
	}{
		{name: "huge", res: "memory", q: *resource.NewScaledQuantity(1, 1_000_000_000), wantErr: ErrOverflow},
		{name: "huge cpu", res: "cpu", q: *resource.NewScaledQuantity(3, 1_000_000_000), wantErr: ErrOverflow},
		{name: "tiny", res: "memory", q: *resource.NewScaledQuantity(7, -1_000_000_000), want: 1},
		{name: "tiny cpu", res: "cpu", q: *resource.NewScaledQuantity(7, -1_000_000_000), want: 1},
		{name: "just in range", res: "memory", q: *resource.NewScaledQuantity(9, 18), want: 9e18},
		{name: "just out of range", res: "memory", q: *resource.NewScaledQuantity(10, 18), wantErr: ErrOverflow},
		{name: "cpu just in range", res: "cpu", q: *resource.NewScaledQuantity(9, 15), want: 9e18},
		{name: "a tenth", res: "memory", q: *resource.NewScaledQuantity(1, -1), want: 1},
		{name: "zero", res: "memory", q: *resource.NewScaledQuantity(0, 1_000_000_000), want: 0},
		{name: "zero at the largest scale", res: "memory", q: *resource.NewScaledQuantity(0, math.MaxInt32), want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got int64
			var err error
			// AsInt64 of a zero at scale 2^31 multiplies it by ten 2^31
			// times (seconds); the rest builds 10^(10^9) (minutes).
			resourcestest.Within(t, resourcestest.Default, "BaseUnits", func() { got, err = BaseUnits(tc.res, tc.q) })
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("BaseUnits(%s, %s) = %d, %v; want %v", tc.res, tc.q.String(), got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("BaseUnits(%s) = %d, %v; want %d", tc.res, got, err, tc.want)
			}
		})
	}
}

func TestTimes(t *testing.T) {
	v := vec(map[string]int64{"cpu": 1500, "pods": 1})
	got, err := v.Times(4)
	if err != nil || !got.Equal(vec(map[string]int64{"cpu": 6000, "pods": 4})) {
		t.Fatalf("Times(4) = %v, %v", got, err)
	}
	if v.Get(Intern("cpu")) != 1500 {
		t.Fatalf("Times changed its receiver: %v", v)
	}
	if _, err := v.Times(math.MaxInt64 / 1000); !errors.Is(err, ErrOverflow) {
		t.Fatalf("Times(MaxInt64/1000) error = %v, want ErrOverflow", err)
	}
	if _, err := v.Times(-1); !errors.Is(err, ErrNegative) {
		t.Fatalf("Times(-1) error = %v, want ErrNegative", err)
	}
}

func TestFromResourceList(t *testing.T) {
	v, err := FromResourceList(corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("250m"),
		corev1.ResourceMemory: resource.MustParse("64Mi"),
		"example.com/foo":     resource.MustParse("3"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := vec(map[string]int64{"cpu": 250, "memory": 64 << 20, "example.com/foo": 3})
	if !v.Equal(want) {
		t.Fatalf("FromResourceList = %v, want %v", v, want)
	}
	if _, err := FromResourceList(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1")}); !errors.Is(err, ErrNegative) {
		t.Fatalf("negative list error = %v", err)
	}
}

// TestFromResourceListWith: the set entry overrides the list's, and a
// list longer than the one-allocation path holds gives the same vector.
func TestFromResourceListWith(t *testing.T) {
	pods := Intern(Pods)
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourcePods: resource.MustParse("7")}
	v, err := FromResourceListWith(rl, pods, 1)
	if want := vec(map[string]int64{"cpu": 250, "pods": 1}); err != nil || !v.Equal(want) || len(v) != int(pods)+1 {
		t.Fatalf("FromResourceListWith = %v (len %d), %v; want %v", v, len(v), err, want)
	}
	if v, err := FromResourceListWith(nil, pods, 1); err != nil || !v.Equal(vec(map[string]int64{"pods": 1})) {
		t.Fatalf("FromResourceListWith(nil) = %v, %v", v, err)
	}
	if v, err := FromResourceListWith(nil, -1, 0); err != nil || v != nil {
		t.Fatalf("FromResourceListWith(nil, -1) = %v, %v; want nil", v, err)
	}
	long := corev1.ResourceList{}
	want := map[string]int64{"pods": 1}
	for i := range 12 {
		name := fmt.Sprintf("example.com/r%d", i)
		long[corev1.ResourceName(name)] = *resource.NewQuantity(int64(i+1), resource.DecimalSI)
		want[name] = int64(i + 1)
	}
	if v, err := FromResourceListWith(long, pods, 1); err != nil || !v.Equal(vec(want)) {
		t.Fatalf("FromResourceListWith(12 resources) = %v, %v; want %v", v, err, want)
	}
	long["memory"] = resource.MustParse("-1")
	if _, err := FromResourceListWith(long, pods, 1); !errors.Is(err, ErrNegative) {
		t.Fatalf("negative list error = %v", err)
	}
}

func TestLimitExceeds(t *testing.T) {
	lim, err := ParseLimit(map[string]string{"vcore": "5", "memory": "10Gi", "nvidia.com/gpu": "0"})
	if err != nil {
		t.Fatal(err)
	}
	type excess struct {
		resource              string
		usage, request, limit int64
	}
	tests := []struct {
		name       string
		usage, req map[string]int64
		want       *excess
	}{
		{name: "fits", usage: map[string]int64{"cpu": 4000}, req: map[string]int64{"cpu": 1000}},
		{name: "cpu over", usage: map[string]int64{"cpu": 4500}, req: map[string]int64{"cpu": 1000}, want: &excess{"cpu", 4500, 1000, 5000}},
		{name: "unnamed resource is unlimited", req: map[string]int64{"pods": 1000, "ephemeral-storage": 1 << 40}},
		{name: "zero bound blocks", req: map[string]int64{"nvidia.com/gpu": 1}, want: &excess{"nvidia.com/gpu", 0, 1, 0}},
		{name: "first by name", usage: map[string]int64{"cpu": 5000, "memory": 10 << 30}, req: map[string]int64{"cpu": 1, "memory": 1}, want: &excess{"cpu", 5000, 1, 5000}},
		{name: "usage over but not requested", usage: map[string]int64{"memory": 20 << 30}, req: map[string]int64{"cpu": 1}},
		{name: "exactly at the limit fits", usage: map[string]int64{"memory": 9 << 30}, req: map[string]int64{"memory": 1 << 30}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, over := lim.Exceeds(vec(tc.usage), vec(tc.req))
			var got *excess
			if over {
				got = &excess{e.ID.Name(), e.Usage, e.Request, e.Max}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(excess{})); diff != "" {
				t.Fatalf("Exceeds (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestLimitWithinAndAllZero(t *testing.T) {
	parent, _ := ParseLimit(map[string]string{"memory": "100"})
	child, _ := ParseLimit(map[string]string{"memory": "150", "cpu": "1"})
	if id, ok := child.Within(parent); ok || id.Name() != "memory" {
		t.Fatalf("Within = %v, %v; want memory, false", id, ok)
	}
	small, _ := ParseLimit(map[string]string{"memory": "50"})
	if _, ok := small.Within(parent); !ok {
		t.Fatal("50 should be within 100")
	}
	zero, _ := ParseLimit(map[string]string{"memory": "0", "cpu": "0"})
	if !zero.AllZero() || small.AllZero() || Limit(nil).AllZero() {
		t.Fatal("AllZero wrong")
	}
	if _, err := ParseLimit(map[string]string{"cpu": "1", "vcore": "2"}); err == nil {
		t.Fatal("cpu and vcore together should be an error")
	}
}

func TestJSONAndString(t *testing.T) {
	v := vec(map[string]int64{"memory": 1 << 30, "cpu": 4500, "pods": 0})
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"cpu":4500,"memory":1073741824}`; got != want {
		t.Fatalf("json = %s, want %s", got, want)
	}
	var back Vector
	if err := json.Unmarshal(b, &back); err != nil || !back.Equal(v) {
		t.Fatalf("round trip = %v, %v", back, err)
	}
	if got, want := v.String(), "cpu=4500m,memory=1Gi"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	nb, _ := json.Marshal(Vector(nil))
	if string(nb) != "{}" {
		t.Fatalf("nil vector json = %s", nb)
	}
}

func TestInternConcurrent(t *testing.T) {
	done := make(chan ID)
	for i := 0; i < 8; i++ {
		go func() { done <- Intern("example.com/concurrent") }()
	}
	first := <-done
	for i := 1; i < 8; i++ {
		if id := <-done; id != first {
			t.Fatalf("Intern gave %d and %d for one name", first, id)
		}
	}
	if first.Name() != "example.com/concurrent" {
		t.Fatalf("Name = %q", first.Name())
	}
}

// TestBaseUnitsMilli: cpu quantities that are not whole cores take a
// path without allocation; its answer is the exact one, the quantity in
// thousandths rounded up (kube-scheduler's).
func TestBaseUnitsMilli(t *testing.T) {
	for _, s := range []string{"100m", "1500m", "0.5", "0.001", "0.0015", "1.0005", "999.999", "1500n", "1n", "1u",
		"123456789m", "922337203685.477", "922337203685477m", "9e14", "1e-3", "0.0001", "1e-30"} {
		q, ref := resource.MustParse(s), resource.MustParse(s)
		want := new(inf.Dec).Round(new(inf.Dec).Mul(ref.AsDec(), inf.NewDec(1000, 0)), 0, inf.RoundCeil)
		got, err := BaseUnits("cpu", q)
		if err != nil || want.Cmp(inf.NewDec(got, 0)) != 0 {
			t.Errorf("BaseUnits(cpu, %s) = %d, %v; want %s", s, got, err, want)
		}
	}
	q := resource.MustParse("100m")
	if n := testing.AllocsPerRun(100, func() {
		if _, err := BaseUnits("cpu", q); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("BaseUnits(cpu, 100m) allocates %v times, want 0", n)
	}
}
