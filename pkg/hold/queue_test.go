package hold

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/ugm"
)

// TestQueueLine: a queue's line is the book's own let-in order (the order
// All tries every held pod) restricted to the queue, whatever holds each
// pod; pods of other queues and pods without a queue are not in it.
func TestQueueLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pods  []*Pod
		queue string
		order Order
		want  string
	}{
		{
			name: "priority, then the application's oldest pod (fifo), then age; any limit",
			pods: []*Pod{
				held("y-1", "sue", "root.a", "y", 0, 2, userLimit("sue")),
				held("x-2", "bob", "root.a", "x", 0, 3, queueMax("root.a", 1000)),
				held("x-1", "bob", "root.a", "x", 0, 1, userLimit("bob")),
				held("urgent", "ann", "root.a", "u", 10, 9, queueMax("root.a", 1000)),
				held("other", "sue", "root.b", "o", 0, 0, queueMax("root.b", 1000)),
				{Key: "lost", Reason: &ugm.QueueError{Queue: "root.a", Reason: "does not exist"}},
			},
			queue: "root.a",
			want:  "urgent x-1 x-2 y-1",
		},
		{
			name: "fair: the application using least first",
			pods: []*Pod{
				held("big-1", "sue", "root.fair", "big", 0, 1, userLimit("sue")),
				held("small-1", "bob", "root.fair", "small", 0, 2, userLimit("bob")),
				held("big-2", "sue", "root.fair", "big", 0, 3, queueMax("root.fair", 1000)),
			},
			queue: "root.fair",
			order: fairOrder{"big": 0.5, "small": 0.1},
			want:  "small-1 big-1 big-2",
		},
		{name: "a queue with nothing held", pods: []*Pod{held("p", "sue", "root.a", "x", 0, 0, userLimit("sue"))}, queue: "root.b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBook(0)
			for _, p := range tc.pods {
				b.Hold(p, t0)
			}
			got := b.Queue(tc.queue, tc.order)
			if diff := cmp.Diff(tc.want, keys(got)); diff != "" {
				t.Errorf("Queue (-want,+got):\n%s", diff)
			}
			// The same order as All's, restricted to the queue.
			var all []*Pod
			for _, p := range b.All(tc.order) {
				if p.Request != nil && p.Request.Queue == tc.queue {
					all = append(all, p)
				}
			}
			if diff := cmp.Diff(keys(all), keys(got)); diff != "" {
				t.Errorf("Queue differs from All's order (-all,+queue):\n%s", diff)
			}
		})
	}
}

func TestAhead(t *testing.T) {
	b := NewBook(0)
	for _, p := range []*Pod{
		held("first", "sue", "root.a", "x", 0, 1, userLimit("sue")),
		held("urgent", "sue", "root.b", "y", 10, 5, userLimit("sue")),
		held("me", "sue", "root.a", "z", 0, 3, userLimit("sue")),
		held("later", "sue", "root.a", "w", 0, 4, userLimit("sue")),
		held("bob", "bob", "root.a", "b", 0, 0, userLimit("bob")),
		held("queue", "ann", "root.a", "q", 0, 0, queueMax("root.a", 1000)),
	} {
		b.Hold(p, t0)
	}
	for _, tc := range []struct{ key, want string }{
		{"me", "urgent first"},
		{"first", "urgent"},
		{"urgent", ""},
		{"bob", ""},
		{"missing", ""},
	} {
		if diff := cmp.Diff(tc.want, keys(b.Ahead(tc.key, nil))); diff != "" {
			t.Errorf("Ahead(%s) (-want,+got):\n%s", tc.key, diff)
		}
	}
}

func TestQueueCounts(t *testing.T) {
	b := NewBook(0)
	for _, p := range []*Pod{
		held("a1", "sue", "root.a", "x", 0, 1, userLimit("sue")),
		held("a2", "bob", "root.a", "y", 0, 1, userLimit("bob")),
		held("b1", "sue", "root.b", "z", 0, 1, queueMax("root.b", 1000)),
		{Key: "lost", Reason: &ugm.QueueError{Queue: "root.x", Reason: "does not exist"}},
	} {
		b.Hold(p, t0)
	}
	if diff := cmp.Diff(map[string]int{"root.a": 2, "root.b": 1}, b.QueueCounts()); diff != "" {
		t.Errorf("QueueCounts (-want,+got):\n%s", diff)
	}
}
