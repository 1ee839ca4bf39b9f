package ugm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
)

// BenchmarkCheckShares is BenchmarkCheck's depth-4, 4-resource shape with
// quota.sharing: elastic on root and a share table in force, so every
// level of the path also reads its runtime share: the check-path cost of
// elastic quotas. "off" is the same tree without a table, side by side.
func BenchmarkCheckShares(b *testing.B) {
	for _, users := range []int{1, 10_000} {
		for _, on := range []bool{false, true} {
			s := newBenchRequests(b, users, 4, 4)
			cfg := strings.Replace(benchConfig(4, 4), "  - name: root\n", "  - name: root\n    properties: {quota.sharing: elastic}\n", 1)
			s.m.SetConfig(queueconfigtest.MustPartition(b, cfg))
			s.charge(b)
			if on {
				// Every leaf has pending demand far above its usage, so the
				// shares admit every check.
				big := resources.Vector{}
				for _, n := range benchResourceNames(4) {
					big.Set(resources.Intern(n), 1<<40)
				}
				pending := map[string]resources.Vector{}
				for i := 0; i < 10; i++ {
					pending[benchLeaf(4, i)] = big
				}
				s.m.SetShares(s.m.ComputeShares(pending, nil))
			}
			mode := map[bool]string{false: "off", true: "on"}[on]
			b.Run(fmt.Sprintf("users=%d/depth=4/res=4/shares=%s", users, mode), func(b *testing.B) {
				benchCheck(b, s, order(users, false))
			})
		}
	}
}

// BenchmarkComputeShares is the recompute as the scheduler runs it: the
// tree copied from ugm (1,000 leaves under 10 parents, 4 resources) and
// the shares computed.
func BenchmarkComputeShares(b *testing.B) {
	var y strings.Builder
	y.WriteString("partitions:\n- name: default\n  queues:\n  - name: root\n    properties: {quota.sharing: elastic}\n    queues:\n")
	pending := map[string]resources.Vector{}
	v := resources.Vector{}
	for _, n := range benchResourceNames(4) {
		v.Set(resources.Intern(n), 1000)
	}
	for p := 0; p < 10; p++ {
		fmt.Fprintf(&y, "    - name: p%d\n      queues:\n", p)
		for l := 0; l < 99; l++ {
			fmt.Fprintf(&y, "      - name: l%d\n        resources: {guaranteed: {cpu: 1, memory: 1Gi}}\n", l)
			pending[fmt.Sprintf("root.p%d.l%d", p, l)] = v
		}
	}
	m := withConfig(b, y.String())
	capacity := resources.NewLimit(map[string]int64{"cpu": 2_000_000, "memory": 1 << 42, "pods": 110_000, "ephemeral-storage": 1 << 45})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if t := m.ComputeShares(pending, capacity); len(t.All()) != 1001 {
			b.Fatalf("%d shares", len(t.All()))
		}
	}
}
