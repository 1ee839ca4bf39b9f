package userquota

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"

	"github.com/userquota/userquota/pkg/hold"
)

// A held pod's status is written once this replica leads, however its
// leadership moved between two looks: a write skipped while following
// (even between two looks that both saw it lead) is made at the next look
// that sees it lead.
func TestStatusWriterLeadership(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-p"}}
	cs := fake.NewClientset(pod)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(pod); err != nil {
		t.Fatal(err)
	}
	var leads atomic.Bool
	w := newStatusWriter(cs, corelisters.NewPodLister(indexer), &events.FakeRecorder{}, leads.Load)
	defer w.queue.ShutDown()

	held := func() bool {
		t.Helper()
		got, err := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return heldCondition(got)
	}
	drain := func() {
		t.Helper()
		for w.queue.Len() > 0 {
			w.next(context.Background(), logger)
		}
	}

	leads.Store(true)
	w.watchLeadership() // it led at this look
	leads.Store(false)
	w.held(pod, hold.KindUser, errors.New(`user "alice" would exceed maxresources in root: cpu 2+1 > 2`))
	drain()
	if held() {
		t.Fatal("a follower wrote the pod's status")
	}
	leads.Store(true)
	w.watchLeadership() // and leads at this one
	if w.queue.Len() != 1 {
		t.Fatalf("after leading again: %d statuses queued, want 1", w.queue.Len())
	}
	drain()
	if !held() {
		t.Fatal("the new leader did not write the held pod's status")
	}
}
