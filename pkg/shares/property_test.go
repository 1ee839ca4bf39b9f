package shares

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/resources"
)

var memory = resources.Intern(resources.Memory)

// TestPropertiesRandomTrees checks the invariants of docs/elastic.md on
// random trees: shares fit in their parent, guarantees are honoured, the
// split is work-conserving, nothing depends on sibling order, and nothing
// is negative or wraps.
func TestPropertiesRandomTrees(t *testing.T) {
	const trees = 500
	for seed := int64(1); seed <= trees; seed++ {
		rng := rand.New(rand.NewSource(seed))
		root, capacity := randomTree(rng)
		tab := Compute(root, capacity)
		errs := invariantErrors(root, capacity, tab)
		shuffled := shuffledClone(rng, root)
		if d := diffTables(tab, Compute(shuffled, capacity)); d != "" {
			errs = append(errs, "shuffling siblings changed the result: "+d)
		}
		if len(errs) > 0 {
			t.Fatalf("seed %d, capacity %v:\n%s\nerrors:\n%s", seed, capacity, dumpTree(root), strings.Join(errs, "\n"))
		}
	}
}

// checkInvariants reports every invariant a table breaks.
func checkInvariants(t *testing.T, root *Queue, capacity resources.Limit, tab *Table) {
	t.Helper()
	for _, e := range invariantErrors(root, capacity, tab) {
		t.Error(e)
	}
}

