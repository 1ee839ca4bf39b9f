package metrics

import (
	"slices"
	"sync/atomic"

	"k8s.io/component-base/metrics"
)

// counts is a counter vec of one label whose values are known, counted
// once or more a pod: each value's child is resolved at its first count
// after Register and kept, so a count is one atomic add. The vec's
// WithLabelValues hashes the value, reads the label allow list and takes
// the vec's lock at every call: about 3 µs a call when cold at the scale
// shape, on every charge and release (docs/throughput.md, open work 7).
// A value not listed is counted through the vec.
type counts struct {
	vec    *metrics.CounterVec
	values []string
	// children are the resolved children, by the index of their value;
	// nil until the first count after Register (before it the vec
	// returns a no-op that must not be kept).
	children []atomic.Pointer[child]
}

// child boxes a resolved counter for atomic.Pointer.
type child struct{ metrics.CounterMetric }

func newCounts(vec *metrics.CounterVec, values ...string) *counts {
	return &counts{vec: vec, values: values, children: make([]atomic.Pointer[child], len(values))}
}

// inc counts one at value.
func (c *counts) inc(value string) {
	i := slices.Index(c.values, value)
	if i < 0 {
		c.vec.WithLabelValues(value).Inc()
		return
	}
	if ch := c.children[i].Load(); ch != nil {
		ch.Inc()
		return
	}
	if !c.vec.IsCreated() {
		return
	}
	ch := &child{c.vec.WithLabelValues(value)}
	c.children[i].Store(ch)
	ch.Inc()
}

// reset removes every series and forgets the resolved children (which
// the vec no longer exports); for tests.
func (c *counts) reset() {
	c.vec.Reset()
	for i := range c.children {
		c.children[i].Store(nil)
	}
}
