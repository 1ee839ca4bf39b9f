package ugm

import (
	"fmt"
	"testing"
)

// Many goroutines increase and decrease the same users and groups, while
// others check and snapshot; totals must be exact at the end.
func TestConcurrentIncreaseDecrease(t *testing.T) {
	m := withConfig(t, limitsConfig)
	const workers, rounds = 8, 300
	one := res(t, "cpu", "1m", "pods", "1")
	parallel(workers, func(w int) {
		user := fmt.Sprintf("u%d", w%3)
		groups := []string{"development"}
		for i := 0; i < rounds; i++ {
			// Each worker's application keeps one pod running, so
			// trackers are created and removed as others come and go.
			r := req(user, groups, "root.default", fmt.Sprintf("w%d-%d", w, i%4), one)
			if err := m.Increase(r); err != nil {
				t.Error(err)
				return
			}
			_ = m.Check(req(user, groups, "root.a.leaf", "probe", one))
			if i%50 == 0 {
				_ = m.Users()
				_ = m.Groups()
			}
			if err := m.Decrease(r); err != nil {
				t.Error(err)
				return
			}
		}
		// Leave exactly one allocation per worker.
		if err := m.Increase(req(user, groups, "root.default", fmt.Sprintf("left%d", w), one)); err != nil {
			t.Error(err)
		}
	})
	q := m.Queues()
	if got := q.ResourceUsage.Get(0); got != workers {
		t.Fatalf("root cpu = %dm, want %dm", got, workers)
	}
	if len(q.RunningApplications) != workers {
		t.Fatalf("running apps = %d, want %d", len(q.RunningApplications), workers)
	}
	total := int64(0)
	for _, u := range m.Users() {
		total += u.Queues.ResourceUsage.Get(0)
	}
	if total != workers {
		t.Fatalf("sum of users = %d, want %d", total, workers)
	}
}