func invariantErrors(root *Queue, capacity resources.Limit, tab *Table) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	ids := relevantResources(root, capacity)
	var queues []*Queue
	var walk func(q *Queue)
	walk = func(q *Queue) {
		queues = append(queues, q)
		for _, ch := range q.Children {
			walk(ch)
		}
	}
	walk(root)
	if len(tab.All()) != len(queues) {
		fail("%d shares for %d queues", len(tab.All()), len(queues))
	}
	if !sort.SliceIsSorted(tab.All(), func(i, j int) bool { return tab.All()[i].Path < tab.All()[j].Path }) {
		fail("All() not sorted by path")
	}

	scaled := map[string]Scaling{}
	for i, sc := range tab.Scaled {
		scaled[sc.Parent+"/"+sc.Resource.Name()] = sc
		if i > 0 {
			p := tab.Scaled[i-1]
			if p.Parent > sc.Parent || p.Parent == sc.Parent && p.Resource.Name() >= sc.Resource.Name() {
				fail("Scaled not sorted at %d", i)
			}
		}
	}
	nscaled := 0

	for _, q := range queues {
		s := tab.Get(q.Path)
		if s == nil {
			fail("%s: no share", q.Path)
			continue
		}
		// (e) nothing negative; limits sorted by name and naming exactly
		// the finite resources.
		for _, v := range []resources.Vector{s.Guaranteed, s.Configured, s.Weight, s.Demand} {
			for id, x := range v {
				if x < 0 {
					fail("%s %s: negative %d in %v", q.Path, resources.ID(id), x, v)
				}
			}
		}
		for _, l := range []resources.Limit{s.Max, s.Runtime} {
			for i, b := range l {
				if b.Max < 0 || b.Max == Unlimited {
					fail("%s: bound %v in %v", q.Path, b, l)
				}
				if i > 0 && l[i-1].ID.Name() >= b.ID.Name() {
					fail("%s: limit %v not sorted by name", q.Path, l)
				}
				if !slices.Contains(ids, b.ID) {
					fail("%s: limit %v names irrelevant %s", q.Path, l, b.ID)
				}
			}
		}
		for _, id := range ids {
			g, c, m := s.Guaranteed.Get(id), s.Configured.Get(id), limitValue(s.Max, id)
			if g > c || c > m {
				fail("%s %s: guaranteed %d, configured %d, max %d out of order", q.Path, id, g, c, m)
			}
			// Demand: a leaf's input, a parent's sum of what its children
			// can use, and all of the guarantee of a child that keeps it.
			want := nonNeg(q.Demand.Get(id))
			if len(q.Children) > 0 {
				want = 0
				for _, ch := range q.Children {
					cs := tab.Get(ch.Path)
					x := min(cs.Demand.Get(id), limitValue(cs.Max, id))
					if ch.NoLend {
						x = max(x, cs.Configured.Get(id))
					}
					want = satAdd(want, x)
				}
			}
			// Configured of a parent that sets none: its children's, in sum.
			if _, set := q.Guaranteed[id]; !set && len(q.Children) > 0 && q != root {
				var sum int64
				for _, ch := range q.Children {
					sum = satAdd(sum, tab.Get(ch.Path).Configured.Get(id))
				}
				if c != min(sum, m) {
					fail("%s %s: configured %d, want its children's %d", q.Path, id, c, min(sum, m))
				}
			}
			if s.Demand.Get(id) != want {
				fail("%s %s: demand %d, want %d", q.Path, id, s.Demand.Get(id), want)
			}
			// Weight: explicit, else max, else guaranteed, else 1.
			wantW := int64(1)
			if w, ok := q.Weight[id]; ok {
				wantW = nonNeg(w)
			} else if m != Unlimited {
				wantW = m
			} else if c > 0 {
				wantW = c
			}
			if q != root && s.Weight.Get(id) != wantW {
				fail("%s %s: weight %d, want %d", q.Path, id, s.Weight.Get(id), wantW)
			}
		}
		if q == root {
			for _, id := range ids {
				if got, want := limitValue(s.Runtime, id), limitValue(capacity, id); got != want {
					fail("root %s: runtime %d, want the capacity %d", id, got, want)
				}
			}
		}
		if len(q.Children) == 0 {
			continue
		}
		for _, id := range ids {
			share := limitValue(s.Runtime, id)
			// Children's guarantees must fit in the parent's (scaled) one.
			pg := s.Guaranteed.Get(id)
			var sumConf, sumG, sumRT int64
			for _, ch := range q.Children {
				cs := tab.Get(ch.Path)
				sumConf = satAdd(sumConf, cs.Configured.Get(id))
				sumG = satAdd(sumG, cs.Guaranteed.Get(id))
				sumRT = satAdd(sumRT, limitValue(cs.Runtime, id))
			}
			sc, isScaled := scaled[q.Path+"/"+id.Name()]
			if isScaled {
				nscaled++
			}
			if sumConf > pg {
				if !isScaled || sc.Sum != sumConf || sc.Share != pg {
					fail("%s %s: guaranteed %d > parent's %d but Scaled entry %+v (%v)", q.Path, id, sumConf, pg, sc, isScaled)
				}
				if sumG != pg {
					fail("%s %s: scaled guaranteed add up to %d, not the parent's %d", q.Path, id, sumG, pg)
				}
			} else {
				if isScaled {
					fail("%s %s: Scaled entry %+v but guaranteed fit", q.Path, id, sc)
				}
				for _, ch := range q.Children {
					cs := tab.Get(ch.Path)
					if cs.Guaranteed.Get(id) != cs.Configured.Get(id) {
						fail("%s %s: guaranteed %d changed from %d without scaling", ch.Path, id, cs.Guaranteed.Get(id), cs.Configured.Get(id))
					}
				}
			}
			// (a) the children fit in the parent.
			if sumRT > share {
				fail("%s %s: children's runtime add up to %d > share %d", q.Path, id, sumRT, share)
			}
			for _, ch := range q.Children {
				cs := tab.Get(ch.Path)
				r, d, g, m := limitValue(cs.Runtime, id), cs.Demand.Get(id), cs.Guaranteed.Get(id), limitValue(cs.Max, id)
				// (b) guarantees honoured, max respected.
				lo := min(d, g)
				if ch.NoLend {
					lo = g
				}
				if r < lo {
					fail("%s %s: runtime %d below its guarantee %d (demand %d, guaranteed %d, nolend %v)", ch.Path, id, r, lo, d, g, ch.NoLend)
				}
				if r > m {
					fail("%s %s: runtime %d above max %d", ch.Path, id, r, m)
				}
				// (c) work-conserving: capacity stays idle only when
				// nobody with a weight wants more.
				if sumRT < share && cs.Weight.Get(id) > 0 && r < min(d, m) {
					fail("%s %s: runtime %d < min(demand %d, max %d) while the parent has %d idle",
						ch.Path, id, r, d, m, share-sumRT)
				}
			}
		}
	}
	if nscaled != len(tab.Scaled) {
		fail("%d Scaled entries, %d justified", len(tab.Scaled), nscaled)
	}
	return errs
}

// relevantResources is the set the result must cover: capacity, any
// non-root guaranteed or max, any leaf demand.
func relevantResources(root *Queue, capacity resources.Limit) []resources.ID {
	set := map[resources.ID]bool{}
	for _, b := range capacity {
		set[b.ID] = true
	}
	var walk func(q *Queue)
	walk = func(q *Queue) {
		if q != root {
			for id := range q.Guaranteed {
				set[id] = true
			}
			for id := range q.Max {
				set[id] = true
			}
		}
		if len(q.Children) == 0 {
			for id, x := range q.Demand {
				if x != 0 {
					set[resources.ID(id)] = true
				}
			}
		}
		for _, ch := range q.Children {
			walk(ch)
		}
	}
	walk(root)
	var ids []resources.ID
	for id := range set {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b resources.ID) int { return strings.Compare(a.Name(), b.Name()) })
	return ids
}

