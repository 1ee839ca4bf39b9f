package resources

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"gopkg.in/inf.v0"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ErrOverflow is returned when a quantity or a sum does not fit in int64
// base units. ErrNegative is returned for a negative quantity, or for a
// subtraction that would take a usage below zero.
var (
	ErrOverflow = errors.New("value out of range")
	ErrNegative = errors.New("negative value")
)

// ParseQuantity parses a Kubernetes quantity string for the named resource
// into base units: millicores for cpu (and its alias vcore), whole units
// (bytes, pods, devices) for everything else. Fractions of a base unit are
// rounded up, as kube-scheduler rounds requests.
func ParseQuantity(name, s string) (int64, error) {
	if len(s) > maxQuantityLen {
		return 0, fmt.Errorf("%s: invalid quantity %q...: longer than %d characters", name, s[:maxQuantityLen], maxQuantityLen)
	}
	if exp := exponentOutOfRange(s); exp != 0 {
		if exp < 0 {
			return 0, fmt.Errorf("%s: invalid quantity %q: exponent below -%d", name, s, maxExponent)
		}
		return 0, fmt.Errorf("%s: quantity %q: exponent above %d: %w", name, s, maxExponent, ErrOverflow)
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%s: invalid quantity %q: %w", name, s, err)
	}
	// apimachinery caps a binary-suffixed value at MaxInt64 ("8Ei",
	// "99999Ei" both read 2^63-1): beyond int64, refused like "10E".
	if q.Format == resource.BinarySI && q.CmpInt64(math.MaxInt64) == 0 {
		return 0, fmt.Errorf("%s: quantity %q: %w", name, s, ErrOverflow)
	}
	v, err := BaseUnits(name, q)
	if err != nil {
		return 0, fmt.Errorf("%s: quantity %q: %w", name, s, err)
	}
	return v, nil
}

// BaseUnits converts q to the base unit of the named resource: millicores for
// cpu, whole units otherwise, rounding up. Negative quantities and values
// beyond int64 are errors, never wrapped or saturated.
func BaseUnits(name string, q resource.Quantity) (int64, error) {
	// A zero can carry any scale ("0e2000000000" from Go code; the API
	// server writes it as "0"): AsInt64 would multiply it by ten that
	// many times.
	if q.IsZero() {
		return 0, nil
	}
	if q.Sign() < 0 {
		return 0, ErrNegative
	}
	milli := CanonicalName(name) == CPU
	if v, ok := q.AsInt64(); ok {
		if !milli {
			return v, nil
		}
		if v > math.MaxInt64/1000 {
			return 0, ErrOverflow
		}
		return v * 1000, nil
	}
	// A fractional cpu ("100m", "0.5") clearly in range by its approximate
	// size (which costs no allocation for an int64-backed quantity):
	// MilliValue is exact, rounding up, as the fast path below, without
	// AsDec's allocations (a restart reads one such request per pod).
	if milli {
		if f := q.AsApproximateFloat64(); f >= 1e-3 && f < float64(math.MaxInt64)/1e4 {
			return q.MilliValue(), nil
		}
	}
	// Out of range or below one base unit by its magnitude alone: decided
	// before any arithmetic, whose cost grows with the exponent (a
	// Quantity of 1e1000000000 takes minutes to compare or round).
	d := q.AsDec()
	if v, ok, err := byMagnitude(d, milli); ok {
		return v, err
	}
	// Fast path for the common fractional cpu ("100m", "0.5"): within range,
	// MilliValue is exact, rounding up like kube-scheduler.
	if milli && q.CmpInt64(math.MaxInt64/1000) <= 0 {
		return q.MilliValue(), nil
	}
	// Slow path: fractional base units or very large values. Exact decimal
	// arithmetic, then a range check.
	if milli {
		d = new(inf.Dec).Mul(d, inf.NewDec(1000, 0))
	}
	r := new(inf.Dec).Round(d, 0, inf.RoundCeil)
	b := r.UnscaledBig()
	if r.Scale() < 0 {
		b = new(big.Int).Mul(b, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-r.Scale())), nil))
	}
	if !b.IsInt64() {
		return 0, ErrOverflow
	}
	return b.Int64(), nil
}

// maxQuantityLen bounds a quantity string and maxExponent its decimal
// exponent ("1e18"): apimachinery's parser takes minutes over
// "1e-1000000000", and any exponent beyond 30 is out of range or below
// one base unit anyway.
const (
	maxQuantityLen = 64
	maxExponent    = 99
)

// exponentOutOfRange reports whether s ends in a decimal exponent ("e" or
// "E" and a signed number) beyond maxExponent: 1 above, -1 below, else 0.
// "E" alone is the exa suffix and "Ei" exbi: no exponent.
func exponentOutOfRange(s string) int {
	i := strings.LastIndexAny(s, "eE")
	if i < 0 {
		return 0
	}
	exp := strings.TrimLeft(s[i+1:], "+-")
	if exp == "" || len(s[i+1:])-len(exp) > 1 {
		return 0
	}
	for _, c := range exp {
		if c < '0' || c > '9' {
			return 0
		}
	}
	if len(strings.TrimLeft(exp, "0")) <= 2 {
		return 0
	}
	if s[i+1] == '-' {
		return -1
	}
	return 1
}

// byMagnitude decides d in base units (milli: in thousandths) from its
// size alone when it is far out of range (ErrOverflow) or a positive
// value below one base unit (1: rounded up); ok false when it is in
// between and must be computed. d has about log10(2) decimal digits per
// bit of its unscaled value; the bounds leave a digit of slack each way.
func byMagnitude(d *inf.Dec, milli bool) (v int64, ok bool, err error) {
	u := d.UnscaledBig()
	if u.Sign() == 0 {
		return 0, true, nil
	}
	digits := int64(float64(u.BitLen())*math.Log10(2)) + 1
	mag := digits - int64(d.Scale())
	if milli {
		mag += 3
	}
	switch {
	case mag-2 >= 19: // at least 10^19 > MaxInt64
		return 0, true, ErrOverflow
	case mag <= -1: // below 0.1
		return 1, true, nil
	}
	return 0, false, nil
}

// FormatValue renders a base-unit value for humans in Kubernetes notation:
// cpu as cores or millicores ("4500m", "5"), other resources in whichever of
// binary or decimal units is shorter ("1Gi", "10G", "3"), which is how the
// value was most likely written in the config.
func FormatValue(id ID, v int64) string {
	if id.Name() == CPU {
		return resource.NewMilliQuantity(v, resource.DecimalSI).String()
	}
	dec := resource.NewQuantity(v, resource.DecimalSI).String()
	bin := resource.NewQuantity(v, resource.BinarySI).String()
	if len(bin) < len(dec) {
		return bin
	}
	return dec
}
