package rest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// charge is one pod of the test data.
type charge struct {
	pod, user string
	groups    []string
	queue     string
	app       string
	cpu       int64 // millicores
	memory    int64 // bytes
}

// testCharges put sue at her cpu limit in root.sandbox (2 of 2: 100 %),
// group dev at 2 of 3 cpu, and bob, with no group, in root.default.
var testCharges = []charge{
	{pod: "p1", user: "sue", groups: []string{"dev"}, queue: "root.sandbox", app: "train", cpu: 1000, memory: 1 << 30},
	{pod: "p2", user: "sue", groups: []string{"dev"}, queue: "root.sandbox", app: "train", cpu: 1000, memory: 1 << 30},
	{pod: "p3", user: "bob", queue: "root.default", app: "web", cpu: 500, memory: 512 << 20},
}

// newManager returns a ugm.Manager under config (unless it is
// ""), charged with charges through the ledger as the plugin charges pods.
func newManager(t *testing.T, config string, charges []charge) (*ugm.Manager, *queueconfig.Config) {
	t.Helper()
	m := ugm.New()
	var cfg *queueconfig.Config
	if config != "" {
		cfg = queueconfigtest.MustParse(t, config)
		m.SetConfig(cfg.Partition("default"))
	}
	l := ledger.New(m)
	for _, c := range charges {
		req := ugm.Request{
			User:      c.user,
			Groups:    c.groups,
			Queue:     c.queue,
			App:       ugm.AppKey{Namespace: "ns", ID: c.app},
			Resources: resources.FromMap(map[string]int64{"cpu": c.cpu, "memory": c.memory, "pods": 1}),
		}
		if err := l.Allocate(c.pod, req); err != nil {
			t.Fatalf("charging %s: %v", c.pod, err)
		}
	}
	return m, cfg
}

// testOptions are the options of a leading server over the test data.
func testOptions(t *testing.T) Options {
	m, cfg := newManager(t, queueconfigtest.Sandbox, testCharges)
	return Options{Partition: "default", Usage: m, Config: func() *queueconfig.Config { return cfg }}
}

// get serves one request with h and returns the status, the body and the
// headers.
func get(t *testing.T, h http.Handler, method, target string, header http.Header) (int, string, http.Header) {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body), res.Header
}
