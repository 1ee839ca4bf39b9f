package userquota

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// pendingPods are this scheduler's pods waiting for a node: their requests
// are the demand that elastic shares are computed from, beside usage.
// Scheduling-gated pods are not here, and a pod whose last refusal was a
// user or group limit does not count (it cannot use a share).
type pendingPods struct {
	mu   sync.Mutex
	pods map[types.UID]*pendingPod
}

type pendingPod struct {
	pod *v1.Pod
	// req is the pod's request, worked out at the first recompute that
	// needs it (placement included); nil until then or after a change.
	req *ugm.Request
	// bad: the pod cannot be placed (malformed, unknown queue): no demand.
	bad bool
	// userBound: its last refusal was a user or group limit.
	userBound bool
}

func newPendingPods() *pendingPods {
	return &pendingPods{pods: map[types.UID]*pendingPod{}}
}

// waiting reports whether pod is one of ours waiting to be scheduled.
func waiting(pod *v1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && len(pod.Spec.SchedulingGates) == 0 &&
		pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed
}

// update records or drops one of our pods; it reports whether the demand
// may have changed.
func (p *pendingPods) update(pod *v1.Pod) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	old, had := p.pods[pod.UID]
	if !waiting(pod) {
		delete(p.pods, pod.UID)
		return had
	}
	if had && old.pod.ResourceVersion == pod.ResourceVersion {
		return false
	}
	pp := &pendingPod{pod: pod}
	if had {
		pp.userBound = old.userBound
	}
	p.pods[pod.UID] = pp
	return true
}

func (p *pendingPods) remove(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, had := p.pods[uid]
	delete(p.pods, uid)
	return had
}

// setUserBound records whether the pod's last decision was a user or group
// refusal; it reports whether the demand changed.
func (p *pendingPods) setUserBound(uid types.UID, bound bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pp, ok := p.pods[uid]
	if !ok || pp.userBound == bound {
		return false
	}
	pp.userBound = bound
	return true
}

// invalidate forgets every worked-out request (a new config may place
// pods elsewhere).
func (p *pendingPods) invalidate() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pp := range p.pods {
		pp.req, pp.bad = nil, false
	}
}

// byQueue sums the demand by leaf queue path. request works out a pod's
// request (the plugin's podRequest with the config in force); charged
// tells a pod that is reserved but not bound yet, which usage already
// holds.
func (p *pendingPods) byQueue(request func(*v1.Pod) (ugm.Request, error), charged func(types.UID) bool) map[string]resources.Vector {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]resources.Vector{}
	for uid, pp := range p.pods {
		if pp.userBound || pp.bad || charged(uid) {
			continue
		}
		if pp.req == nil {
			req, err := request(pp.pod)
			if err != nil {
				pp.bad = true
				continue
			}
			pp.req = &req
		}
		v := out[pp.req.Queue]
		if v.CanAdd(pp.req.Resources) {
			v.AddUnchecked(pp.req.Resources)
		}
		out[pp.req.Queue] = v
	}
	return out
}
