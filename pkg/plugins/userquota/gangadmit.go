package userquota

import (
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// Gangs (docs/gangs.md): a gang's pods pass the queue's door only on a
// reservation of the gang's whole minimum (ugm.ReserveGang), which the
// first of them to fit makes; its other held pods are then let in to draw
// on it. Until it fits, all of them are held.

// enforcesGang reports whether pod is decided as a gang's pod: it
// carries a gang in one of the three forms and gangs are not ignored. It
// only looks, for the hot path.
func (pl *Plugin) enforcesGang(pod *v1.Pod) bool {
	_, ok := gang.FormOf(pod)
	return ok && !pl.args.IgnoreGangs
}

// gangMember reads the gang of pod (enforcesGang) given the decision on
// the pod alone: from its annotations (task groups) or its object. nil,
// nil: not a gang's pod after all (a Workload's pod group without a gang
// policy).
func (pl *Plugin) gangMember(pod *v1.Pod, d ugm.Decision) (*gang.Member, error) {
	if form, _ := gang.FormOf(pod); form == gang.FormTaskGroups {
		return gang.TaskGroupsMember(pod, podApp(pod).ID)
	}
	var req *ugm.Request
	if d.Placed {
		req = &d.Request
	}
	return pl.objectMember(pod, req)
}

// admitMember is admitPod for a pod of a gang (or whose gang cannot be
// read: gerr), given the decision on the pod alone: the gang's minimum is
// reserved or drawn on, the pod's own refusal aside.
func (pl *Plugin) admitMember(pod *v1.Pod, m *gang.Member, gerr error, d ugm.Decision) (*ugm.Request, error) {
	var req *ugm.Request
	if d.Placed {
		r := d.Request
		req = &r
	}
	var conflict *ugm.AppConflict
	switch {
	case gerr != nil:
		if m != nil {
			// Its object may come: it lets the gang's held pods in.
			pl.gangs.note(m, pod.UID)
			pl.gangs.holding(m.ID, pod.UID, true)
		}
		return req, gerr
	case !d.Placed, errors.As(d.Err, &conflict):
		return req, d.Err
	}
	uid := pod.UID
	phase, min := pl.gangs.note(m, uid)
	switch phase {
	case gang.Settled:
		if d.Err != nil {
			return req, d.Err
		}
		return req, pl.ugm.Admit(string(uid), req)
	case gang.Failed:
		return req, &gang.FailedError{Gang: m.ID, Timeout: min.Timeout}
	case gang.Reserved:
		_, err := pl.ugm.DrawGang(m.ID.String(), string(uid), req)
		if !errors.Is(err, ugm.ErrNoGang) {
			pl.gangs.holding(m.ID, uid, err != nil)
			return req, err
		}
		// The reservation went with a config change: reserve again.
		pl.gangs.lost(m.ID)
	}
	return pl.reserveGang(uid, m, min, req)
}

// reserveGang reserves m's gang for its minimum and draws req on it for
// the pod uid; the gang's other held pods are then let in to draw.
func (pl *Plugin) reserveGang(uid types.UID, m *gang.Member, min *gang.Min, req *ugm.Request) (*ugm.Request, error) {
	if min == nil {
		pl.gangs.holding(m.ID, uid, true)
		return req, &gang.Error{Gang: m.ID, What: "annotation " + gang.AnnotationTaskGroups, Reason: "no pod of the application defines its task groups yet"}
	}
	key := m.ID.String()
	g := *req
	g.Resources = min.Resources
	switch err := pl.ugm.ReserveGang(key, &g); {
	case err == nil:
		// Off the timer's goroutine (a fake clock fires under its lock).
		pl.gangs.reserved(m.ID, min.Timeout, func() { go pl.gangTimeout(key) })
		metrics.RecordGang(metrics.GangReserved)
		// Off the scheduling queue's lock (this may be PreEnqueue).
		go pl.letInGang(key)
	case errors.Is(err, ugm.ErrGangReserved):
		// Another of its pods reserved it meanwhile: draw.
	case errors.Is(err, ugm.ErrGangRuns):
		// Its minimum runs (found running at a restart, or run before a
		// timeout): its pods are ordinary pods.
		pl.gangs.end(key, false)
		pl.gangs.holding(m.ID, uid, false)
		go pl.letInGang(key)
		return req, pl.ugm.Admit(string(uid), req)
	default:
		pl.gangs.holding(m.ID, uid, true)
		if pl.gangs.waits(m.ID) {
			metrics.RecordGang(metrics.GangHeld)
		}
		return req, &gang.HeldError{Gang: m.ID, Min: *min, Err: err, Never: ugm.NeverFits(err, min.Resources)}
	}
	_, err := pl.ugm.DrawGang(key, string(uid), req)
	pl.gangs.holding(m.ID, uid, err != nil)
	if err != nil {
		return req, err
	}
	return nil, nil
}

// letInGang lets in the pods held waiting for the gang key.
func (pl *Plugin) letInGang(key string) {
	var cands []*hold.Pod
	for _, uid := range pl.gangs.heldPods(key) {
		if p := pl.held.get(uid); p != nil {
			cands = append(cands, p)
		}
	}
	if len(cands) > 0 {
		pl.letIn(klog.Background().WithName(Name), cands, false)
	}
}

// gangTimeout ends the gang key's reservation at its timeout. What is
// left goes back; if its minimum was not all drawn, a Hard gang fails
// (its held pods say so) and a Soft one's pods go on as ordinary pods.
func (pl *Plugin) gangTimeout(key string) {
	logger := klog.Background().WithName(Name)
	rel, ok := pl.ugm.ReleaseGang(key)
	short := ok && rel.Resources.Get(resources.Intern(resources.Pods)) > 0
	held, failed := pl.gangs.end(key, short)
	logger.V(2).Info("Gang reservation ended", "gang", key, "short", short, "failed", failed != nil, "held", len(held))
	switch {
	case failed != nil:
		metrics.RecordGang(metrics.GangFailed)
	case short:
		metrics.RecordGang(metrics.GangTimedOut)
	}
	if ok && !rel.Resources.IsZero() {
		pl.onRelease(logger, rel)
	}
	if failed == nil {
		pl.letInGang(key)
		return
	}
	for _, uid := range held {
		if p := pl.held.get(uid); p != nil {
			if pod := pl.current(p); pod != nil {
				pl.holdPod(logger, pod, p.Request, failed, false)
			}
		}
	}
}

// gangPodGone ends the reservation of a reserved gang whose last pod was
// deleted, and lets in what it held: a job deleted whole leaves nothing
// behind. Its pods running are pods too: a gang with a pod bound keeps
// its reservation (a Spark driver creates its executors after it runs).
func (pl *Plugin) gangPodGone(logger klog.Logger, uid types.UID) {
	if key, last := pl.gangs.gone(uid); last {
		pl.gangs.end(key, false)
		pl.releaseGang(logger, key, "its last pod was deleted")
	}
}

// releaseGang drops what the gang key's reservation still holds, for
// why, and lets it in to others.
func (pl *Plugin) releaseGang(logger klog.Logger, key, why string) {
	if rel, ok := pl.ugm.ReleaseGang(key); ok && !rel.Resources.IsZero() {
		logger.V(2).Info("Gang reservation released", "gang", key, "why", why)
		metrics.RecordGang(metrics.GangDeleted)
		pl.onRelease(logger, rel)
	}
}
