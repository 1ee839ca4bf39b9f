package queueconfig

import (
	"errors"
	"testing"
	"unsafe"
)

// TestResolveQueue: names resolve to full paths, and a configured queue
// to the config's own string for it (so that maps keyed by path compare
// it by pointer).
func TestResolveQueue(t *testing.T) {
	p := mustParse(t, `
partitions:
- name: default
  queues:
  - name: root
    queues:
    - name: a
      queues:
      - name: x
    - name: b
      queues:
      - name: x
      - name: y
`).Partition("default")
	tests := []struct {
		name, want string
		configured bool
	}{
		{name: "root.a.x", want: "root.a.x", configured: true},
		{name: "ROOT.B.Y", want: "root.b.y", configured: true},
		{name: "a", want: "root.a", configured: true},
		{name: "y", want: "root.b.y", configured: true},
		{name: "root.c", want: "root.c"},
	}
	for _, tc := range tests {
		got, err := ResolveQueue(p, string([]byte(tc.name)))
		if err != nil || got != tc.want {
			t.Errorf("ResolveQueue(%q) = %q, %v; want %q", tc.name, got, err, tc.want)
			continue
		}
		if shared := unsafe.StringData(got) == unsafe.StringData(p.Queue(tc.want).pathOrEmpty()); shared != tc.configured {
			t.Errorf("ResolveQueue(%q) shares the config's string: %v, want %v", tc.name, shared, tc.configured)
		}
	}
	var re *ResolveError
	if _, err := ResolveQueue(p, "x"); !errors.As(err, &re) || len(re.Candidates) != 2 {
		t.Errorf("ResolveQueue(x) error = %v, want ambiguous", err)
	}
	if got, err := ResolveQueue(nil, "a"); err != nil || got != "root.a" {
		t.Errorf("ResolveQueue(nil, a) = %q, %v; want root.a", got, err)
	}
}

func (q *Queue) pathOrEmpty() string {
	if q == nil {
		return ""
	}
	return q.Path
}
