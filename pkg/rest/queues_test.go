package rest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// compact strips the layout of an indented JSON text.
func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("bad JSON in the test: %v", err)
	}
	return b.String()
}

// elasticQueuesJSON is the answer over elasticConfig with shares and
// pending, less what comes from the share table (guaranteedResource,
// maxResource, runtimeResource: see withShares), so that a change to the
// share computation does not break it. root.shared.tenants.t1 does not
// exist yet: it shows because the table has a share for it (its pod
// waits).
const elasticQueuesJSON = `{
  "queuename": "root", "status": "Active", "partition": "default",
  "pendingResource": {"cpu": 19000, "memory": 3221225472, "pods": 10},
  "allocatedResource": {"cpu": 5500, "memory": 4831838208, "pods": 4},
  "isLeaf": false, "isManaged": true,
  "children": [
    {
      "queuename": "root.default", "status": "Active", "partition": "default",
      "pendingResource": {"cpu": 8000, "pods": 4},
      "allocatedResource": {"cpu": 500, "memory": 536870912, "pods": 1},
      "isLeaf": true, "isManaged": true, "parent": "root", "runningApps": 1,
      "elastic": false
    },
    {
      "queuename": "root.shared", "status": "Active", "partition": "default",
      "pendingResource": {"cpu": 11000, "memory": 3221225472, "pods": 6},
      "allocatedResource": {"cpu": 5000, "memory": 4294967296, "pods": 3},
      "isLeaf": false, "isManaged": true,
      "properties": {"quota.sharing": "elastic"},
      "parent": "root",
      "children": [
        {
          "queuename": "root.shared.a", "status": "Active", "partition": "default",
          "pendingResource": {"cpu": 6000, "memory": 3221225472, "pods": 3},
          "allocatedResource": {"cpu": 2000, "memory": 2147483648, "pods": 2},
          "isLeaf": true, "isManaged": true, "parent": "root.shared",
          "maxRunningApps": 3, "runningApps": 1,
          "elastic": true
        },
        {
          "queuename": "root.shared.b", "status": "Active", "partition": "default",
          "pendingResource": {"cpu": 4000, "pods": 2},
          "allocatedResource": {"cpu": 3000, "memory": 2147483648, "pods": 1},
          "isLeaf": true, "isManaged": true,
          "properties": {"quota.weight": "cpu=1"},
          "parent": "root.shared", "runningApps": 1,
          "elastic": true
        },
        {
          "queuename": "root.shared.tenants", "status": "Active", "partition": "default",
          "pendingResource": {"cpu": 1000, "pods": 1},
          "isLeaf": false, "isManaged": true, "parent": "root.shared",
          "children": [
            {
              "queuename": "root.shared.tenants.t1", "status": "Active", "partition": "default",
              "pendingResource": {"cpu": 1000, "pods": 1},
              "isLeaf": true, "isManaged": false, "parent": "root.shared.tenants",
              "elastic": true
            }
          ],
          "childNames": ["root.shared.tenants.t1"],
          "elastic": true
        }
      ],
      "childNames": ["root.shared.a", "root.shared.b", "root.shared.tenants"],
      "runningApps": 2,
      "elastic": true
    }
  ],
  "childNames": ["root.default", "root.shared"],
  "runningApps": 3,
  "elastic": false
}`

