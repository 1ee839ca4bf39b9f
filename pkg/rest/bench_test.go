package rest

import (
	"fmt"
	"net/http/httptest"
	"testing"
)

// benchManager tracks n users, each with one pod in one of 10 queues, and
// 20 groups.
func benchManager(b *testing.B, n int) Options {
	config := "partitions:\n- name: default\n  queues:\n  - name: root\n    limits:\n    - limit: all\n      users: [\"*\"]\n      maxresources: {vcore: 100}\n    queues:\n"
	for q := 0; q < 10; q++ {
		config += fmt.Sprintf("    - name: q%d\n", q)
	}
	t := &testing.T{}
	charges := make([]charge, n)
	for i := range charges {
		charges[i] = charge{pod: fmt.Sprint("p", i), user: fmt.Sprint("user-", i), groups: []string{fmt.Sprint("g", i%20)},
			queue: fmt.Sprint("root.q", i%10), app: fmt.Sprint("app-", i), cpu: 1000, memory: 1 << 30}
	}
	m, _ := newManager(t, config, charges)
	if t.Failed() {
		b.Fatal("building the manager failed")
	}
	return Options{Partition: "default", Usage: m}
}

// BenchmarkUsersSnapshot is what the users endpoint holds ugm's read lock
// for: the copy.
func BenchmarkUsersSnapshot(b *testing.B) {
	for _, n := range []int{100, 1000} {
		o := benchManager(b, n)
		b.Run(fmt.Sprint(n, " users"), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				o.Usage.Users()
			}
		})
	}
}

// BenchmarkUsersEndpoint is the whole request: copy, then JSON.
func BenchmarkUsersEndpoint(b *testing.B) {
	for _, n := range []int{100, 1000} {
		h := NewHandler(benchManager(b, n))
		b.Run(fmt.Sprint(n, " users"), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/ws/v1/partition/default/usage/users", nil))
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}
