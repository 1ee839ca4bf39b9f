package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics"
)

// samples are one scrape's samples of one family, made in three
// allocations for all of them and with each label value's pair made
// once. A const metric (metrics.NewLazyConstMetric) makes every label
// pair of every series anew and sorts them: about 20 allocations a
// series, most of a scrape's at scale, where the books' counters and the
// per-user gauges are tens of thousands of series (BenchmarkScrape).
type samples struct {
	// desc is the family's Prometheus desc; nil when the family is hidden.
	desc *prometheus.Desc
	// names are the family's label names, in its desc's order; byName
	// their indexes, by name (a series' pairs are sorted by name).
	names  []string
	byName []int
	// pairs holds each label value's pair, by label index.
	pairs []map[string]*dto.LabelPair
	all   []sample
	// labels is the backing array of every sample's label pairs.
	labels []*dto.LabelPair
	// counters or gauges back the samples' values, by the family's type.
	counters []dto.Counter
	gauges   []dto.Gauge
}

// newSamples makes room for n samples of f.
func newSamples(f *family, n int) *samples {
	s := &samples{names: f.names, byName: f.byName, pairs: make([]map[string]*dto.LabelPair, len(f.names))}
	// The registry's desc of the family, as a const metric has it; nil
	// when the family is hidden (as NewLazyConstMetric returns then).
	if m := metrics.NewLazyConstMetric(f.desc, metrics.CounterValue, 0, make([]string, len(f.names))...); m != nil {
		s.desc = m.Desc()
	}
	s.all = make([]sample, 0, n)
	s.labels = make([]*dto.LabelPair, 0, n*len(f.names))
	if f.gauge {
		s.gauges = make([]dto.Gauge, n)
	} else {
		s.counters = make([]dto.Counter, n)
	}
	return s
}

// add appends a sample of value v with the label values values, in the
// desc's order.
func (s *samples) add(values []string, v float64) {
	start := len(s.labels)
	for _, i := range s.byName {
		s.labels = append(s.labels, s.pair(i, values[i]))
	}
	x := sample{desc: s.desc, labels: s.labels[start:len(s.labels):len(s.labels)], value: v}
	if s.gauges != nil {
		x.gauge = &s.gauges[len(s.all)]
	} else {
		x.counter = &s.counters[len(s.all)]
	}
	s.all = append(s.all, x)
}

// pair returns the label pair of label i at value.
func (s *samples) pair(i int, value string) *dto.LabelPair {
	if s.pairs[i] == nil {
		s.pairs[i] = map[string]*dto.LabelPair{}
	}
	p, ok := s.pairs[i][value]
	if !ok {
		p = &dto.LabelPair{Name: &s.names[i], Value: &value}
		s.pairs[i][value] = p
	}
	return p
}

// send sends every sample to ch; none when the family is hidden.
func (s *samples) send(ch chan<- metrics.Metric) {
	if s.desc == nil {
		return
	}
	for i := range s.all {
		ch <- &s.all[i]
	}
}

// sample is a counter's or a gauge's value at a scrape, as a Prometheus
// metric. Its label pairs are shared with the scrape's other samples:
// read only.
type sample struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
	// One of counter and gauge is set: the family's type.
	counter *dto.Counter
	gauge   *dto.Gauge
}

func (s *sample) Desc() *prometheus.Desc { return s.desc }

func (s *sample) Write(m *dto.Metric) error {
	m.Label = s.labels
	if s.gauge != nil {
		s.gauge.Value = &s.value
		m.Gauge = s.gauge
		return nil
	}
	s.counter.Value = &s.value
	m.Counter = s.counter
	return nil
}
