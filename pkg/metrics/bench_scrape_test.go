package metrics

import (
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/accounting"
	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// BenchmarkScrape is one GET of kube-scheduler's /metrics at the scale
// shape of docs/throughput.md, through the legacy registry's handler, text
// encoding included; it reports the body's bytes.
//
//   - books: the books of resource-seconds with 10,000 users in 20
//     groups, each group's users over 500 of 1,000 leaf queues, each
//     running a pod (cpu, memory, pods), so the books keep about 11,000
//     queue and (group, leaf queue) accounts; counters is the books' part
//     under their lock (Books.Counters).
//
//   - usage: the usage gauges of the scale shape's queue tree (1,000 leaf
//     queues under two tiers of parents, 10,000 users in 20 groups, a pod
//     each); usage-per-user adds the per-user and per-group series (the
//     perUserMetrics arg).
//
//     go test -run='^$' -bench=Scrape -benchmem ./pkg/metrics
func BenchmarkScrape(b *testing.B) {
	Register()
	bk := scaleBooks()
	m := scaleUsage(b)
	get := func(b *testing.B) {
		b.ReportAllocs()
		var size int
		for b.Loop() {
			rec := httptest.NewRecorder()
			legacyregistry.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			size = rec.Body.Len()
			_, _ = io.Copy(io.Discard, rec.Body)
		}
		b.ReportMetric(float64(size), "bytes")
	}
	b.Run("counters", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bk.Counters()
		}
	})
	b.Run("books", func(b *testing.B) {
		defer SetAccounting(bk)()
		get(b)
	})
	b.Run("usage", func(b *testing.B) {
		defer SetSource(&Source{Usage: m})()
		get(b)
	})
	b.Run("usage-per-user", func(b *testing.B) {
		defer SetSource(&Source{Usage: m, PerUser: true})()
		get(b)
	})
}

// scaleUsage is the usage of BenchmarkScrape's shape: the scale shape's
// queue tree with each user running one pod.
func scaleUsage(b *testing.B) *ugm.Manager {
	shape := queueconfigtest.Synthetic{Users: 10000, Queues: 1000, Groups: 20, Levels: 3}
	m := ugm.New()
	m.SetConfig(queueconfigtest.MustPartition(b, shape.Config(nil)))
	l := ledger.New(m)
	for u := range shape.Users {
		req := ugm.Request{User: shape.User(u), Groups: []string{shape.Group(u)}, Queue: shape.QueuePath(u),
			App:       ugm.AppKey{Namespace: "ns", ID: fmt.Sprintf("app-%05d", u)},
			Resources: resources.FromMap(map[string]int64{"cpu": 1000, "memory": 4 << 30, "pods": 1})}
		if err := l.Allocate(fmt.Sprintf("pod-%05d", u), req); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

// scaleBooks are the books of BenchmarkScrape's shape.
func scaleBooks() *accounting.Books {
	c := testingclock.NewFakeClock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	bk := accounting.New(c, accounting.Options{})
	for u := range 10000 {
		group := u / 500
		queue := (group*500 + u*7) % 1000
		bk.Charged(&ugm.Request{User: fmt.Sprintf("user-%05d", u), Groups: []string{fmt.Sprintf("group-%02d", group)},
			Queue: fmt.Sprintf("root.q%04d", queue), Resources: resources.FromMap(map[string]int64{"cpu": 1000, "memory": 4 << 30, "pods": 1})})
	}
	c.Step(time.Minute)
	return bk
}
