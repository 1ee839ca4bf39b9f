package shares

import (
	"encoding/binary"
	"math/big"
	"math/bits"
)

// splitter divides an integer amount among queues in proportion to their
// weights so that the parts add up exactly to the amount: each gets
// floor(total*w/W), and the units the floors leave over go one each to the
// largest remainders (Hamilton's method). Ties go to the queue that comes
// first by path, which makes the result independent of input order.
// Its scratch buffers are reused across calls so that a Compute allocates
// them once, not once per parent and resource.
type splitter struct {
	keys []remKey // remainders of the positions with one
	buf  [16]byte // for reading a 128-bit remainder out of a big.Int
}

// remKey orders the claims on a spare unit: largest remainder first, then
// the earlier position, which is the smaller path. The remainder is 128
// bits because the sum of the weights, which bounds it, may be.
type remKey struct {
	hi, lo uint64
	pos    int32
}

func (a remKey) before(b remKey) bool {
	if a.hi != b.hi {
		return a.hi > b.hi
	}
	if a.lo != b.lo {
		return a.lo > b.lo
	}
	return a.pos < b.pos
}

// split sets out[q] for every queue index q in idx (which must be in path
// order) to its part of total, in proportion to w[q]. Weights are read as
// non-negative; if they are all 0 every part is 0. total must be finite.
func (s *splitter) split(total int64, idx []int32, w, out []int64) {
	// Sum the weights in 128 bits: a default weight is the queue's max,
	// which may be near MaxInt64, so a sum of several need not fit in 64.
	var whi, wlo uint64
	for _, q := range idx {
		var c uint64
		wlo, c = bits.Add64(wlo, uint64(nonNeg(w[q])), 0)
		whi += c
	}
	if whi == 0 && wlo == 0 {
		for _, q := range idx {
			out[q] = 0
		}
		return
	}

	t := uint64(total)
	var given uint64
	keys := s.keys[:0]
	if whi == 0 {
		// The usual case. total*w/W <= total, so the quotient fits and
		// Div64 cannot panic.
		for i, q := range idx {
			h, l := bits.Mul64(t, uint64(nonNeg(w[q])))
			quo, r := bits.Div64(h, l, wlo)
			out[q] = int64(quo)
			given += quo
			if r > 0 {
				keys = append(keys, remKey{lo: r, pos: int32(i)})
			}
		}
	} else {
		// Weights adding up past 2^64 take a configuration with several
		// maxima near MaxInt64; exactness is kept with big integers there
		// rather than approximating the proportions.
		sum := new(big.Int).Lsh(new(big.Int).SetUint64(whi), 64)
		sum.Or(sum, new(big.Int).SetUint64(wlo))
		bt := new(big.Int).SetUint64(t)
		num, quo, rem := new(big.Int), new(big.Int), new(big.Int)
		for i, q := range idx {
			num.Mul(bt, num.SetInt64(nonNeg(w[q])))
			quo.QuoRem(num, sum, rem)
			out[q] = quo.Int64() // <= total
			given += quo.Uint64()
			if rem.Sign() > 0 {
				rem.FillBytes(s.buf[:]) // rem < sum < 2^128
				keys = append(keys, remKey{
					hi:  binary.BigEndian.Uint64(s.buf[:8]),
					lo:  binary.BigEndian.Uint64(s.buf[8:]),
					pos: int32(i),
				})
			}
		}
	}
	s.keys = keys

	// The fractional parts add up to the spare units, so there are fewer
	// of them than non-zero remainders.
	extra := int(t - given)
	if extra == 0 {
		return
	}
	selectFirst(keys, extra)
	for _, k := range keys[:extra] {
		out[idx[k.pos]]++
	}
}

// selectFirst reorders keys so that keys[:k] are the k first by before
// (Hoare's FIND): linear on average, where sorting every remainder to hand
// out a few spare units was the largest cost of a Compute. Keys are
// distinct (positions are), so the selected set is well defined.
func selectFirst(keys []remKey, k int) {
	lo, hi, m := 0, len(keys)-1, k-1
	for lo < hi {
		pivot := keys[m]
		i, j := lo, hi
		for i <= j {
			for keys[i].before(pivot) {
				i++
			}
			for pivot.before(keys[j]) {
				j--
			}
			if i <= j {
				keys[i], keys[j] = keys[j], keys[i]
				i++
				j--
			}
		}
		if j < m {
			lo = i
		}
		if m < i {
			hi = j
		}
	}
}