// Without a share table: guaranteed and max as configured, absolute values
// only (shared's 50 % and b's 25 % cannot be resolved), no runtime share,
// and no queue that does not exist yet.
const plainQueuesJSON = `{
  "queuename": "root", "status": "Active", "partition": "default",
  "allocatedResource": {"cpu": 5500, "memory": 4831838208, "pods": 4},
  "isLeaf": false, "isManaged": true,
  "children": [
    {
      "queuename": "root.default", "status": "Active", "partition": "default",
      "guaranteedResource": {"cpu": 6000},
      "allocatedResource": {"cpu": 500, "memory": 536870912, "pods": 1},
      "isLeaf": true, "isManaged": true, "parent": "root", "runningApps": 1,
      "elastic": false
    },
    {
      "queuename": "root.shared", "status": "Active", "partition": "default",
      "allocatedResource": {"cpu": 5000, "memory": 4294967296, "pods": 3},
      "isLeaf": false, "isManaged": true,
      "properties": {"quota.sharing": "elastic"},
      "parent": "root",
      "children": [
        {
          "queuename": "root.shared.a", "status": "Active", "partition": "default",
          "maxResource": {"cpu": 10000},
          "guaranteedResource": {"cpu": 4000, "memory": 4294967296},
          "allocatedResource": {"cpu": 2000, "memory": 2147483648, "pods": 2},
          "isLeaf": true, "isManaged": true, "parent": "root.shared",
          "maxRunningApps": 3, "runningApps": 1,
          "elastic": true
        },
        {
          "queuename": "root.shared.b", "status": "Active", "partition": "default",
          "maxResource": {"cpu": 12000},
          "allocatedResource": {"cpu": 3000, "memory": 2147483648, "pods": 1},
          "isLeaf": true, "isManaged": true,
          "properties": {"quota.weight": "cpu=1"},
          "parent": "root.shared", "runningApps": 1,
          "elastic": true
        },
        {
          "queuename": "root.shared.tenants", "status": "Active", "partition": "default",
          "isLeaf": false, "isManaged": true, "parent": "root.shared",
          "elastic": true
        }
      ],
      "childNames": ["root.shared.a", "root.shared.b", "root.shared.tenants"],
      "runningApps": 2,
      "elastic": true
    }
  ],
  "childNames": ["root.default", "root.shared"],
  "runningApps": 3,
  "elastic": false
}`

// overlay decodes a JSON queue tree, calls fn on every queue (by path),
// and encodes it again.
func overlay(t *testing.T, tree string, fn func(path string, q map[string]any)) string {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal([]byte(tree), &root); err != nil {
		t.Fatal(err)
	}
	var walk func(q map[string]any)
	walk = func(q map[string]any) {
		fn(q["queuename"].(string), q)
		if cs, ok := q["children"].([]any); ok {
			for _, c := range cs {
				walk(c.(map[string]any))
			}
		}
	}
	walk(root)
	return mustJSON(t, root)
}

// withShares fills in guaranteedResource, maxResource and runtimeResource
// from the share table, as the endpoint documents them: the resolved
// guaranteed before scaling, the resolved max, the runtime share.
func withShares(t *testing.T, tree string, table *shares.Table) string {
	t.Helper()
	if table == nil {
		t.Fatal("no share table")
	}
	set := func(q map[string]any, key string, m map[string]int64) {
		if len(m) == 0 {
			delete(q, key)
			return
		}
		q[key] = m
	}
	return overlay(t, tree, func(path string, q map[string]any) {
		sh := table.Get(path)
		if sh == nil {
			t.Errorf("the share table has no %s", path)
			return
		}
		set(q, "guaranteedResource", sh.Configured.Map())
		set(q, "maxResource", sh.Max.Map())
		set(q, "runtimeResource", sh.Runtime.Map())
	})
}

// withPending adds pendingResource to plainQueuesJSON's queues: t1's
// pending counts in its ancestors, though t1 itself is not shown.
func withPending(t *testing.T) string {
	t.Helper()
	pending := map[string]map[string]any{
		"root":                {"cpu": 19000, "memory": 3221225472, "pods": 10},
		"root.default":        {"cpu": 8000, "pods": 4},
		"root.shared":         {"cpu": 11000, "memory": 3221225472, "pods": 6},
		"root.shared.a":       {"cpu": 6000, "memory": 3221225472, "pods": 3},
		"root.shared.b":       {"cpu": 4000, "pods": 2},
		"root.shared.tenants": {"cpu": 1000, "pods": 1},
	}
	return overlay(t, plainQueuesJSON, func(path string, q map[string]any) { q["pendingResource"] = pending[path] })
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameJSON compares two JSON texts as values (key order aside).
func sameJSON(t *testing.T, want, got string) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want: %v", err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("got: %v: %s", err, got)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("body (-want,+got):\n%s", diff)
	}
}