// randomTree builds a tree of depth <= 4 and fanout <= 5 over 1-3
// resources, with values from small to near MaxInt64 so that sums
// saturate, some percentages, weights (0 included), NoLend and capacities
// that are sometimes absent (Unlimited) or too small for the guarantees.
func randomTree(rng *rand.Rand) (*Queue, resources.Limit) {
	pool := []resources.ID{cpu, memory, units}
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	ids := pool[:1+rng.Intn(3)]
	scales := map[resources.ID]int64{}
	for _, id := range ids {
		scales[id] = []int64{10, 1000, 1 << 40, Unlimited / 3, Unlimited - 1}[rng.Intn(5)]
	}
	upTo := func(n int64) int64 { return rng.Int63n(n) + int64(rng.Intn(2)) }

	var capacity resources.Limit
	for _, id := range ids {
		if rng.Intn(7) == 0 {
			continue // unlimited
		}
		capacity = append(capacity, resources.Bound{ID: id, Max: upTo(min(scales[id], Unlimited/3)) * 3})
	}
	slices.SortFunc(capacity, func(a, b resources.Bound) int { return strings.Compare(a.ID.Name(), b.ID.Name()) })

	amount := func(id resources.ID, scale int64) Amount {
		if rng.Intn(4) == 0 {
			return pct(1 + rng.Int63n(100*PercentScale))
		}
		return abs(upTo(scale))
	}
	var build func(path string, depth int) *Queue
	build = func(path string, depth int) *Queue {
		q := &Queue{Path: path, NoLend: rng.Intn(7) == 0}
		for _, id := range ids {
			sc := scales[id]
			if rng.Intn(10) < 7 {
				if q.Guaranteed == nil {
					q.Guaranteed = Amounts{}
				}
				q.Guaranteed[id] = amount(id, sc/3)
			}
			if rng.Intn(10) < 6 {
				if q.Max == nil {
					q.Max = Amounts{}
				}
				q.Max[id] = amount(id, sc)
			}
			if rng.Intn(4) == 0 {
				if q.Weight == nil {
					q.Weight = map[resources.ID]int64{}
				}
				q.Weight[id] = rng.Int63n(11)
			}
			if rng.Intn(10) > 0 {
				q.Demand.Set(id, upTo(sc))
			}
		}
		nkids := 0
		if depth == 0 {
			nkids = 1 + rng.Intn(5)
		} else if depth < 4 && rng.Intn(2) == 0 {
			nkids = 1 + rng.Intn(5)
		}
		for i := 0; i < nkids; i++ {
			q.Children = append(q.Children, build(fmt.Sprintf("%s.q%d", path, i), depth+1))
		}
		return q
	}
	return build("root", 0), capacity
}

// shuffledClone copies the tree with every Children slice in random order.
func shuffledClone(rng *rand.Rand, q *Queue) *Queue {
	c := *q
	c.Children = make([]*Queue, len(q.Children))
	for i, ch := range q.Children {
		c.Children[i] = shuffledClone(rng, ch)
	}
	rng.Shuffle(len(c.Children), func(i, j int) { c.Children[i], c.Children[j] = c.Children[j], c.Children[i] })
	return &c
}

func dumpTree(root *Queue) string {
	var b strings.Builder
	amounts := func(a Amounts) string {
		var parts []string
		for id, x := range a {
			if x.Percent != 0 {
				parts = append(parts, fmt.Sprintf("%s=%d/%d%%", id, x.Percent, PercentScale))
			} else {
				parts = append(parts, fmt.Sprintf("%s=%d", id, x.Value))
			}
		}
		sort.Strings(parts)
		return strings.Join(parts, ",")
	}
	var walk func(q *Queue, depth int)
	walk = func(q *Queue, depth int) {
		var w []string
		for id, x := range q.Weight {
			w = append(w, fmt.Sprintf("%s=%d", id, x))
		}
		sort.Strings(w)
		fmt.Fprintf(&b, "%s%s guaranteed{%s} max{%s} weight{%s} nolend=%v demand{%v}\n",
			strings.Repeat("  ", depth), q.Path, amounts(q.Guaranteed), amounts(q.Max), strings.Join(w, ","), q.NoLend, q.Demand)
		for _, ch := range q.Children {
			walk(ch, depth+1)
		}
	}
	walk(root, 0)
	return b.String()
}
