package userquota

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	testingclock "k8s.io/utils/clock/testing"
)

// TestAwaitStartUp: PreEnqueue's wait at start-up ends when the start-up
// let-in has decided, or when the wait is over, counted once from the
// first waiter: a later PreEnqueue does not wait again. With no wait set
// it never waits.
func TestAwaitStartUp(t *testing.T) {
	waitFor := func(t *testing.T, what string, done <-chan struct{}) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still waiting after 10s", what)
		}
	}
	// waiting runs awaitStartUp on a goroutine and returns when it ends.
	waiting := func(h *holds) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			h.awaitStartUp()
			close(done)
		}()
		return done
	}
	// blocked reports whether done has not ended once c has a timer: the
	// waiter is then in its select, and only a decision or the clock can
	// end it.
	blocked := func(t *testing.T, c *testingclock.FakeClock, done <-chan struct{}) bool {
		t.Helper()
		err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { return c.HasWaiters() || closed(done), nil })
		if err != nil {
			t.Fatal("the waiter set no timer in 10s")
		}
		return !closed(done)
	}

	t.Run("no wait set", func(t *testing.T) {
		h := newHolds(testingclock.NewFakeClock(time.Now()), nil, 0)
		waitFor(t, "awaitStartUp without a wait", waiting(h))
	})
	// waitingTenSeconds is a waiter with a wait of 10s on a fake clock,
	// checked to be blocked.
	waitingTenSeconds := func(t *testing.T) (*testingclock.FakeClock, *holds, <-chan struct{}) {
		t.Helper()
		c := testingclock.NewFakeClock(time.Now())
		h := newHolds(c, nil, 0)
		h.waitAtStartUp(10 * time.Second)
		done := waiting(h)
		if !blocked(t, c, done) {
			t.Fatal("awaitStartUp returned before the start-up let-in decided or its wait was over")
		}
		return c, h, done
	}
	t.Run("the start-up let-in decided", func(t *testing.T) {
		_, h, done := waitingTenSeconds(t)
		h.startUpDecided()
		waitFor(t, "awaitStartUp after the decision", done)
		h.startUpDecided() // idempotent
		waitFor(t, "awaitStartUp once decided", waiting(h))
	})
	t.Run("the wait is over", func(t *testing.T) {
		c, h, done := waitingTenSeconds(t)
		c.Step(9 * time.Second)
		if !blocked(t, c, done) {
			t.Fatal("awaitStartUp returned 1s before its wait was over")
		}
		c.Step(time.Second)
		waitFor(t, "awaitStartUp at the end of its wait", done)
		// Counted once: the next PreEnqueue does not wait again.
		waitFor(t, "awaitStartUp after the wait was over", waiting(h))
	})
}

// TestSeenPendingIsNotQueued: the pods the pod handler saw waiting before
// start-up are decided by the start-up let-in; only those PreEnqueue held
// are in the scheduling queue's unschedulable pods, so only they are
// activated when let in.
func TestSeenPendingIsNotQueued(t *testing.T) {
	h := newHolds(testingclock.NewFakeClock(time.Now()), nil, 0)
	a, b := userPod("a", "sue", "", "default", "1"), userPod("b", "bob", "", "default", "1")
	h.seenPending(a)
	h.seenPending(b)
	if !h.starting(b) {
		t.Fatal("b not kept waiting before start-up")
	}
	pods, queued := h.started()
	if len(pods) != 2 || pods[0] != a || pods[1] != b {
		t.Errorf("started() = %d pods, want a and b in the order first seen", len(pods))
	}
	if queued["ns1/a"] || !queued["ns1/b"] {
		t.Errorf("queued = %v, want b alone (PreEnqueue held it)", queued)
	}
	h.seenPending(a)
	if p, _ := h.started(); len(p) != 0 {
		t.Errorf("a pod seen after start-up kept waiting: %d", len(p))
	}
}