func TestQueuesEndpoint(t *testing.T) {
	const path = "/ws/v1/partition/default/queues"
	nilTable := func(o Options) Options {
		o.Shares = func() *shares.Table { return nil }
		return o
	}
	tests := []struct {
		name   string
		opts   func(t *testing.T) Options
		method string // default GET
		path   string // default path
		status int
		body   func(t *testing.T, o Options) string // compared as JSON values
		exact  func(t *testing.T) string            // compared byte for byte
	}{
		{name: "shares and pending", opts: func(t *testing.T) Options { return elasticOptions(t, true, true) }, status: 200,
			body: func(t *testing.T, o Options) string { return withShares(t, elasticQueuesJSON, o.Shares()) }},
		{name: "no share table, no pending", opts: func(t *testing.T) Options { return elasticOptions(t, false, false) }, status: 200,
			exact: func(t *testing.T) string { return compact(t, plainQueuesJSON) }},
		{name: "Shares set, no table computed yet", opts: func(t *testing.T) Options { return nilTable(elasticOptions(t, false, false)) }, status: 200,
			exact: func(t *testing.T) string { return compact(t, plainQueuesJSON) }},
		{name: "pending without shares", opts: func(t *testing.T) Options { return elasticOptions(t, false, true) }, status: 200,
			body: func(t *testing.T, _ Options) string { return withPending(t) }},
		{name: "HEAD", opts: func(t *testing.T) Options { return elasticOptions(t, true, true) }, method: http.MethodHead, status: 200},
		{name: "unknown partition", opts: func(t *testing.T) Options { return elasticOptions(t, true, true) },
			path: "/ws/v1/partition/gpu/queues", status: 404,
			exact: func(*testing.T) string {
				return errorJSON(404, `partition "gpu" not found`, `this scheduler enforces partition "default"`)
			}},
		{name: "bad partition name", opts: func(t *testing.T) Options { return elasticOptions(t, true, true) },
			path: "/ws/v1/partition/a%01b/queues", status: 400,
			exact: func(*testing.T) string {
				return errorJSON(400, "bad partition name: contains a control or invalid character", "bad partition name: contains a control or invalid character")
			}},
		{name: "a queue name after /queues", opts: func(t *testing.T) Options { return elasticOptions(t, true, true) },
			path: path + "/root.shared", status: 404,
			exact: func(*testing.T) string {
				return errorJSON(404, "no such endpoint: "+path+"/root.shared", "see docs/api.md for the endpoints")
			}},
		{name: "POST", opts: func(t *testing.T) Options { return elasticOptions(t, true, true) }, method: http.MethodPost, status: 405,
			exact: func(*testing.T) string {
				return errorJSON(405, "method POST not allowed", "the usage API is read-only: use GET")
			}},
		{name: "not the leader", opts: func(t *testing.T) Options {
			o := elasticOptions(t, true, true)
			o.Leader = func() (bool, string) { return false, "the Lease is held by host-b_1234" }
			return o
		}, status: 503,
			exact: func(*testing.T) string {
				return errorJSON(503, "not the leader",
					"this scheduler replica is not the leader; only the leader has the live usage: the Lease is held by host-b_1234")
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method, p := tc.method, tc.path
			if method == "" {
				method = http.MethodGet
			}
			if p == "" {
				p = path
			}
			o := tc.opts(t)
			status, body, header := get(t, NewHandler(o), method, p, nil)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if ct := header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if tc.status == 503 && header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if tc.exact != nil {
				if diff := cmp.Diff(tc.exact(t)+"\n", body); diff != "" {
					t.Errorf("body (-want,+got):\n%s", diff)
				}
			}
			if tc.body != nil {
				sameJSON(t, tc.body(t, o), body)
			}
		})
	}
}

