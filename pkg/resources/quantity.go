package resources

import (
	"errors"
	"fmt"
	"math"
	"math/big"

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
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%s: invalid quantity %q: %w", name, s, err)
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
	// Fast path for the common fractional cpu ("100m", "0.5"): within range,
	// MilliValue is exact, rounding up like kube-scheduler.
	if milli && q.CmpInt64(math.MaxInt64/1000) <= 0 {
		return q.MilliValue(), nil
	}
	// Slow path: fractional base units or very large values. Exact decimal
	// arithmetic, then a range check.
	d := q.AsDec()
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
