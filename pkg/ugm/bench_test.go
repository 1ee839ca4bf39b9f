package ugm

import (
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/userquota/userquota/pkg/resources"
)

// Benchmarks for the check path and the commit path. Run them with
// `make bench`; docs/performance.md holds the table and the command.

var (
	benchUsers  = []int{1, 10_000, 100_000}
	benchDepths = []int{2, 4, 8}
	benchRes    = []int{2, 4, 8}
)

// benchResourceNames returns n resource names, the common ones first.
func benchResourceNames(n int) []string {
	names := []string{"cpu", "memory", "pods", "ephemeral-storage"}
	for i := len(names); i < n; i++ {
		names = append(names, fmt.Sprintf("example.com/r%d", i))
	}
	return names[:n]
}

// benchConfig is a chain of depth levels (root counts as one) ending in 10
// leaves; every level limits every user ("*") and the group g0 on all
// resources, loosely enough that nothing is refused.
func benchConfig(depth, nres int) string {
	var lim strings.Builder
	lim.WriteString("{")
	for i, n := range benchResourceNames(nres) {
		if i > 0 {
			lim.WriteString(", ")
		}
		fmt.Fprintf(&lim, "%s: 1P", n)
	}
	lim.WriteString("}")
	limits := func(ind string) string {
		return fmt.Sprintf("%[1]slimits:\n%[1]s- limit: users\n%[1]s  users: [\"*\"]\n%[1]s  maxresources: %[2]s\n%[1]s- limit: groups\n%[1]s  groups: [g0]\n%[1]s  maxresources: %[2]s\n", ind, lim.String())
	}
	var b strings.Builder
	b.WriteString("partitions:\n- name: default\n  queues:\n  - name: root\n")
	ind := "    "
	b.WriteString(limits(ind))
	for d := 1; d < depth-1; d++ {
		fmt.Fprintf(&b, "%squeues:\n%s- name: l%d\n", ind, ind, d)
		ind += "  "
		b.WriteString(limits(ind))
	}
	fmt.Fprintf(&b, "%squeues:\n", ind)
	for l := 0; l < 10; l++ {
		fmt.Fprintf(&b, "%s- name: leaf%d\n", ind, l)
		b.WriteString(limits(ind + "  "))
	}
	return b.String()
}

// benchLeaf returns the path of leaf i%10, one string per leaf: queue
// paths come from the config and placement, few and shared, not a copy
// per pod.
func benchLeaf(depth, i int) string {
	k := [2]int{depth, i % 10}
	if p, ok := benchLeaves[k]; ok {
		return p
	}
	p := "root"
	for d := 1; d < depth-1; d++ {
		p += fmt.Sprintf(".l%d", d)
	}
	p = fmt.Sprintf("%s.leaf%d", p, i%10)
	benchLeaves[k] = p
	return p
}

var benchLeaves = map[[2]int]string{}

type benchSetup struct {
	m    *Manager
	reqs []Request // one per user, an allocation of its running application
}

// newBenchSetup tracks users users, each with one running application.
func newBenchSetup(b *testing.B, users, depth, nres int) *benchSetup {
	b.Helper()
	s := newBenchRequests(b, users, depth, nres)
	s.charge(b)
	return s
}

// newBenchRequests builds the manager and the requests without charging.
func newBenchRequests(b *testing.B, users, depth, nres int) *benchSetup {
	b.Helper()
	m := withConfig(b, benchConfig(depth, nres))
	var v resources.Vector
	for _, n := range benchResourceNames(nres) {
		v.Set(resources.Intern(n), 1)
	}
	s := &benchSetup{m: m, reqs: make([]Request, users)}
	for i := range s.reqs {
		s.reqs[i] = Request{
			User:      fmt.Sprintf("user-%06d", i),
			Groups:    []string{"g0"},
			Queue:     benchLeaf(depth, i),
			App:       AppKey{Namespace: "ns", ID: fmt.Sprintf("app-%06d", i)},
			Resources: v,
		}
	}
	return s
}

func (s *benchSetup) charge(b *testing.B) {
	for i := range s.reqs {
		if err := s.m.Increase(&s.reqs[i]); err != nil {
			b.Fatal(err)
		}
	}
}

// order returns a random visiting order of n users (cache-unfriendly), or
// all zeros for the same-user case.
func order(n int, same bool) []int {
	o := make([]int, 1<<16)
	rng := rand.New(rand.NewSource(1))
	for i := range o {
		if !same {
			o[i] = rng.Intn(n)
		}
	}
	return o
}

func benchMatrix(b *testing.B, fn func(b *testing.B, s *benchSetup, o []int)) {
	for _, users := range benchUsers {
		for _, depth := range benchDepths {
			for _, nres := range benchRes {
				if users == 100_000 && depth != 4 && nres != 4 {
					continue // keep the big cases to the target shape
				}
				s := newBenchSetup(b, users, depth, nres)
				name := fmt.Sprintf("users=%d/depth=%d/res=%d", users, depth, nres)
				b.Run(name+"/random", func(b *testing.B) { fn(b, s, order(users, false)) })
				if users > 1 && depth == 4 && nres == 4 {
					b.Run(name+"/same", func(b *testing.B) { fn(b, s, order(users, true)) })
				}
			}
		}
	}
}

