package shares

import (
	"slices"
	"strings"

	"github.com/userquota/userquota/pkg/resources"
)

// Compute returns the shares of every queue of the tree under root, given
// the cluster's capacity (a resource it does not name is Unlimited).
// The algorithm, per resource, top down (docs/elastic.md):
//
//   - root's share is the capacity;
//   - percentages resolve against the parent's resolved guaranteed / max
//     (root's children: against the capacity);
//   - a queue that sets no guaranteed for a resource guarantees what its
//     children do, in sum (as YuniKorn reads such a parent);
//   - when the children's guaranteed add up to more than the parent's own
//     guaranteed (root: the capacity), they are scaled down in proportion
//     (largest remainder) and the parent is listed in Table.Scaled: with a
//     valid config this happens only when nodes were lost (or percentages
//     add up to more than 100%), never because a parent lends what its
//     idle children do not use;
//   - each child first gets min(demand, guaranteed), or its whole
//     guaranteed with NoLend;
//   - what is left of the parent's share goes to children whose demand is
//     not met, in proportion to weight, each capped by min(demand, max),
//     repeated until nothing is left or every demand is met; integer
//     rounding by largest remainder (ties by path), so shares add up
//     exactly.
//
// Root's own Guaranteed and Max are ignored: its resolved guaranteed and
// max are the capacity. Percentages resolve against the parent's resolved
// values before any scaling down, so a shrinking cluster scales a subtree
// once, at the level where it no longer fits; below it, scaled values flow
// down and the children fit in their parent's scaled guarantee.
// A nil root gives an empty table.
func Compute(root *Queue, capacity resources.Limit) *Table {
	if root == nil {
		return &Table{byPath: map[string]*Share{}}
	}
	c := newComputer(root, capacity)
	for _, id := range c.ids {
		c.computeResource(id)
	}
	return c.table()
}

// node is one queue of the flattened tree. Nodes are in breadth-first
// order with every node's children contiguous and sorted by path, so a
// parent comes before its children, and the children of a node are the
// index range [first, end): passes over the tree are loops, not recursion,
// and siblings are always visited in path order.
type node struct {
	q          *Queue
	parent     int32
	first, end int32
}

// computer holds one Compute's state. Per-resource values live in flat
// slices indexed by node, reused for every resource, so the cost of a
// Compute is a handful of allocations however large the tree.
type computer struct {
	nodes    []node
	iota     []int32 // iota[i] == i: child index lists are sub-slices of it
	capacity resources.Limit
	ids      []resources.ID // every relevant resource, by name
	width    int            // length of the output vectors: max ID + 1

	// Per resource, by node.
	conf   []int64 // resolved guaranteed (after clamping to max)
	max    []int64 // resolved max
	guar   []int64 // guaranteed after scaling down
	demand []int64
	weight []int64
	limit  []int64 // min(demand, max): what surplus can raise a queue to
	alloc  []int64 // the share (runtime)
	offer  []int64 // this round's split of the surplus

	hungry []int32
	split  splitter
	scaled []Scaling

	// Output, filled resource by resource.
	shares  []Share
	vecs    []int64           // 4 vectors of width per node
	bounds  []resources.Bound // 2 limits of len(ids) per node: max, runtime
	nbounds []int32           // bounds used per node and limit
}

func newComputer(root *Queue, capacity resources.Limit) *computer {
	c := &computer{capacity: capacity}
	c.flatten(root)
	c.collectResources()
	n := len(c.nodes)

	scratch := make([]int64, 8*n)
	c.conf, c.max, c.guar, c.demand = scratch[0:n], scratch[n:2*n], scratch[2*n:3*n], scratch[3*n:4*n]
	c.weight, c.limit, c.alloc, c.offer = scratch[4*n:5*n], scratch[5*n:6*n], scratch[6*n:7*n], scratch[7*n:8*n]
	c.iota = make([]int32, n)
	for i := range c.iota {
		c.iota[i] = int32(i)
	}
	fanout := 0
	for _, nd := range c.nodes {
		fanout = max(fanout, int(nd.end-nd.first))
	}
	c.hungry = make([]int32, 0, fanout)
	c.split.keys = make([]remKey, 0, fanout)

	c.shares = make([]Share, n)
	c.vecs = make([]int64, 4*c.width*n)
	c.bounds = make([]resources.Bound, 2*len(c.ids)*n)
	c.nbounds = make([]int32, 2*n)
	return c
}

// flatten lays the tree out breadth first, children sorted by path.
func (c *computer) flatten(root *Queue) {
	c.nodes = make([]node, 1, countQueues(root))
	c.nodes[0] = node{q: root, parent: -1}
	for i := 0; i < len(c.nodes); i++ {
		first := int32(len(c.nodes))
		for _, ch := range c.nodes[i].q.Children {
			if ch != nil {
				c.nodes = append(c.nodes, node{q: ch, parent: int32(i)})
			}
		}
		end := int32(len(c.nodes))
		// Stable, so that even duplicate sibling paths keep a
		// well-defined (if input-dependent) order.
		slices.SortStableFunc(c.nodes[first:end], func(a, b node) int {
			return strings.Compare(a.q.Path, b.q.Path)
		})
		c.nodes[i].first, c.nodes[i].end = first, end
	}
}

