package ugm

import (
	"errors"
	"testing"
)

// TestHandleAfterEnd: a handle reads its application only after some
// application ended on its user leaf (node.ends), and then finds out
// exactly whether its own still runs.
func TestHandleAfterEnd(t *testing.T) {
	const config = `
partitions:
- name: default
  queues:
  - name: root
    queues:
    - name: x
      limits:
      - limit: users
        users: ["*"]
        maxapplications: 1
`
	tests := []struct {
		name string
		// ends ends these applications of u in root.x after a1 started
		// and before a1 is checked through its handle; then starts.
		ends, starts []string
		// want: a1's check through its handle is refused for
		// maxapplications (a1 is new again), and the handle is resolved.
		refused, resolved bool
	}{
		{name: "nothing ended", resolved: true},
		{name: "a1 ended, a2 runs in its place", ends: []string{"a1"}, starts: []string{"a2"}, refused: true},
		{name: "a1 ended and started again", ends: []string{"a1"}, starts: []string{"a1"}, resolved: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := withConfig(t, config)
			v := res(t, "cpu", "1")
			a1 := req("u", nil, "root.x", "a1", v)
			var h1 Handle
			if err := m.IncreaseWith(a1, &h1); err != nil {
				t.Fatal(err)
			}
			for _, app := range tc.ends {
				if err := m.Decrease(req("u", nil, "root.x", app, v)); err != nil {
					t.Fatal(err)
				}
			}
			for _, app := range tc.starts {
				if err := m.Increase(req("u", nil, "root.x", app, v)); err != nil {
					t.Fatal(err)
				}
			}
			err := m.CheckWith(a1, &h1)
			var r *Refusal
			if refused := errors.As(err, &r) && r.Limit == LimitApplications; refused != tc.refused {
				t.Fatalf("check of a1 through its handle: %v, want refused for maxapplications %v", err, tc.refused)
			}
			m.mu.RLock()
			defer m.mu.RUnlock()
			if got := h1.valid(a1); got != tc.resolved {
				t.Fatalf("handle valid %v, want %v", got, tc.resolved)
			}
			if tc.resolved && h1.ends != h1.user.ends {
				t.Fatalf("handle noted %d ends, its leaf has %d: the next check reads the application again", h1.ends, h1.user.ends)
			}
		})
	}
}

// TestHandleSiblingEnd: the end of another application of the same user
// in the same leaf leaves the handle valid; it notes the end once.
func TestHandleSiblingEnd(t *testing.T) {
	m := withConfig(t, "partitions:\n- name: default\n  queues:\n  - name: root\n    queues:\n    - name: x\n")
	v := res(t, "cpu", "1")
	a1, a2 := req("u", nil, "root.x", "a1", v), req("u", nil, "root.x", "a2", v)
	var h1 Handle
	if err := m.IncreaseWith(a1, &h1); err != nil {
		t.Fatal(err)
	}
	if err := m.Increase(a2); err != nil {
		t.Fatal(err)
	}
	if err := m.Decrease(a2); err != nil {
		t.Fatal(err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if h1.ends == h1.user.ends {
		t.Fatal("a2's end did not count on the leaf its handle shares")
	}
	if !h1.valid(a1) {
		t.Fatal("a1 runs, its handle is not valid")
	}
	if h1.ends != h1.user.ends {
		t.Fatal("the handle did not note the end it checked")
	}
}
