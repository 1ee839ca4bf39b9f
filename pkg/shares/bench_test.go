package shares

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/userquota/userquota/pkg/resources"
)

// benchTree is root -> 10 parents -> 99 leaves each (1,001 queues) over
// cpu, memory, pods and nvidia.com/gpu, with guarantees that overcommit the
// capacity in places so that scaling and several surplus rounds happen.
func benchTree() (*Queue, resources.Limit) {
	rng := rand.New(rand.NewSource(42))
	gpu := resources.Intern("nvidia.com/gpu")
	pods := resources.Intern(resources.Pods)
	ids := []resources.ID{cpu, memory, pods, gpu}
	scale := map[resources.ID]int64{cpu: 1000, memory: 4 << 30, pods: 10, gpu: 1}
	capacity := resources.NewLimit(map[string]int64{
		"cpu": 1000 * 2000, "memory": 4 << 40, "pods": 10000, "nvidia.com/gpu": 500,
	})
	root := &Queue{Path: "root"}
	for p := 0; p < 10; p++ {
		parent := &Queue{Path: fmt.Sprintf("root.p%02d", p), Guaranteed: Amounts{}, Max: Amounts{}}
		for _, id := range ids {
			parent.Guaranteed[id] = pct(8 * PercentScale)
			parent.Max[id] = pct(40 * PercentScale)
		}
		for l := 0; l < 99; l++ {
			leaf := &Queue{Path: fmt.Sprintf("%s.l%02d", parent.Path, l), Guaranteed: Amounts{}, Max: Amounts{}, NoLend: l%17 == 0}
			for _, id := range ids {
				leaf.Guaranteed[id] = abs(rng.Int63n(3 * scale[id]))
				if rng.Intn(2) == 0 {
					leaf.Max[id] = abs(scale[id] * (1 + rng.Int63n(20)))
				}
				leaf.Demand.Set(id, rng.Int63n(15*scale[id]))
			}
			parent.Children = append(parent.Children, leaf)
		}
		root.Children = append(root.Children, parent)
	}
	return root, capacity
}

func BenchmarkCompute(b *testing.B) {
	root, capacity := benchTree()
	if n := len(Compute(root, capacity).All()); n != 1001 {
		b.Fatalf("%d queues", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Compute(root, capacity)
	}
}

// TestBenchTreeInvariants keeps the benchmark's tree honest: it must pass
// the same invariants as the random trees.
func TestBenchTreeInvariants(t *testing.T) {
	root, capacity := benchTree()
	tab := Compute(root, capacity)
	checkInvariants(t, root, capacity, tab)
	if len(tab.Scaled) == 0 {
		t.Errorf("benchmark tree scales nothing; it should exercise scaling")
	}
}
