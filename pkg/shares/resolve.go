package shares

import (
	"math/bits"

	"github.com/userquota/userquota/pkg/resources"
)

// percentDivisor turns value*Percent into value*percent/100: Percent is in
// 1/PercentScale of a percent.
const percentDivisor = 100 * PercentScale

// satAdd adds two non-negative amounts, stopping at Unlimited: a sum that
// would overflow is unbounded for every purpose here, and a wrapped sum
// would turn into a negative share.
func satAdd(a, b int64) int64 {
	if a > Unlimited-b {
		return Unlimited
	}
	return a + b
}

// nonNeg reads a negative input as 0: validation belongs to the config
// parser, but a negative amount must never reach the arithmetic below,
// which assumes non-negative values.
func nonNeg(x int64) int64 {
	if x < 0 {
		return 0
	}
	return x
}

// percentOf returns floor(parent*percent/100) with percent in
// 1/PercentScale of a percent. It works in 128 bits because memory in bytes
// times 100,000 overflows int64; a percentage of Unlimited, or a result that
// does not fit (percent above 100), is Unlimited.
func percentOf(parent, percent int64) int64 {
	if percent <= 0 {
		return 0
	}
	if parent == Unlimited {
		return Unlimited
	}
	hi, lo := bits.Mul64(uint64(nonNeg(parent)), uint64(percent))
	if hi >= percentDivisor {
		return Unlimited
	}
	q, _ := bits.Div64(hi, lo, percentDivisor)
	if q >= uint64(Unlimited) {
		return Unlimited
	}
	return int64(q)
}

// resolve returns the value of a configured amount: its absolute value, or
// its percentage of the parent's resolved value of the same kind; unset
// when the resource is not configured (0 for guaranteed, Unlimited for max).
func resolve(a Amounts, id resources.ID, parent, unset int64) int64 {
	if a == nil {
		return unset
	}
	amt, ok := a[id]
	if !ok {
		return unset
	}
	if amt.Percent != 0 {
		return percentOf(parent, amt.Percent)
	}
	return nonNeg(amt.Value)
}
