// Package shares computes the runtime share of every queue of an elastic
// queue tree: what each queue may use now, given the cluster's capacity,
// each queue's guaranteed and max, its sharing weight and its demand
// (docs/elastic.md). It is pure: no locks, no clocks, no Kubernetes types.
// The scheduler computes a Table off the hot path and publishes it; ugm
// reads it in the admission check.
package shares

import (
	"math"
	"slices"

	"github.com/userquota/userquota/pkg/resources"
)

// Unlimited is the amount of a resource nothing bounds (a max that is not
// set, a capacity the cluster does not report, or a percentage of those).
const Unlimited int64 = math.MaxInt64

// PercentScale is the unit of Amount.Percent: 25% is 25*PercentScale.
const PercentScale = 1000

// Amount is one resource's configured guaranteed or max: an absolute value
// in base units, or a percentage of the parent's resolved value of the same
// kind (guaranteed of guaranteed, max of max; under root: of the capacity).
type Amount struct {
	Value int64
	// Percent is in 1/PercentScale of a percent (1..100*PercentScale) when
	// the amount was written as a percentage; 0 for an absolute Value.
	Percent int64
}

// Amounts is a queue's configured guaranteed or max by resource. A resource
// it does not name reads as 0 in guaranteed and as Unlimited in max.
type Amounts map[resources.ID]Amount

// Queue is one queue of the input tree.
type Queue struct {
	// Path is the full dotted path ("root.a.b"); ties between siblings are
	// broken by it, so results never depend on the order of Children.
	Path     string
	Children []*Queue

	Guaranteed Amounts
	Max        Amounts
	// Weight is the sharing weight per resource. A resource it does not
	// name takes the default: the queue's resolved max when that is
	// limited, else its resolved guaranteed when above 0, else 1.
	Weight map[resources.ID]int64
	// NoLend is quota.lend: false: the queue keeps its whole guaranteed
	// share even when its demand is lower.
	NoLend bool

	// Demand of a leaf: its usage plus the requests of its pending pods.
	// Ignored for a queue with children: a parent's demand is the sum
	// over its children of min(child demand, child max).
	Demand resources.Vector
}

// Share is the result for one queue. Vectors are indexed by resource ID;
// a resource a Limit does not name is Unlimited.
type Share struct {
	Path string
	// Guaranteed is the resolved guaranteed after scaling down (see
	// Table.Scaled); Configured the resolved value before scaling.
	Guaranteed resources.Vector
	Configured resources.Vector
	// Max is the resolved max (resources without one are absent).
	Max resources.Limit
	// Weight is the effective sharing weight per resource considered.
	Weight resources.Vector
	// Demand: a leaf's input demand; a parent's computed demand.
	Demand resources.Vector
	// Runtime is the queue's share; absent resources are Unlimited (only
	// root, when the capacity does not bound a resource, or a queue whose
	// guaranteed is Unlimited and does not lend).
	Runtime resources.Limit
}

// Scaling records one parent whose children's guaranteed values added up
// to more than its share for a resource, so that they were scaled down in
// proportion for the computation.
type Scaling struct {
	Parent   string
	Resource resources.ID
	// Sum is the children's resolved guaranteed in sum; Share the parent's
	// share they had to fit in.
	Sum, Share int64
}

// Table is the computed shares of a whole tree. It is immutable once
// Compute returns it and safe to share between goroutines.
type Table struct {
	byPath map[string]*Share
	all    []*Share // sorted by path
	// Scaled lists every parent and resource whose children's guaranteed
	// were scaled down, sorted by parent path then resource name.
	Scaled []Scaling
}

// Get returns the share of the queue with the given path, or nil.
func (t *Table) Get(path string) *Share {
	if t == nil {
		return nil
	}
	return t.byPath[path]
}

// All returns every share, sorted by queue path. The caller must not
// modify it.
func (t *Table) All() []*Share {
	if t == nil {
		return nil
	}
	return t.all
}

// EachGuaranteed calls fn with each resource the queue's guaranteed names
// (before scaling: a resource it does not guarantee, such as the pods: 1 of
// every charge, or memory when only cpu is guaranteed, is left out) and its
// guaranteed share after scaling, until fn returns false. It reports
// whether any resource was named and whether fn held for all of them.
func (s *Share) EachGuaranteed(fn func(id resources.ID, guaranteed int64) bool) (named, all bool) {
	if s == nil {
		return false, true
	}
	for i, c := range s.Configured {
		if c <= 0 {
			continue
		}
		named = true
		if id := resources.ID(i); !fn(id, s.Guaranteed.Get(id)) {
			return true, false
		}
	}
	return named, true
}

// RuntimesDiffer reports whether any queue's runtime share differs
// between old (nil: none) and t: only then may a share change let in pods
// a share held.
func (t *Table) RuntimesDiffer(old *Table) bool {
	if old == nil || len(old.All()) != len(t.All()) {
		return true
	}
	for i, s := range t.All() {
		o := old.All()[i]
		if o.Path != s.Path || !slices.Equal(o.Runtime, s.Runtime) {
			return true
		}
	}
	return false
}

// WithinGuaranteed reports whether usage plus req keeps the queue within
// its guaranteed share in every resource its guaranteed names; a queue
// whose guaranteed names nothing is never within it. ugm exempts such a
// request from the share check; reclaim lets such a preemptor take back
// what its queue lent.
func (s *Share) WithinGuaranteed(usage, req resources.Vector) bool {
	named, all := s.EachGuaranteed(func(id resources.ID, g int64) bool { return usage.Get(id)+req.Get(id) <= g })
	return named && all
}
