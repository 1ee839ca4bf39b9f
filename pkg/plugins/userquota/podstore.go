package userquota

import (
	v1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// podStore is the scheduler's pod informer's store: its lister, and
// lookups by key for the paths that look up every held pod (a let-in, the
// start-up pass). The lister's Pods(namespace).Get makes a namespace
// lister and the key at each call: two allocations a pod, 100,000 in a
// start-up pass over 50,000 pods.
type podStore struct {
	corelisters.PodLister
	index cache.Indexer
}

func newPodStore(index cache.Indexer) podStore {
	return podStore{PodLister: corelisters.NewPodLister(index), index: index}
}

// byKey returns the pod of key (namespace/name), nil when the store has
// none.
func (s podStore) byKey(key string) *v1.Pod {
	obj, ok, err := s.index.GetByKey(key)
	if err != nil || !ok {
		return nil
	}
	pod, _ := obj.(*v1.Pod)
	return pod
}

// of returns the store's pod of pod's namespace and name (which may be
// another pod of that name: callers compare UIDs), nil when it has none.
func (s podStore) of(pod *v1.Pod) *v1.Pod {
	return s.byKey(pod.Namespace + "/" + pod.Name)
}
