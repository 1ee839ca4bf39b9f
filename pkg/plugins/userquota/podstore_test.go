package userquota

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestPodStore: lookups by key and by a pod's name find the store's pod,
// or nil, without an allocation by key (a let-in looks up every pod it
// tries), and the lister still lists.
func TestPodStore(t *testing.T) {
	index := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	stored := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
	if err := index.Add(stored); err != nil {
		t.Fatal(err)
	}
	s := newPodStore(index)
	for _, tc := range []struct {
		key  string
		want *v1.Pod
	}{
		{"ns/a", stored},
		{"ns/b", nil},
		{"other/a", nil},
		{"a", nil},
		{"", nil},
	} {
		if got := s.byKey(tc.key); got != tc.want {
			t.Errorf("byKey(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
	// A newer copy of the same pod, or another pod of its name: of finds
	// the stored one; callers compare UIDs.
	if got := s.of(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-other"}}); got != stored {
		t.Errorf("of(ns/a) = %v, want the stored pod", got)
	}
	if got := s.of(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone"}}); got != nil {
		t.Errorf("of(ns/gone) = %v, want nil", got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.byKey("ns/a") }); n != 0 {
		t.Errorf("byKey: %v allocations, want 0", n)
	}
	if got, err := s.Pods("ns").Get("a"); err != nil || got != stored {
		t.Errorf("the lister's Get(ns/a) = %v, %v", got, err)
	}
}