// The values that do not depend on how the share computation splits the
// surplus: root's share, guaranteed and max are the capacity; percentages
// are resolved (shared's 50 % of the cluster's 20 cpu, b's 25 % of that);
// and the dynamic queue that does not exist yet has its child template's.
func TestQueuesShareValues(t *testing.T) {
	_, body, _ := get(t, NewHandler(elasticOptions(t, true, true)), "GET", "/ws/v1/partition/default/queues", nil)
	capacity := map[string]int64{"cpu": 20000, "memory": 64 << 30, "pods": 100}
	got := map[string]map[string]map[string]int64{}
	overlay(t, body, func(path string, q map[string]any) {
		got[path] = map[string]map[string]int64{}
		for _, k := range []string{"guaranteedResource", "maxResource", "runtimeResource"} {
			if m, ok := q[k].(map[string]any); ok {
				got[path][k] = map[string]int64{}
				for r, v := range m {
					got[path][k][r] = int64(v.(float64))
				}
			}
		}
	})
	checks := []struct {
		path, key, resource string
		want                int64
	}{
		{"root", "guaranteedResource", "cpu", capacity["cpu"]},
		{"root", "maxResource", "memory", capacity["memory"]},
		{"root", "runtimeResource", "pods", capacity["pods"]},
		{"root.default", "guaranteedResource", "cpu", 6000},
		{"root.shared", "guaranteedResource", "cpu", 10000},
		{"root.shared.a", "guaranteedResource", "memory", 4 << 30},
		{"root.shared.a", "maxResource", "cpu", 10000},
		{"root.shared.b", "guaranteedResource", "cpu", 2500},
		{"root.shared.b", "maxResource", "cpu", 12000},
		{"root.shared.tenants.t1", "guaranteedResource", "cpu", 1000},
		{"root.shared.tenants.t1", "maxResource", "cpu", 5000},
	}
	for _, c := range checks {
		if v, ok := got[c.path][c.key][c.resource]; !ok || v != c.want {
			t.Errorf("%s %s %s = %d (present %v), want %d", c.path, c.key, c.resource, v, ok, c.want)
		}
	}
	if _, ok := got["root.default"]["maxResource"]; ok {
		t.Error("root.default has no max, but maxResource is shown")
	}
}

// The answer decodes into PartitionQueue and reads like YuniKorn's:
// children sorted by path, every parent's pending the sum of its
// children's, and the runtime shares of siblings within their parent's.
func TestQueuesInvariants(t *testing.T) {
	_, body, _ := get(t, NewHandler(elasticOptions(t, true, true)), "GET", "/ws/v1/partition/default/queues", nil)
	var root PartitionQueue
	if err := json.Unmarshal([]byte(body), &root); err != nil {
		t.Fatal(err)
	}
	var check func(q PartitionQueue)
	check = func(q PartitionQueue) {
		if len(q.Children) != len(q.ChildNames) {
			t.Errorf("%s: %d children, %d childNames", q.QueueName, len(q.Children), len(q.ChildNames))
		}
		sum := map[string]int64{}
		runtime := map[string]int64{}
		for i, c := range q.Children {
			if c.Parent != q.QueueName || !strings.HasPrefix(c.QueueName, q.QueueName+".") || q.ChildNames[i] != c.QueueName {
				t.Errorf("%s: child %s, parent %q, childNames[%d] %q", q.QueueName, c.QueueName, c.Parent, i, q.ChildNames[i])
			}
			if i > 0 && q.Children[i-1].QueueName >= c.QueueName {
				t.Errorf("%s: children not sorted: %s before %s", q.QueueName, q.Children[i-1].QueueName, c.QueueName)
			}
			for k, v := range c.PendingResource {
				sum[k] += v
			}
			for k, v := range c.RuntimeResource {
				runtime[k] += v
			}
			check(c)
		}
		if len(q.Children) == 0 {
			return
		}
		if diff := cmp.Diff(sum, q.PendingResource); diff != "" {
			t.Errorf("%s: pending is not the sum of its children's (-children,+queue):\n%s", q.QueueName, diff)
		}
		for k, v := range runtime {
			if p, ok := q.RuntimeResource[k]; ok && v > p {
				t.Errorf("%s: children's %s shares add up to %d, over the queue's %d", q.QueueName, k, v, p)
			}
		}
	}
	check(root)
}