func countQueues(q *Queue) int {
	n := 1
	for _, ch := range q.Children {
		if ch != nil {
			n += countQueues(ch)
		}
	}
	return n
}

// collectResources finds every resource the result must cover: those the
// capacity names, those any queue configures a guaranteed or max for, and
// those any leaf demands. A resource named only in a weight is left out: it
// would get a runtime of 0 everywhere, blocking it for no reason.
func (c *computer) collectResources() {
	var seen []bool
	mark := func(id resources.ID) {
		if id < 0 {
			return
		}
		for int(id) >= len(seen) {
			seen = append(seen, false)
		}
		seen[id] = true
	}
	for _, b := range c.capacity {
		mark(b.ID)
	}
	for i := range c.nodes {
		nd := &c.nodes[i]
		if i > 0 { // root's own guaranteed and max are ignored
			for id := range nd.q.Guaranteed {
				mark(id)
			}
			for id := range nd.q.Max {
				mark(id)
			}
		}
		if nd.first == nd.end {
			for id, x := range nd.q.Demand {
				if x != 0 {
					mark(resources.ID(id))
				}
			}
		}
	}
	for id, ok := range seen {
		if ok {
			c.ids = append(c.ids, resources.ID(id))
		}
	}
	slices.SortFunc(c.ids, func(a, b resources.ID) int {
		return strings.Compare(a.Name(), b.Name())
	})
	c.width = len(seen)
}

// computeResource runs the whole algorithm for one resource and records
// its results.
func (c *computer) computeResource(id resources.ID) {
	capv, ok := c.capacity.Get(id)
	if !ok {
		capv = Unlimited
	}
	capv = nonNeg(capv)
	c.resolveAll(id, capv)
	c.implicitGuarantees(id)
	c.demands(id)
	c.weights(id)

	c.alloc[0], c.guar[0] = capv, capv
	for p := range c.nodes {
		if c.nodes[p].first < c.nodes[p].end {
			c.distribute(int32(p), id)
		}
	}
	c.record(id)
}

// resolveAll resolves guaranteed and max top down; root's are the capacity.
func (c *computer) resolveAll(id resources.ID, capv int64) {
	c.conf[0], c.max[0] = capv, capv
	for i := 1; i < len(c.nodes); i++ {
		q, p := c.nodes[i].q, c.nodes[i].parent
		m := resolve(q.Max, id, c.max[p], Unlimited)
		g := resolve(q.Guaranteed, id, c.conf[p], 0)
		c.max[i], c.conf[i] = m, min(g, m)
	}
}

// implicitGuarantees fills, bottom up, the guaranteed of every queue that
// sets none for the resource: the sum of its children's (capped by its
// max). Root keeps the capacity.
func (c *computer) implicitGuarantees(id resources.ID) {
	for i := len(c.nodes) - 1; i > 0; i-- {
		nd := &c.nodes[i]
		if _, set := nd.q.Guaranteed[id]; set || nd.first == nd.end {
			continue
		}
		var g int64
		for ch := nd.first; ch < nd.end; ch++ {
			g = satAdd(g, c.conf[ch])
		}
		c.conf[i] = min(g, c.max[i])
	}
}

// demands computes demand bottom up: a parent can use no more than what
// its children want within their own max, plus what a child that does not
// lend keeps whatever it wants (so the parent gets it to pass down).
func (c *computer) demands(id resources.ID) {
	for i := len(c.nodes) - 1; i >= 0; i-- {
		nd := &c.nodes[i]
		if nd.first == nd.end {
			c.demand[i] = nonNeg(nd.q.Demand.Get(id))
			continue
		}
		var d int64
		for ch := nd.first; ch < nd.end; ch++ {
			x := min(c.demand[ch], c.max[ch])
			if c.nodes[ch].q.NoLend {
				x = max(x, c.conf[ch])
			}
			d = satAdd(d, x)
		}
		c.demand[i] = d
	}
}

// weights sets every queue's sharing weight: explicit, else its max (a
// bigger queue takes more of the surplus), else its guaranteed, else 1.
func (c *computer) weights(id resources.ID) {
	for i := range c.nodes {
		q := c.nodes[i].q
		if w, ok := q.Weight[id]; ok {
			c.weight[i] = nonNeg(w)
		} else if c.max[i] != Unlimited {
			c.weight[i] = c.max[i]
		} else if c.conf[i] > 0 {
			c.weight[i] = c.conf[i]
		} else {
			c.weight[i] = 1
		}
	}
}

