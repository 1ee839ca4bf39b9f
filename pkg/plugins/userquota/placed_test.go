package userquota

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/podmeta"
)

func TestPlacedPods(t *testing.T) {
	a := userPod("a", "sue", "", "sandbox", "1")
	a2 := a.DeepCopy() // the same pod, updated: another object
	p := &preparedPod{ok: true}
	tests := []struct {
		name string
		do   func(s *placedPods) *preparedPod
		want *preparedPod
		left int
	}{
		{"taken for its object", func(s *placedPods) *preparedPod { s.put(a, p); return s.take(a) }, p, 0},
		{"taken once", func(s *placedPods) *preparedPod { s.put(a, p); s.take(a); return s.take(a) }, nil, 0},
		{"not for another object of the pod, and gone", func(s *placedPods) *preparedPod { s.put(a, p); return s.take(a2) }, nil, 0},
		{"the last placement replaces", func(s *placedPods) *preparedPod { s.put(a, &preparedPod{}); s.put(a2, p); return s.take(a2) }, p, 0},
		{"forgotten", func(s *placedPods) *preparedPod { s.put(a, p); s.forget(a.UID); return s.take(a) }, nil, 0},
		{"others kept", func(s *placedPods) *preparedPod {
			s.put(userPod("b", "bob", "", "sandbox", "1"), p)
			s.put(a, p)
			return s.take(a)
		}, p, 1},
		{"bounded", func(s *placedPods) *preparedPod {
			for i := 0; i < maxPlacedPods; i++ {
				s.byUID[types.UID(fmt.Sprint(i))] = placedPod{}
			}
			s.put(a, p)
			return s.take(a)
		}, nil, maxPlacedPods},
	}
	t.Run("nil keeps nothing", func(t *testing.T) {
		var s *placedPods
		s.put(a, p)
		s.forget(a.UID)
		if got := s.take(a); got != nil || s.len() != 0 {
			t.Errorf("a nil book took %p and keeps %d", got, s.len())
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newPlacedPods()
			if got := tt.do(s); got != tt.want {
				t.Errorf("took %p, want %p", got, tt.want)
			}
			if got := s.len(); got != tt.left {
				t.Errorf("%d kept, want %d", got, tt.left)
			}
		})
	}
}

// TestPreFilterPlacesAgain: PreFilter charges what PreEnqueue placed only
// for the pod object and the config PreEnqueue saw; a pod changed since,
// or a config changed since, is placed again.
func TestPreFilterPlacesAgain(t *testing.T) {
	fixedOpen := strings.Replace(sandboxConfig, "  queues:\n", "  placementrules:\n  - name: fixed\n    value: root.open\n  queues:\n", 1)
	tests := []struct {
		name string
		pod  *v1.Pod
		// change, if set, runs between PreEnqueue and PreFilter and
		// returns the pod object PreFilter sees.
		change    func(e *env, pod *v1.Pod) *v1.Pod
		wantQueue string
		// reused: PreFilter took PreEnqueue's placement.
		reused bool
	}{
		{
			name:      "unchanged: PreEnqueue's placement",
			pod:       userPod("sue-1", "sue", "", "sandbox", "1"),
			wantQueue: "root.sandbox",
			reused:    true,
		},
		{
			name: "the pod changed: placed again",
			pod:  userPod("sue-1", "sue", "", "sandbox", "1"),
			change: func(_ *env, pod *v1.Pod) *v1.Pod {
				p := pod.DeepCopy()
				p.Labels[podmeta.LabelQueue] = "open"
				return p
			},
			wantQueue: "root.open",
		},
		{
			name: "the config changed: placed again",
			pod:  userPod("sue-1", "sue", "", "", "1"),
			change: func(e *env, pod *v1.Pod) *v1.Pod {
				e.setConfig(fixedOpen)
				e.waitConfig(fixedOpen)
				return pod
			},
			wantQueue: "root.open",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{config: sandboxConfig})
			e.pending(tt.pod)
			if s := e.pl.PreEnqueue(e.ctx, tt.pod); !s.IsSuccess() {
				t.Fatalf("PreEnqueue = %v, want let in", s)
			}
			if got := e.pl.placed.len(); got != 1 {
				t.Fatalf("%d placements kept after PreEnqueue, want 1", got)
			}
			pod := tt.pod
			if tt.change != nil {
				pod = tt.change(e, pod)
			}
			pre := e.pl.placed.take(pod)
			_, reused := pre.request(e.pl.partition())
			if reused != tt.reused {
				t.Errorf("PreFilter would reuse PreEnqueue's placement: %v, want %v", reused, tt.reused)
			}
			if pre != nil {
				e.pl.placed.put(pod, pre) // as it was, for the cycle below
			}
			state, s := e.preFilter(pod)
			if !s.IsSuccess() {
				t.Fatalf("PreFilter = %v, want success", s)
			}
			if got := e.pl.placed.len(); got != 0 {
				t.Errorf("%d placements kept after PreFilter, want 0", got)
			}
			if s := e.reserve(state, pod); !s.IsSuccess() {
				t.Fatalf("Reserve = %v, want success", s)
			}
			c, ok := e.pl.ledger.Get(string(pod.UID))
			if !ok || c.Request.Queue != tt.wantQueue {
				t.Errorf("charged in %q (charged: %v), want %q", c.Request.Queue, ok, tt.wantQueue)
			}
		})
	}
}

// len is how many pods have a placement kept.
func (s *placedPods) len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byUID)
}

// TestStartUpPlacementKept: the start-up let-in (letInWaiting) keeps the
// placement of each pod it admits for its PreFilter, as PreEnqueue does
// (the pods waiting at start-up are most of a restart's backlog), and
// none for a pod that stays held (it would be kept for as long as the
// pod waits, most often for a pod object its status write replaced).
func TestStartUpPlacementKept(t *testing.T) {
	e := newEnv(t, envOptions{config: sandboxConfig})
	// sue may run 2 cpu in sandbox: one of the two is let in.
	var waiting []*v1.Pod
	for _, pod := range []*v1.Pod{userPod("sue-1", "sue", "", "sandbox", "1"), userPod("sue-2", "sue", "", "sandbox", "2")} {
		e.pending(pod)
		cur, err := e.informers.Core().V1().Pods().Lister().Pods(pod.Namespace).Get(pod.Name)
		if err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, cur)
	}
	e.pl.letInWaiting(klog.FromContext(e.ctx), waiting, queuedAll(waiting))
	admitted := 0
	for _, cur := range waiting {
		pre := e.pl.placed.take(cur)
		if !e.pl.ugm.Admitted(string(cur.UID)) {
			if e.pl.held.get(cur.UID) == nil {
				t.Errorf("%s neither admitted nor held", cur.Name)
			}
			if pre != nil {
				t.Errorf("%s stays held, yet its start-up placement is kept", cur.Name)
			}
			continue
		}
		admitted++
		req, ok := pre.request(e.pl.partition())
		if !ok || req.Queue != "root.sandbox" {
			t.Errorf("%s: PreFilter would reuse the start-up placement: %v (queue %q), want it in root.sandbox", cur.Name, ok, req.Queue)
		}
	}
	if admitted != 1 {
		t.Errorf("%d pods admitted, want 1", admitted)
	}
}
