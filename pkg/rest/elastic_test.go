package rest

import (
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
)

// elasticConfig: root.shared shares elastically: its guaranteed is 50 % of
// the cluster, a's 4 cpu and 4Gi, b's 25 % of shared's guaranteed, and
// dynamic queues under root.shared.tenants get 1 cpu each. root.default
// has a guaranteed but is outside sharing.
var elasticConfig = queueconfigtest.Root(`
queues:
- name: default
  resources:
    guaranteed: {vcore: 6}
- name: shared
  properties:
    quota.sharing: elastic
  resources:
    guaranteed: {vcore: "50%"}
  queues:
  - name: a
    maxapplications: 3
    resources:
      guaranteed: {vcore: 4, memory: 4Gi}
      max: {vcore: 10}
  - name: b
    properties:
      quota.weight: cpu=1
    resources:
      guaranteed: {vcore: "25%"}
      max: {vcore: 12}
  - name: tenants
    parent: true
    childtemplate:
      resources:
        guaranteed: {vcore: 1}
        max: {vcore: 5}
`)

// elasticCharges: sue runs 2 cpu in root.shared.a, ann 3 in
// root.shared.b, bob 500m in root.default.
var elasticCharges = []charge{
	{pod: "a1", user: "sue", queue: "root.shared.a", app: "train", cpu: 1000, memory: 1 << 30},
	{pod: "a2", user: "sue", queue: "root.shared.a", app: "train", cpu: 1000, memory: 1 << 30},
	{pod: "b1", user: "ann", queue: "root.shared.b", app: "etl", cpu: 3000, memory: 2 << 30},
	{pod: "d1", user: "bob", queue: "root.default", app: "web", cpu: 500, memory: 512 << 20},
}

// elasticCapacity is the cluster: 20 cpu, 64Gi, 100 pods.
var elasticCapacity = resources.NewLimit(map[string]int64{"cpu": 20000, "memory": 64 << 30, "pods": 100})

// elasticPending are the pods waiting: 3 for a (2 cpu, 1Gi each), 2 for b
// (2 cpu each), 8 cpu for default, and one for a dynamic queue not created
// yet, root.shared.tenants.t1.
func elasticPending() map[string]resources.Vector {
	v := func(cpu, mem, pods int64) resources.Vector {
		return resources.FromMap(map[string]int64{"cpu": cpu, "memory": mem, "pods": pods})
	}
	return map[string]resources.Vector{
		"root.shared.a":          v(6000, 3<<30, 3),
		"root.shared.b":          v(4000, 0, 2),
		"root.default":           v(8000, 0, 4),
		"root.shared.tenants.t1": v(1000, 0, 1),
	}
}

// elasticOptions serves elasticConfig and elasticCharges; withShares
// computes the share table from elasticPending and elasticCapacity and
// puts it in force; withPending serves elasticPending.
func elasticOptions(t *testing.T, withShares, withPending bool) Options {
	t.Helper()
	m, cfg := newManager(t, elasticConfig, elasticCharges)
	o := Options{Partition: "default", Usage: m, Config: func() *queueconfig.Config { return cfg }}
	if withShares {
		m.SetShares(m.ComputeShares(elasticPending(), elasticCapacity))
		o.Shares = func() *shares.Table { return m.Shares() }
	}
	if withPending {
		o.Pending = elasticPending
	}
	return o
}