// distribute splits parent p's share among its children.
func (c *computer) distribute(p int32, id resources.ID) {
	share := c.alloc[p]
	kids := c.iota[c.nodes[p].first:c.nodes[p].end]

	var sumG int64
	for _, k := range kids {
		sumG = satAdd(sumG, c.conf[k])
		c.guar[k] = c.conf[k]
	}
	if g := c.guar[p]; sumG > g {
		// The guarantees no longer fit in the parent's (the cluster
		// shrank, or percentages add up to more than 100%): scale them
		// down so they add up to exactly the parent's, keeping their
		// proportions.
		c.split.split(g, kids, c.conf, c.guar)
		c.scaled = append(c.scaled, Scaling{Parent: c.nodes[p].q.Path, Resource: id, Sum: sumG, Share: g})
	}

	// Base: a queue's guaranteed, but only what it demands unless it does
	// not lend. The base never exceeds the scaled guaranteed, so the bases
	// fit in the share.
	var sumBase int64
	for _, k := range kids {
		base := c.guar[k]
		if !c.nodes[k].q.NoLend {
			base = min(base, c.demand[k])
		}
		c.alloc[k] = base
		c.limit[k] = min(c.demand[k], c.max[k])
		sumBase = satAdd(sumBase, base)
	}

	if sumBase > share {
		// Not reached when the parent got its own base (the children's
		// bases add up to at most min(its demand, its guarantee)); kept so
		// that children never get more than their parent in sum.
		copy(c.offer, c.alloc)
		c.split.split(share, kids, c.offer, c.alloc)
		sumBase = share
	}

	hungry := c.hungry[:0]
	for _, k := range kids {
		if c.weight[k] > 0 && c.alloc[k] < c.limit[k] {
			hungry = append(hungry, k)
		}
	}
	if share == Unlimited {
		// Nothing to ration: every queue that wants more gets all it may.
		for _, k := range hungry {
			c.alloc[k] = c.limit[k]
		}
		c.hungry = hungry
		return
	}

	// Surplus: offer what is left in proportion to weight; a queue takes
	// no more than it can use, and what it returns is offered again to the
	// others. Every round either hands out everything or fills at least
	// one queue, so it ends within len(kids) rounds.
	left := share - sumBase
	for left > 0 && len(hungry) > 0 {
		c.split.split(left, hungry, c.weight, c.offer)
		still := hungry[:0]
		for _, k := range hungry {
			take := min(c.offer[k], c.limit[k]-c.alloc[k])
			c.alloc[k] += take
			left -= take
			if c.alloc[k] < c.limit[k] {
				still = append(still, k)
			}
		}
		hungry = still
	}
	c.hungry = hungry
}

// record copies one resource's results into the output slabs. Resources
// are recorded in name order, so the limits come out sorted by name.
func (c *computer) record(id resources.ID) {
	w, k := c.width, len(c.ids)
	for i := range c.nodes {
		v := c.vecs[4*w*i:]
		v[id] = c.guar[i]
		v[w+int(id)] = c.conf[i]
		v[2*w+int(id)] = c.weight[i]
		v[3*w+int(id)] = c.demand[i]
		if m := c.max[i]; m != Unlimited {
			c.bounds[2*k*i+int(c.nbounds[2*i])] = resources.Bound{ID: id, Max: m}
			c.nbounds[2*i]++
		}
		if a := c.alloc[i]; a != Unlimited {
			c.bounds[2*k*i+k+int(c.nbounds[2*i+1])] = resources.Bound{ID: id, Max: a}
			c.nbounds[2*i+1]++
		}
	}
}

// table assembles the Table from the output slabs. Every slice is capped
// at its own length, so appending to one cannot overwrite a neighbour.
func (c *computer) table() *Table {
	n, w, k := len(c.nodes), c.width, len(c.ids)
	t := &Table{
		byPath: make(map[string]*Share, n),
		all:    make([]*Share, n),
	}
	vec := func(off int) resources.Vector {
		if w == 0 {
			return nil
		}
		return resources.Vector(c.vecs[off : off+w : off+w])
	}
	lim := func(off int, cnt int32) resources.Limit {
		if cnt == 0 {
			return nil
		}
		return resources.Limit(c.bounds[off : off+int(cnt) : off+int(cnt)])
	}
	for i := range c.nodes {
		s := &c.shares[i]
		s.Path = c.nodes[i].q.Path
		s.Guaranteed = vec(4 * w * i)
		s.Configured = vec(4*w*i + w)
		s.Weight = vec(4*w*i + 2*w)
		s.Demand = vec(4*w*i + 3*w)
		s.Max = lim(2*k*i, c.nbounds[2*i])
		s.Runtime = lim(2*k*i+k, c.nbounds[2*i+1])
		t.all[i] = s
	}
	slices.SortStableFunc(t.all, func(a, b *Share) int { return strings.Compare(a.Path, b.Path) })
	for _, s := range t.all {
		t.byPath[s.Path] = s
	}
	if len(c.scaled) > 0 {
		slices.SortStableFunc(c.scaled, func(a, b Scaling) int {
			if r := strings.Compare(a.Parent, b.Parent); r != 0 {
				return r
			}
			return strings.Compare(a.Resource.Name(), b.Resource.Name())
		})
		t.Scaled = c.scaled
	}
	return t
}
