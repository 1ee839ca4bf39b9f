package metrics

import (
	"cmp"
	"slices"
	"strings"

	"k8s.io/component-base/metrics"
)

// family is a counter or gauge family a collector computes at scrape
// time, with the order the registry sorts its series in when it gathers
// them: by their label values, the labels taken by name.
type family struct {
	desc *metrics.Desc
	// gauge: the family's samples are gauges, else counters.
	gauge bool
	// names are the desc's labels; byName their indexes, by label name.
	names  []string
	byName []int
	// rank keeps a family's series together when they are sorted.
	rank int
}

// families counts the families made: each one's rank.
var families int

// newFamily makes a counter family.
func newFamily(name, help string, labels ...string) *family {
	byName := make([]int, len(labels))
	for i := range byName {
		byName[i] = i
	}
	slices.SortFunc(byName, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	families++
	return &family{desc: desc(name, help, labels...), names: labels, byName: byName, rank: families}
}

// newGauge makes a gauge family.
func newGauge(name, help string, labels ...string) *family {
	f := newFamily(name, help, labels...)
	f.gauge = true
	return f
}

// series is one sample of a family: its label values in the desc's order
// (as many as it has labels), held inline: one allocation for a scrape's.
type series struct {
	f      *family
	labels [maxLabels]string
	v      float64
}

// maxLabels is the most labels a family has.
const maxLabels = 5

// compare orders a and b of one family as the registry does.
func (a *series) compare(b *series) int {
	for _, i := range a.f.byName {
		if c := strings.Compare(a.labels[i], b.labels[i]); c != 0 {
			return c
		}
	}
	return 0
}

// batch is one scrape's series of a collector.
type batch []series

// add appends a sample of f with value v and label values labels (in the
// desc's order).
func (b *batch) add(f *family, v float64, labels ...string) {
	s := series{f: f, v: v}
	copy(s.labels[:], labels)
	*b = append(*b, s)
}

// send sends each family's series in the order the registry sorts them
// in: its sort then finds them sorted and passes over them once, where
// any other order costs it a full sort of tens of thousands of series at
// scale, with a pointer chase per label compared (BenchmarkScrape). Each
// label value's pair is made once per family (samples.go).
func (b batch) send(ch chan<- metrics.Metric) {
	slices.SortFunc(b, func(x, y series) int {
		if x.f != y.f {
			return cmp.Compare(x.f.rank, y.f.rank)
		}
		return x.compare(&y)
	})
	for len(b) > 0 {
		n := 1
		for n < len(b) && b[n].f == b[0].f {
			n++
		}
		s := newSamples(b[0].f, n)
		for i := range n {
			s.add(b[i].labels[:len(b[i].f.names)], b[i].v)
		}
		s.send(ch)
		b = b[n:]
	}
}
