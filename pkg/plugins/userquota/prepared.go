package userquota

import (
	v1 "k8s.io/api/core/v1"

	"github.com/userquota/userquota/pkg/placement"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/ugm"
)

// preparedPod is a pod's request read once for a later use: a bound
// pod's, read ahead of its charge by the initial list's pass (readAhead),
// off the goroutine that charges; or an admitted pod's, placed by
// PreEnqueue for its PreFilter (placed.go). It is used only when reading
// it again would give the same: the partition in force is the one it was
// placed against, and placement looked at no queue outside the config
// (charges and commits create those).
type preparedPod struct {
	req ugm.Request
	// ok: req was read; the pod is ours, bound, running and admissible
	// as a new pod (else the handler reads it again, and logs why).
	ok  bool
	cfg *queueconfig.Partition
	// queues is placement's view of ugm's queues, recording whether it
	// was asked.
	queues queuesSeen
}

// queuesSeen is a placement.Queues that records whether it was asked.
type queuesSeen struct {
	placement.Queues
	asked bool
}

// DynamicQueue implements placement.Queues.
func (q *queuesSeen) DynamicQueue(path string) (exists, leaf, draining bool) {
	q.asked = true
	if q.Queues == nil {
		return false, false, false
	}
	return q.Queues.DynamicQueue(path)
}

// preparePod reads into p the request onPod would charge for obj when it
// is a bound pod of ours that still runs; otherwise p stays not ok. It
// runs beside the pass's charges: it reads only the pod, the config in
// force and (recorded) ugm's queues.
func (pl *Plugin) preparePod(obj interface{}, p *preparedPod) {
	pod, ok := obj.(*v1.Pod)
	if !ok || !pl.ours(pod) || pod.Spec.NodeName == "" || pl.finished(pod) {
		return
	}
	pl.prepare(pod, p, pl.partition(), pl.queues())
}

// prepare reads pod's request into p against cfg and queues, recording
// what request needs to tell whether it still holds.
func (pl *Plugin) prepare(pod *v1.Pod, p *preparedPod, cfg *queueconfig.Partition, queues placement.Queues) (ugm.Request, error) {
	p.cfg = cfg
	p.queues.Queues = queues
	req, err := pl.podRequest(pod, cfg, &p.queues)
	p.req, p.ok = req, err == nil
	return req, err
}

// request is the prepared request when it is still what podRequest would
// give (nil p: none was prepared).
func (p *preparedPod) request(cfg *queueconfig.Partition) (ugm.Request, bool) {
	if p == nil || !p.ok || p.queues.asked || p.cfg != cfg {
		return ugm.Request{}, false
	}
	return p.req, true
}
