package userquota

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/userquota/userquota/pkg/ugm"
)

// maxPlacedPods bounds placedPods: past it, PreFilter places the pods
// admitted next again rather than the book growing.
const maxPlacedPods = 100_000

// placedPods keeps the request PreEnqueue placed for a pod it admitted
// (and the start-up let-in for the pods that waited, letInWaiting),
// so that the PreFilter that follows need not read the pod's resources
// and run placement again (6 µs a pod of PreFilter's 19-21 in
// `BenchmarkPodPath/.../cold`, docs/throughput.md). A request is used only for the same pod
// object (every update of a pod is a new object) under the same config,
// and only when placement asked nothing of ugm's queues
// (preparedPod.request); else PreFilter places the pod as before. Its
// lock is taken alone. A nil *placedPods keeps nothing.
type placedPods struct {
	mu    sync.Mutex
	byUID map[types.UID]placedPod
}

// placedPod is a pod object and the request placed for it.
type placedPod struct {
	pod *v1.Pod
	p   *preparedPod
}

func newPlacedPods() *placedPods { return &placedPods{byUID: map[types.UID]placedPod{}} }

// put keeps p, placed for pod, for pod's PreFilter; a pod's last
// placement replaces the one before.
func (s *placedPods) put(pod *v1.Pod, p *preparedPod) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byUID[pod.UID]; !ok && len(s.byUID) >= maxPlacedPods {
		return
	}
	s.byUID[pod.UID] = placedPod{pod: pod, p: p}
}

// take returns and forgets what was placed for pod, when it was placed
// for this very object (nil: nothing).
func (s *placedPods) take(pod *v1.Pod) *preparedPod {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byUID[pod.UID]
	if !ok {
		return nil
	}
	delete(s.byUID, pod.UID)
	if e.pod != pod {
		return nil
	}
	return e.p
}

// forget drops what was placed for the pod uid: it is bound, gone or
// holds no room.
func (s *placedPods) forget(uid types.UID) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byUID, uid)
}

// placing is the placer of an admission that records what it placed in p
// (preparePod's record: the config, and whether ugm's queues were asked).
func (pl *Plugin) placing(pod *v1.Pod, p *preparedPod) ugm.Placer {
	return func(in *ugm.InForce, queues ugm.Queues) (ugm.Request, error) {
		return pl.prepare(pod, p, in.Partition, queues)
	}
}

// placedFor is PreFilter's placer: the request PreEnqueue placed for pod
// when it still holds, else pod placed again.
func (pl *Plugin) placedFor(pod *v1.Pod) ugm.Placer {
	pre := pl.placed.take(pod)
	return func(in *ugm.InForce, queues ugm.Queues) (ugm.Request, error) {
		if req, ok := pre.request(in.Partition); ok {
			return req, nil
		}
		return pl.podRequest(pod, in.Partition, queues)
	}
}
