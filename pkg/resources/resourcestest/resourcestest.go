// Package resourcestest holds what the tests of hostile quantities share:
// the quantities themselves and a bound on the time and memory a call may
// take over them.
package resourcestest

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// Hostile are quantity strings that cost minutes and gigabytes to parse,
// add or compare as decimals (a number of two billion digits), or that
// sit at the edge of int64 in base units. apimachinery's parser takes
// minutes over the negative exponents itself, so only a string parser
// with its own guards (resources.ParseQuantity) may be handed them;
// Quantity values of the positive ones are cheap to build.
var Hostile = []string{
	"1e2000000000",
	"1E2000000000",
	"1e+2000000000",
	"100e1999999998", // the API server's canonical form of 1e2000000000
	"1e-2000000000",
	"0e2000000000",
	"1e2147483647",
	"1e4294967296", // wraps to 0 in apimachinery's int32 exponent
	"9E18",         // exa: 9*10^18 bytes fits, 9*10^21 millicores does not
	"9Ei",          // beyond int64
	"8Ei",          // 2^63: one more than int64 holds
	"99999999999999999999999999999999Ei",
	"1234567890123456789012345678901234567890123456789012345678901234567890",
	"0.00000000000000000000000000000000000000000000000000000000000000000001",
	"1e99",
	"1e-99",
}

// Bounds is what a call over hostile input may take: Alloc bytes
// allocated (runtime.MemStats.TotalAlloc, so every goroutine's count) and
// Time. A number of two billion digits is 830 MB and minutes.
type Bounds struct {
	Time  time.Duration
	Alloc uint64
}

// Default is generous for anything that does not build big numbers:
// two seconds and 16 MiB.
var Default = Bounds{Time: 2 * time.Second, Alloc: 16 << 20}

// Within runs fn and fails t when it has not returned within b.Time or
// allocated more than b.Alloc; what names the call in the failure. It
// returns what fn took. On a timeout fn keeps running in the background
// (Go cannot stop it) until the test binary exits.
func Within(t testing.TB, b Bounds, what string, fn func()) (time.Duration, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), b.Time)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-ctx.Done():
		runtime.ReadMemStats(&after)
		t.Fatalf("%s: not returned after %v (allocated %d MiB so far); want within %v", what, b.Time, (after.TotalAlloc-before.TotalAlloc)>>20, b.Time)
	}
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	if alloc > b.Alloc {
		t.Fatalf("%s: allocated %d bytes in %v; want at most %d", what, alloc, took, b.Alloc)
	}
	return took, alloc
}