// A dynamic queue a placement rule created shows unmanaged, with its child
// template's max; a queue that left the config while in use shows
// Draining; with no config, only root is managed and nothing is elastic.
func TestQueuesDynamicAndDraining(t *testing.T) {
	m, _ := newManager(t, elasticConfig, []charge{{pod: "b1", user: "ann", queue: "root.shared.b", app: "etl", cpu: 1000}})
	// A placement rule that may create the queue asks for t1.
	if err := m.Increase(&ugm.Request{User: "tom", Queue: "root.shared.tenants.t1", App: ugm.AppKey{Namespace: "ns", ID: "job"},
		Resources: resources.FromMap(map[string]int64{"cpu": 500}), Create: true}); err != nil {
		t.Fatal(err)
	}
	// b leaves the config while its pod runs.
	cfg, err := queueconfig.Parse([]byte(strings.Replace(elasticConfig, `
      - name: b
        properties:
          quota.weight: cpu=1
        resources:
          guaranteed: {vcore: "25%"}
          max: {vcore: 12}`, "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	m.SetConfig(cfg.Partition("default"))
	_, body, _ := get(t, NewHandler(Options{Partition: "default", Usage: m, Config: func() *queueconfig.Config { return cfg }}),
		"GET", "/ws/v1/partition/default/queues", nil)
	var root PartitionQueue
	if err := json.Unmarshal([]byte(body), &root); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name, Status       string
		Leaf, Managed, Ela bool
		Max                map[string]int64
	}
	var got []row
	var walk func(q PartitionQueue)
	walk = func(q PartitionQueue) {
		got = append(got, row{q.QueueName, q.Status, q.IsLeaf, q.IsManaged, q.Elastic, q.MaxResource})
		for _, c := range q.Children {
			walk(c)
		}
	}
	walk(root)
	want := []row{
		{"root", "Active", false, true, false, nil},
		{"root.default", "Active", true, true, false, nil},
		{"root.shared", "Active", false, true, true, nil},
		{"root.shared.a", "Active", true, true, true, map[string]int64{"cpu": 10000}},
		{"root.shared.b", "Draining", true, false, false, nil},
		{"root.shared.tenants", "Active", false, true, true, nil},
		{"root.shared.tenants.t1", "Active", true, false, true, map[string]int64{"cpu": 5000}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("queues (-want,+got):\n%s", diff)
	}

	// No config: every queue is open, none managed but root.
	m2, _ := newManager(t, "", []charge{{pod: "p", user: "u", queue: "root.x.y", app: "a", cpu: 100}})
	_, body, _ = get(t, NewHandler(Options{Partition: "default", Usage: m2}), "GET", "/ws/v1/partition/default/queues", nil)
	want2 := `{"queuename":"root","status":"Active","partition":"default","allocatedResource":{"cpu":100,"pods":1},"isLeaf":false,"isManaged":true,` +
		`"children":[{"queuename":"root.x","status":"Active","partition":"default","allocatedResource":{"cpu":100,"pods":1},"isLeaf":false,"isManaged":false,"parent":"root",` +
		`"children":[{"queuename":"root.x.y","status":"Active","partition":"default","allocatedResource":{"cpu":100,"pods":1},"isLeaf":true,"isManaged":false,"parent":"root.x","runningApps":1,"elastic":false}],` +
		`"childNames":["root.x.y"],"runningApps":1,"elastic":false}],"childNames":["root.x"],"runningApps":1,"elastic":false}` + "\n"
	if diff := cmp.Diff(want2, body); diff != "" {
		t.Errorf("no config (-want,+got):\n%s", diff)
	}
}

// /ws/v1/config shows guaranteed and max written as percentages as
// written, beside the absolute values.
func TestConfigPercentages(t *testing.T) {
	_, body, _ := get(t, NewHandler(elasticOptions(t, false, false)), "GET", "/ws/v1/config", nil)
	for _, want := range []string{
		`{"name":"shared","queuePath":"root.shared","parent":true,"resources":{"guaranteed":{"cpu":"50%"}}`,
		`{"name":"b","queuePath":"root.shared.b","resources":{"guaranteed":{"cpu":"25%"},"max":{"cpu":"12"}}`,
		`{"name":"a","queuePath":"root.shared.a","resources":{"guaranteed":{"cpu":"4","memory":"4Gi"},"max":{"cpu":"10"}}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/ws/v1/config does not hold %s:\n%s", want, body)
		}
	}
	for pct, want := range map[int64]string{25000: "25%", 12500: "12.5%", 50500: "50.5%", 1: "0.001%", 100000: "100%"} {
		if got := withPercents(nil, map[resources.ID]int64{resources.Intern("cpu"): pct})["cpu"]; got != want {
			t.Errorf("%d: %q, want %q", pct, got, want)
		}
	}
}
