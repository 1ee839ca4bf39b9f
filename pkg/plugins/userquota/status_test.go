package userquota

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

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

// TestStatusWritesGiveWayToBinding: while the scheduler binds pods (one
// reserved within bindingWindow), held pods' statuses are written one per
// busyEvery at most; once it stops binding, at once. A pod whose status
// says Unschedulable (the scheduler's refusal in a cycle) never waits.
func TestStatusWritesGiveWayToBinding(t *testing.T) {
	const every = 5 * time.Second
	type step struct {
		advance time.Duration
		binding bool // a pod reserved at this step
		written bool // the second status is written by then
	}
	for _, tc := range []struct {
		name    string
		binding bool // a pod reserved before the first write
		// unschedulable: the second pod's status says Unschedulable.
		unschedulable bool
		steps         []step
	}{
		{name: "not binding: written at once", steps: []step{{written: true}}},
		{name: "binding, the pod Unschedulable: written at once", binding: true, unschedulable: true, steps: []step{{written: true}}},
		{
			name:    "binding: the next write waits busyEvery",
			binding: true,
			steps: []step{
				{written: false},
				{advance: time.Second, binding: true},
				{advance: 2 * time.Second, binding: true},
				{advance: time.Second, binding: true},
				{advance: 900 * time.Millisecond, binding: true},
				{advance: 100 * time.Millisecond, binding: true, written: true},
			},
		},
		{
			name:    "binding stops: written a bindingWindow after the last reserve",
			binding: true,
			steps: []step{
				{advance: 500 * time.Millisecond, binding: true},
				{advance: 900 * time.Millisecond},
				{advance: 100 * time.Millisecond, written: true},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			first := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "first", UID: "uid-first"}}
			second := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "second", UID: "uid-second"}}
			if tc.unschedulable {
				second.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable}}
			}
			cs := fake.NewClientset(first, second)
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			for _, p := range []*v1.Pod{first, second} {
				if err := indexer.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			w := newStatusWriter(cs, corelisters.NewPodLister(indexer), &events.FakeRecorder{}, func() bool { return true })
			defer w.queue.ShutDown()
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
			w.clock, w.busyEvery = clk, every
			written := func(p *v1.Pod) bool {
				t.Helper()
				got, err := cs.CoreV1().Pods("ns").Get(ctx, p.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return heldCondition(got)
			}
			reason := errors.New(`user "alice" would exceed maxresources in root: cpu 2+1 > 2`)
			if tc.binding {
				w.binding()
			}
			w.held(first, hold.KindUser, reason)
			w.next(ctx, logger)
			if !written(first) {
				t.Fatal("the first status was not written")
			}
			w.held(second, hold.KindUser, reason)
			done := make(chan struct{})
			go func() {
				defer close(done)
				w.next(ctx, logger)
			}()
			var at time.Duration
			for i, s := range tc.steps {
				clk.Step(s.advance)
				at += s.advance
				if s.binding {
					w.binding()
				}
				if s.written {
					select {
					case <-done:
					case <-time.After(wait.ForeverTestTimeout):
						t.Fatalf("step %d (%v): the second status is not written", i, at)
					}
					if !written(second) {
						t.Fatalf("step %d (%v): the writer went on without writing the second status", i, at)
					}
					return
				}
				// Blocked on the clock, with nothing written.
				if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
					return clk.HasWaiters() || closed(done), nil
				}); err != nil {
					t.Fatal(err)
				}
				if closed(done) || written(second) {
					t.Fatalf("step %d (%v): the second status was written while the scheduler binds", i, at)
				}
			}
			t.Fatal("the steps end before the second status is written")
		})
	}
}

// TestReserveMarksBinding: a pod reserved makes the status writes give
// way (statusBusyQPS below statusQPS, the defaults); at or above
// statusQPS they never do.
func TestReserveMarksBinding(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      *Args
		wantEvery time.Duration
	}{
		{name: "defaults", wantEvery: time.Second},
		{name: "as fast as statusQPS: never", args: &Args{StatusQPS: 5, StatusBusyQPS: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{config: sandboxConfig, args: tc.args})
			if e.pl.status.busyEvery != tc.wantEvery {
				t.Fatalf("busyEvery %v, want %v", e.pl.status.busyEvery, tc.wantEvery)
			}
			pod := userPod("sue-1", "sue", "", "sandbox", "1")
			e.pending(pod)
			if e.pl.status.reserved.Load() != 0 {
				t.Fatal("binding before any Reserve")
			}
			if s := e.schedule(pod); !s.IsSuccess() {
				t.Fatalf("schedule: %v", s)
			}
			if got := e.pl.status.reserved.Load() != 0; got != (tc.wantEvery > 0) {
				t.Errorf("binding after Reserve: %v, want %v", got, tc.wantEvery > 0)
			}
		})
	}
}
