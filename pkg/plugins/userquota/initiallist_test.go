package userquota

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/userquota/userquota/pkg/podmeta"
)

// recorder is a pod handler that writes down the events it gets, in order.
type recorder struct{ events []string }

func (r *recorder) add(obj interface{}) { r.events = append(r.events, "add "+obj.(*v1.Pod).Name) }
func (r *recorder) update(_, obj interface{}) {
	r.events = append(r.events, "update "+obj.(*v1.Pod).Name)
}
func (r *recorder) del(obj interface{}) { r.events = append(r.events, "delete "+obj.(*v1.Pod).Name) }

func recordedInitialList(r *recorder, listed func() bool) *initialList {
	l := newInitialList(r.add)
	l.listed = listed
	return l
}

func listPod(name, user, app string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		Labels:      map[string]string{podmeta.LabelAppID: app},
		Annotations: map[string]string{podmeta.AnnotationUserInfo: podmeta.UserInfo{User: user}.String()}}}
}

// TestInitialListOrdersByUserAndApp: the pass hands every initial pod over
// once, a user's pods adjacent and, within them, an application's; with
// more pods than one goroutine places too.
func TestInitialListOrdersByUserAndApp(t *testing.T) {
	for _, n := range []int{60, 3*placeChunk + 5} {
		t.Run(fmt.Sprintf("pods=%d", n), func(t *testing.T) {
			r := &recorder{}
			l := recordedInitialList(r, func() bool { return true })
			h := l.handler(r.update, r.del)
			userOf, appOf := map[string]string{}, map[string]string{}
			for i := 0; i < n; i++ {
				name := fmt.Sprintf("p%04d", i)
				user, app := fmt.Sprintf("u%d", i%5), fmt.Sprintf("app-%d", i%3)
				userOf["add "+name], appOf["add "+name] = user, user+"/"+app
				h.OnAdd(listPod(name, user, app), true)
			}
			if len(r.events) != 0 || l.synced() {
				t.Fatalf("before the pass: handled %d, synced %v; want nothing handled, not synced", len(r.events), l.synced())
			}
			l.flush()
			if !l.synced() {
				t.Fatal("not synced after the pass")
			}
			if len(r.events) != n {
				t.Fatalf("handled %d pods, want %d", len(r.events), n)
			}
			seen := map[string]bool{}
			for _, e := range r.events {
				if seen[e] {
					t.Fatalf("%s handled twice", e)
				}
				seen[e] = true
			}
			for what, of := range map[string]map[string]string{"user": userOf, "application": appOf} {
				done := map[string]bool{}
				for i, e := range r.events {
					if i > 0 && of[r.events[i-1]] != of[e] && done[of[e]] {
						t.Errorf("the pods of %s %s are not adjacent (at %s, place %d)", what, of[e], e, i)
						break
					}
					done[of[e]] = true
				}
			}
			l.flush()
			if len(r.events) != n {
				t.Errorf("a second flush handled %d more pods", len(r.events)-n)
			}
		})
	}
}

// TestInitialListEventsAfterList: an event that is not of the initial list
// hands the held pods over first, so none overtakes them; after the pass
// every event goes straight to the handler.
func TestInitialListEventsAfterList(t *testing.T) {
	a, b := listPod("a", "u1", "x"), listPod("b", "u2", "y")
	tests := []struct {
		name  string
		event func(h cache.ResourceEventHandler)
		last  string
	}{
		{"delete", func(h cache.ResourceEventHandler) { h.OnDelete(a) }, "delete a"},
		{"update", func(h cache.ResourceEventHandler) { h.OnUpdate(a, a) }, "update a"},
		{"add after the list", func(h cache.ResourceEventHandler) { h.OnAdd(listPod("c", "u3", "z"), false) }, "add c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			l := recordedInitialList(r, func() bool { return false })
			h := l.handler(r.update, r.del)
			h.OnAdd(a, true)
			h.OnAdd(b, true)
			tt.event(h)
			if len(r.events) != 3 || r.events[2] != tt.last {
				t.Fatalf("handled %v, want the two listed pods and then %q", r.events, tt.last)
			}
			if !l.synced() {
				t.Error("not synced after the held pods were handed over")
			}
			h.OnAdd(listPod("d", "u4", "w"), true)
			if got := r.events[len(r.events)-1]; len(r.events) != 4 || got != "add d" {
				t.Errorf("an add after the pass: handled %v, want it handled at once", r.events)
			}
		})
	}
}

// TestInitialListRun: run hands the list over once the informer has given
// all of it, and never when its context ends first.
func TestInitialListRun(t *testing.T) {
	var listed atomic.Bool
	var polls atomic.Int32
	r := &recorder{}
	l := recordedInitialList(r, func() bool { polls.Add(1); return listed.Load() })
	l.handler(r.update, r.del).OnAdd(listPod("a", "u1", "x"), true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { l.run(ctx); close(done) }()
	// run has looked twice and found the list not in yet.
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return polls.Load() >= 2, nil
	}); err != nil {
		t.Fatalf("run did not poll: %v", err)
	}
	if l.synced() || closed(l.syncedChan()) {
		t.Fatalf("synced (%v, channel closed %v) before the informer gave its whole list", l.synced(), closed(l.syncedChan()))
	}
	listed.Store(true)
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return l.synced(), nil
	}); err != nil {
		t.Fatalf("not synced after the list was in: %v", err)
	}
	<-done
	if !closed(l.syncedChan()) {
		t.Error("synced, but its channel is still open")
	}
	if len(r.events) != 1 {
		t.Errorf("handled %v, want the one listed pod", r.events)
	}

	l2 := recordedInitialList(&recorder{}, func() bool { return false })
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	l2.run(ctx2)
	if l2.synced() || closed(l2.syncedChan()) {
		t.Error("synced after run's context ended with the list not in")
	}
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
