package queueconfig

import (
	"fmt"
	"strings"
)

// ResolveError says why a queue name could not be resolved.
type ResolveError struct {
	Name string
	// Candidates lists the leaves an ambiguous name matches; empty when the
	// name matches nothing.
	Candidates []string
}

// Reason is the error without the name: "does not exist in the queue
// config" or "is ambiguous: root.a.x, root.b.x; use the full path".
func (e *ResolveError) Reason() string {
	if len(e.Candidates) == 0 {
		return "does not exist in the queue config"
	}
	return fmt.Sprintf("is ambiguous: %s; use the full path", strings.Join(e.Candidates, ", "))
}

func (e *ResolveError) Error() string { return fmt.Sprintf("queue %q %s", e.Name, e.Reason()) }

// ResolveQueue turns a queue name as a pod (or a simulator trace) gives it
// into a full path. Names are case-insensitive, as in YuniKorn. A path from
// root is kept as it is (whether it exists is for the caller to decide); a
// bare name is root.NAME when that queue exists, else the one leaf called
// NAME. With no partition (no config) a bare name becomes root.NAME. The
// scheduler plugin and the simulator both resolve through here.
//
// A configured queue comes back as the config's own string for its path
// (Queue.Path), not the pod's: the maps keyed by queue path downstream
// (ugm, the fair-share history, the books) then compare keys by pointer
// instead of byte by byte, and a charge holds no string of the pod's.
func ResolveQueue(p *Partition, name string) (string, error) {
	name = strings.ToLower(name)
	if name == "root" || strings.HasPrefix(name, "root.") {
		return p.Canonical(name), nil
	}
	if p == nil {
		return "root." + name, nil
	}
	if q := p.Queue("root." + name); q != nil {
		return q.Path, nil
	}
	var found []string
	p.Walk(func(q *Queue) {
		if q.Name == name && !q.IsParent {
			found = append(found, q.Path)
		}
	})
	if len(found) == 1 {
		return found[0], nil
	}
	return "", &ResolveError{Name: name, Candidates: found}
}
