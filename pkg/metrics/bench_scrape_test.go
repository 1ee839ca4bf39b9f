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
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// BenchmarkScrape is one GET of kube-scheduler's /metrics with the books
// of resource-seconds at the scale shape of docs/throughput.md: 10,000
// users in 20 groups, each group's users over 500 of 1,000 leaf queues,
// each running a pod (cpu, memory, pods), so the books keep about 11,000
// queue and (group, leaf queue) accounts. counters is the books' part
// under their lock (Books.Counters); scrape is the whole GET through
// the legacy registry's handler, text encoding included. It reports
// the body's bytes.
//
//	go test -run='^$' -bench=Scrape -benchmem ./pkg/metrics
func BenchmarkScrape(b *testing.B) {
	Register()
	bk := scaleBooks()
	defer SetAccounting(bk)()
	b.Run("counters", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bk.Counters()
		}
	})
	b.Run("scrape", func(b *testing.B) {
		b.ReportAllocs()
		var size int
		for b.Loop() {
			rec := httptest.NewRecorder()
			legacyregistry.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			size = rec.Body.Len()
			_, _ = io.Copy(io.Discard, rec.Body)
		}
		b.ReportMetric(float64(size), "bytes")
	})
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
