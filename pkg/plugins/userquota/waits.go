package userquota

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/estimate"
	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/ugm"
)

// accuracyKeep is how many recent estimate errors the plugin keeps,
// overall and per queue.
const accuracyKeep = 500

// waits is what the plugin keeps to say when a held pod is likely let in
// (explain.go): the completions it saw (pods that ended and gave their
// charge back) and how far the estimates it gave were off. Its lock
// guards both; it is taken under holds.mu (the let-in hook, onLetIn) and
// alone otherwise, and nothing is called while it is held.
type waits struct {
	clock clock.PassiveClock

	mu          sync.Mutex
	completions *estimate.Completions
	accuracy    *estimate.Accuracy
}

func newWaits(c clock.PassiveClock) *waits {
	return &waits{clock: c, completions: estimate.NewCompletions(estimate.DefaultCapacity, estimate.DefaultLookback),
		accuracy: estimate.NewAccuracy(accuracyKeep)}
}

// completed records a pod charged req, its application tracked against
// group, that ended (its charge released). A nil waits (a bare Plugin of
// a test) records nothing.
func (w *waits) completed(req *ugm.Request, group string) {
	if w == nil {
		return
	}
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.completions.Record(req, group, now)
}

// letIn closes the estimate given for the held pod key, let in now: the
// holds' let-in hook (called under holds.mu).
func (w *waits) letIn(key string) {
	if w == nil {
		return
	}
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.accuracy.LetIn(key, now)
}

// estimate estimates when the held pod key of queue is let in, held by
// the limit r where it needs own, with ahead held before it on that limit, and keeps the estimate to
// compare with its let-in (the first of its hold). It returns the
// accuracy measured so far for queue and over all queues.
func (w *waits) estimate(key, queue string, r *ugm.Refusal, own int64, ahead []*hold.Pod) (estimate.Estimate, estimate.Summary, estimate.Summary, time.Time) {
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	e := estimate.Of(r, own, ahead, w.completions, now)
	w.accuracy.Made(key, queue, e, now)
	return e, w.accuracy.Queue(queue), w.accuracy.All(), now
}
