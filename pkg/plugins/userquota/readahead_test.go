package userquota

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// TestReadAhead: every object is handled once, in order, with what prepare
// read of that object, and prepare never runs more than readAheadDepth
// batches ahead of handle; below two batches nothing runs beside handle.
func TestReadAhead(t *testing.T) {
	for _, n := range []int{0, 1, 2*readAheadBatch - 1, 2 * readAheadBatch, 2*readAheadBatch + 1, 10*readAheadBatch + 7} {
		t.Run(fmt.Sprintf("objects=%d", n), func(t *testing.T) {
			objs := make([]int, n)
			for i := range objs {
				objs[i] = i
			}
			var prepared, handled atomic.Int64
			var ahead atomic.Int64 // the most prepared and not yet handled
			prepare := func(obj int, into *int) {
				if *into != 0 {
					t.Errorf("object %v: prepare got %d, want a zeroed value", obj, *into)
				}
				*into = obj*2 + 1
				if d := prepared.Add(1) - handled.Load(); d > ahead.Load() {
					ahead.Store(d)
				}
			}
			var order []int
			handle := func(i int, p *int) {
				if *p != i*2+1 {
					t.Errorf("object %d handled with %d, want what prepare read of it (%d)", i, *p, i*2+1)
				}
				order = append(order, i)
				handled.Add(1)
			}
			readAhead(objs, prepare, handle)
			if len(order) != n {
				t.Fatalf("handled %d objects, want %d", len(order), n)
			}
			for i, got := range order {
				if got != i {
					t.Fatalf("object %d handled in place %d", got, i)
				}
			}
			limit := int64(readAheadDepth * readAheadBatch)
			if n < 2*readAheadBatch {
				limit = 1
			}
			if a := ahead.Load(); a > limit {
				t.Errorf("prepare ran %d objects ahead of handle, want at most %d", a, limit)
			}
		})
	}
}
