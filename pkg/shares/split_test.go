package shares

import (
	"math/big"
	"math/rand"
	"slices"
	"sort"
	"testing"
)

// refSplit is largest remainder spelled out with big integers: the
// reference split is checked against.
func refSplit(total int64, w []int64) []int64 {
	sum := new(big.Int)
	for _, x := range w {
		sum.Add(sum, big.NewInt(max(x, 0)))
	}
	out := make([]int64, len(w))
	if sum.Sign() == 0 {
		return out
	}
	rems := make([]*big.Int, len(w))
	left := total
	for i, x := range w {
		q, r := new(big.Int).QuoRem(new(big.Int).Mul(big.NewInt(total), big.NewInt(max(x, 0))), sum, new(big.Int))
		out[i], rems[i] = q.Int64(), r
		left -= out[i]
	}
	order := make([]int, len(w))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rems[order[a]].Cmp(rems[order[b]]) > 0 })
	for _, i := range order[:left] {
		out[i]++
	}
	return out
}

func TestSplitMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var s splitter
	for trial := 0; trial < 5000; trial++ {
		n := 1 + rng.Intn(12)
		w := make([]int64, n)
		big := rng.Intn(3) == 0
		for i := range w {
			switch {
			case rng.Intn(5) == 0:
				w[i] = 0
			case big:
				w[i] = Unlimited - rng.Int63n(1000)
			default:
				w[i] = 1 + rng.Int63n(10)
			}
		}
		totals := []int64{0, 1, 7, 100, Unlimited - 1, rng.Int63()}
		total := totals[rng.Intn(len(totals))]
		idx := make([]int32, n)
		for i := range idx {
			idx[i] = int32(i)
		}
		got := make([]int64, n)
		s.split(total, idx, w, got)
		if want := refSplit(total, w); !slices.Equal(got, want) {
			t.Fatalf("split(%d, %v) = %v, want %v", total, w, got, want)
		}
	}
}

// TestSplitTinyWeightBesideHuge: weights adding up past 2^64 still split
// exactly, so a small weight keeps its part instead of rounding to 0.
func TestSplitTinyWeightBesideHuge(t *testing.T) {
	var s splitter
	w := []int64{Unlimited, Unlimited, 3}
	got := make([]int64, 3)
	s.split(Unlimited-1, []int32{0, 1, 2}, w, got)
	// (2^63-2)*3/(2^64+1) = 1.49999...: floor 1, and the floors of the
	// two big ones leave 1 spare unit, whose largest remainder is c's.
	if want := refSplit(Unlimited-1, w); !slices.Equal(got, want) || got[2] == 0 {
		t.Fatalf("got %v, want %v with a part for the small weight", got, want)
	}
}

// TestSelectFirst compares the selection with a full sort on random keys,
// ties on the remainder included.
func TestSelectFirst(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	cmp := func(a, b remKey) int {
		if a.before(b) {
			return -1
		}
		return 1
	}
	for trial := 0; trial < 2000; trial++ {
		n := 1 + rng.Intn(40)
		keys := make([]remKey, n)
		for i := range keys {
			keys[i] = remKey{hi: uint64(rng.Intn(2)), lo: uint64(1 + rng.Intn(5)), pos: int32(i)}
		}
		rng.Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		k := 1 + rng.Intn(n)
		sorted := slices.Clone(keys)
		slices.SortFunc(sorted, cmp)
		selectFirst(keys, k)
		got := slices.Clone(keys[:k])
		slices.SortFunc(got, cmp)
		if !slices.Equal(got, sorted[:k]) {
			t.Fatalf("trial %d: first %d = %v, want %v", trial, k, got, sorted[:k])
		}
	}
}

func TestPercentOf(t *testing.T) {
	tests := []struct {
		parent, percent, want int64
	}{
		{200, 50 * PercentScale, 100},
		{80, 12_345, 9}, // 9.876, floored
		{3, 33_333, 0},  // 0.99999
		{Unlimited, 1, Unlimited},
		{Unlimited - 1, 100 * PercentScale, Unlimited - 1},
		{1 << 62, 150 * PercentScale, 3 << 61},         // above 100% still fits
		{Unlimited - 1, 200 * PercentScale, Unlimited}, // does not fit
		{Unlimited / 2, 1 << 40, Unlimited},            // 128-bit product past the divisor
		{1 << 62, 400 * PercentScale, Unlimited},       // 2^64: the product just reaches the divisor
		{100, 0, 0},
		{100, -5, 0},
		{-100, 50 * PercentScale, 0},
	}
	for _, tc := range tests {
		if got := percentOf(tc.parent, tc.percent); got != tc.want {
			t.Errorf("percentOf(%d, %d) = %d, want %d", tc.parent, tc.percent, got, tc.want)
		}
	}
}
