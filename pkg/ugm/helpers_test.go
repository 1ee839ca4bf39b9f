package ugm

import (
	"sync"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
)

// withConfig is a new Manager enforcing the default partition of the
// config yaml.
func withConfig(t testing.TB, yaml string) *Manager {
	t.Helper()
	m := New()
	m.SetConfig(queueconfigtest.MustPartition(t, yaml))
	return m
}

// parallel runs fn(0) to fn(n-1) on n goroutines and waits for them all.
func parallel(n int, fn func(g int)) {
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(g)
		}()
	}
	wg.Wait()
}

// res builds a request vector from quantity strings, e.g. res("cpu", "1", "memory", "1Gi").
func res(t testing.TB, kv ...string) resources.Vector {
	t.Helper()
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	v, err := resources.Parse(m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func req(user string, groups []string, queue, app string, v resources.Vector) *Request {
	return &Request{User: user, Groups: groups, Queue: queue, App: AppKey{Namespace: "ns", ID: app}, Resources: v}
}

// mustGet returns the maximum l sets for id (0 when it sets none).
func mustGet(l resources.Limit, id resources.ID) int64 {
	v, _ := l.Get(id)
	return v
}