func BenchmarkCheck(b *testing.B) { benchMatrix(b, benchCheck) }

// benchCheck checks s's requests in the order o, each admitted.
func benchCheck(b *testing.B, s *benchSetup, o []int) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.m.Check(&s.reqs[o[i&(len(o)-1)]]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckHandle is BenchmarkCheck through each request's handle,
// resolved before the timer starts (a pod's handle is resolved at its
// admission and reused by its later checks and its commit).
func BenchmarkCheckHandle(b *testing.B) {
	benchMatrix(b, func(b *testing.B, s *benchSetup, o []int) {
		hs := s.handles(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			j := o[i&(len(o)-1)]
			if err := s.m.CheckWith(&s.reqs[j], &hs[j]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// handles resolves one handle per request.
func (s *benchSetup) handles(b *testing.B) []Handle {
	hs := make([]Handle, len(s.reqs))
	for i := range s.reqs {
		if err := s.m.CheckWith(&s.reqs[i], &hs[i]); err != nil {
			b.Fatal(err)
		}
	}
	return hs
}

// BenchmarkIncreaseDecreaseHandle is BenchmarkIncreaseDecrease through
// each request's handle, as the ledger charges and releases a pod.
func BenchmarkIncreaseDecreaseHandle(b *testing.B) {
	benchMatrix(b, func(b *testing.B, s *benchSetup, o []int) {
		hs := s.handles(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			j := o[i&(len(o)-1)]
			if err := s.m.IncreaseWith(&s.reqs[j], &hs[j]); err != nil {
				b.Fatal(err)
			}
			if err := s.m.DecreaseWith(&s.reqs[j], &hs[j]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkIncreaseDecreaseHandleLagged is BenchmarkIncreaseDecreaseHandle
// with each release lagging its charge by benchLag calls, as a pod's
// release follows its charge by a pod's run: the release finds the
// user's state as cold as the charge did (random users), not warm from
// the charge just before.
func BenchmarkIncreaseDecreaseHandleLagged(b *testing.B) {
	benchMatrix(b, func(b *testing.B, s *benchSetup, o []int) {
		hs := s.handles(b)
		user := func(i int) int { return o[i&(len(o)-1)] }
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			j := user(i)
			if err := s.m.IncreaseWith(&s.reqs[j], &hs[j]); err != nil {
				b.Fatal(err)
			}
			if i >= benchLag {
				k := user(i - benchLag)
				if err := s.m.DecreaseWith(&s.reqs[k], &hs[k]); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StopTimer()
		for i := max(b.N-benchLag, 0); i < b.N; i++ {
			k := user(i)
			if err := s.m.DecreaseWith(&s.reqs[k], &hs[k]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchLag is how many charges a release lags behind its own: enough that
// a random user's state has left the core's caches (4,096 users' node
// blocks, applications, requests and handles are several MiB).
const benchLag = 4096

func BenchmarkIncreaseDecrease(b *testing.B) {
	benchMatrix(b, func(b *testing.B, s *benchSetup, o []int) {
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			r := &s.reqs[o[i&(len(o)-1)]]
			if err := s.m.Increase(r); err != nil {
				b.Fatal(err)
			}
			if err := s.m.Decrease(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParallelMix: one goroutine releases and re-charges pods while
// the others check, as informer events race scheduling cycles.
func BenchmarkParallelMix(b *testing.B) {
	for _, users := range []int{10_000, 100_000} {
		s := newBenchSetup(b, users, 4, 4)
		o := order(users, false)
		b.Run(fmt.Sprintf("users=%d/depth=4/res=4", users), func(b *testing.B) {
			var stop atomic.Bool
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; !stop.Load(); i++ {
					r := &s.reqs[o[(i*7)&(len(o)-1)]]
					_ = s.m.Increase(r)
					_ = s.m.Decrease(r)
				}
			}()
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1)
					if err := s.m.Check(&s.reqs[o[int(i)&(len(o)-1)]]); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			stop.Store(true)
			<-done
		})
	}
}

// BenchmarkMemoryPerNode reports the heap held per tracked (user, queue)
// node: users with one application on a depth-4 path, so each user holds 4
// nodes (root..leaf). It counts everything charging allocates: the user
// tracker, its nodes and map, the application record and the map entries;
// group and queue trackers are shared and negligible. The requests
// themselves are built before the measurement starts.
func BenchmarkMemoryPerNode(b *testing.B) {
	const users, depth = 100_000, 4
	for i := 0; i < b.N; i++ {
		s := newBenchRequests(b, users, depth, 4)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s.charge(b)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(users*depth), "B/node")
		runtime.KeepAlive(s)
	}
}
