package ugm

import (
	"fmt"
	"sync"
	"testing"
)

// BenchmarkCheckFloor is the least any exact check can cost on this
// machine at BenchmarkCheckHandle's shape (depth 4, 4 resources): not
// ugm's code, an ideal layout to compare it with. A request among users
// users is read (its user, queue and application are compared with its
// handle's, as Handle.valid does), then the one usage record its user
// shares with every other request of the user: four levels of usage and
// limit, 4 resources each, contiguous, no pointers. The record can only
// be found from the handle, so a request picked at random pays two
// dependent memory accesses whatever the layout; with users=1 everything
// is in cache and the row is the comparisons alone. docs/performance.md
// sets the check's rows against these.
func BenchmarkCheckFloor(b *testing.B) {
	for _, users := range benchUsers {
		s := newFloorSetup(users)
		name := fmt.Sprintf("users=%d/depth=4/res=4", users)
		b.Run(name+"/random", func(b *testing.B) {
			o := order(users, false)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if s.check(o[i&(len(o)-1)]) != 1 {
					b.Fatal("refused")
				}
			}
		})
		// chained: each check's request is known only once the one before
		// has read its user's record, so no two checks overlap in memory,
		// as in the scheduler, where checks are a scheduling cycle apart.
		b.Run(name+"/chained", func(b *testing.B) {
			o := order(users, false)
			b.ReportAllocs()
			b.ResetTimer()
			next := 0
			for i := 0; i < b.N; i++ {
				ok := s.check(o[(i+next)&(len(o)-1)])
				if ok == 0 {
					b.Fatal("refused")
				}
				next += int(ok) - 1
			}
		})
	}
}

// floorLevel is one queue level of a user's record: usage and limit.
type floorLevel struct {
	usage, max [4]int64
}

// floorRequest is a request as small as a request can be: its identity
// (the strings a handle is checked against) and its amounts inline.
type floorRequest struct {
	user, queue, app string
	res              [4]int64
}

// floorHandle is a request's resolved place: the identity it was resolved
// for and the index of its user's record.
type floorHandle struct {
	user, queue, app string
	rec              int32
}

type floorSetup struct {
	reqs    []floorRequest
	handles []floorHandle
	records [][4]floorLevel
	mu      sync.RWMutex
}

func newFloorSetup(users int) *floorSetup {
	s := &floorSetup{
		reqs:    make([]floorRequest, users),
		handles: make([]floorHandle, users),
		records: make([][4]floorLevel, users),
	}
	for i := range s.reqs {
		r := floorRequest{user: fmt.Sprintf("user-%06d", i), queue: benchLeaf(4, i), app: fmt.Sprintf("app-%06d", i), res: [4]int64{1, 1, 1, 1}}
		s.reqs[i] = r
		s.handles[i] = floorHandle{user: r.user, queue: r.queue, app: r.app, rec: int32(i)}
		for l := range s.records[i] {
			s.records[i][l] = floorLevel{usage: [4]int64{1, 1, 1, 1}, max: [4]int64{1 << 50, 1 << 50, 1 << 50, 1 << 50}}
		}
	}
	return s
}

// check returns 1 when request j fits every level of its user's record,
// else 0; the answer depends on the record's numbers.
func (s *floorSetup) check(j int) int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, h := &s.reqs[j], &s.handles[j]
	if h.user != r.user || h.queue != r.queue || h.app != r.app {
		return 0
	}
	rec := &s.records[h.rec]
	for l := range rec {
		for k, x := range r.res {
			if rec[l].usage[k]+x > rec[l].max[k] {
				return 0
			}
		}
	}
	return rec[0].usage[0]
}
