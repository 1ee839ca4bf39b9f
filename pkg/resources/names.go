package resources

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Well-known resource names, in Kubernetes spelling.
const (
	CPU    = "cpu"
	Memory = "memory"
	Pods   = "pods"
)

// ID is the interned index of a resource name. Hot paths compare and index
// by ID instead of hashing strings; the set of names a cluster uses is small
// and stable, so interning is process-wide and never shrinks.
type ID int32

// registry interns names. Readers load the current table without locking;
// writers copy it (new names are rare: once per resource kind per process).
var registry struct {
	mu    sync.Mutex // serialises writers
	table atomic.Pointer[nameTable]
}

type nameTable struct {
	ids   map[string]ID
	names []string
}

func init() {
	t := &nameTable{ids: map[string]ID{}}
	registry.table.Store(t)
	// Fixed order for the common names keeps their IDs small and stable.
	for _, n := range []string{CPU, Memory, Pods} {
		Intern(n)
	}
}

// CanonicalName maps YuniKorn's name for a resource to the Kubernetes one:
// "vcore" is YuniKorn's CPU and means Kubernetes "cpu".
func CanonicalName(name string) string {
	if name == "vcore" {
		return CPU
	}
	return name
}

// Intern returns the ID of name (after CanonicalName), assigning one if new.
func Intern(name string) ID {
	name = CanonicalName(name)
	if id, ok := registry.table.Load().ids[name]; ok {
		return id
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	old := registry.table.Load()
	if id, ok := old.ids[name]; ok {
		return id
	}
	t := &nameTable{ids: make(map[string]ID, len(old.ids)+1), names: make([]string, len(old.names), len(old.names)+1)}
	for k, v := range old.ids {
		t.ids[k] = v
	}
	copy(t.names, old.names)
	id := ID(len(t.names))
	t.ids[name] = id
	t.names = append(t.names, name)
	registry.table.Store(t)
	return id
}

// Name returns the resource name of id.
func (id ID) Name() string {
	names := registry.table.Load().names
	if int(id) < 0 || int(id) >= len(names) {
		return "unknown"
	}
	return names[id]
}

// String implements fmt.Stringer.
func (id ID) String() string { return id.Name() }

// sortIDsByName orders ids by their names, so output and "first violated
// resource" do not depend on the order names were interned in.
func sortIDsByName(ids []ID) {
	sort.Slice(ids, func(i, j int) bool { return ids[i].Name() < ids[j].Name() })
}
