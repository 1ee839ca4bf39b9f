package userquota

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/errs"
	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/ugm"
)

// Hold and let in (docs/design.md): a pod its quota cannot take now is
// held out of the active queue; when room frees, the held pods it may
// admit are let in, in their queue's order, each with room held for it
// (an admission) so that a burst is let in only as far as the limits go.

// podPriority is the pod's priority as the scheduler reads it.
func podPriority(pod *v1.Pod) int32 { return corev1helpers.PodPriority(pod) }

// admitPod decides whether pod may pass the queue's door now. nil: it
// holds room (ugm.Admit), or goes through the cycle without room because
// only reclaim can make room for it (PostFilter); else the reason it is
// held, with its request when it could be placed. placed is the pod's
// request as placed under the config in force, when known (a held pod
// after a release: only a config change moves a pod); nil places it.
func (pl *Plugin) admitPod(pod *v1.Pod, placed *ugm.Request) (*ugm.Request, error) {
	key := string(pod.UID)
	if pl.ugm.Admitted(key) {
		return nil, nil
	}
	// What PreEnqueue places is kept for the pod's PreFilter (placed.go).
	var prep *preparedPod
	var place ugm.Placer
	if placed != nil {
		req := *placed
		place = func(*ugm.InForce, ugm.Queues) (ugm.Request, error) { return req, nil }
	} else {
		prep = &preparedPod{}
		place = pl.placing(pod, prep)
	}
	d := pl.ugm.Decide(key, place, true)
	if pl.enforcesGang(pod) {
		if m, err := pl.gangMember(pod, d); m != nil || err != nil {
			req, err := pl.admitMember(pod, m, err, d)
			if err == nil {
				pl.dropIfRunning(pod)
			}
			return req, err
		}
	}
	switch {
	case d.Err != nil && (len(d.Blocked) > 0 || len(d.TreeNeeds) > 0):
		// Within its own queue's share; queues above it lent their room
		// out, or quota tree nodes lent theirs to borrowers below them:
		// the PostFilter may take it back (docs/reclaim.md, forests.md).
		return nil, nil
	case d.Err != nil && !d.Placed:
		return nil, d.Err
	}
	// The request on its own: a pod that stays held keeps it for as long
	// as it waits, and a pointer into d would keep the whole decision
	// (half as much again, 40,000 times over in a backlog).
	req := d.Request
	if d.Err != nil {
		return &req, d.Err
	}
	if s := pl.held.barrier(pod, &req, d.Group); s != nil {
		return &req, &hold.BehindError{Pod: s}
	}
	if err := pl.ugm.Admit(key, &req); err != nil {
		// Another pod took the room since the decision.
		return &req, err
	}
	if prep != nil && prep.ok {
		pl.placed.put(pod, prep)
	}
	pl.dropIfRunning(pod)
	return nil, nil
}

// dropIfRunning drops the room just admitted for pod when the informer
// has it bound: the decision was on a stale copy (a let-in or the queue's
// PreEnqueue racing the binding's update), and the binding's charge may
// have come first, finding no room to take over. The store is updated
// before any handler is told, so either this sees the pod bound, or its
// charge comes after the admission and takes the room over.
func (pl *Plugin) dropIfRunning(pod *v1.Pod) {
	if p := pl.pods.of(pod); p != nil && p.UID == pod.UID && p.Spec.NodeName != "" {
		pl.ugm.DropRunning(string(pod.UID))
	}
}

// gone reports whether the pod is no longer in the scheduler's informer
// (the store is updated before any handler is told).
func (pl *Plugin) gone(pod *v1.Pod) bool {
	p := pl.pods.of(pod)
	return p == nil || p.UID != pod.UID
}

// goneOrBound reports whether the informer's store has pod no more, or
// has it bound: a hold booked from an older copy of it (the scheduling
// queue's handler runs behind ours, by seconds after a freeze) would stay
// in the book, a starvation barrier to other pods, until its next event.
// The store is updated before any handler is told, so a pod found
// pending here has its bind or delete handled after it was booked.
func (pl *Plugin) goneOrBound(pod *v1.Pod) bool {
	p := pl.pods.of(pod)
	return p == nil || p.UID != pod.UID || p.Spec.NodeName != ""
}

// holdPod records pod as held for reason (req: its request, nil when it
// could not be placed), and asks for its status to say so when what holds
// it changed. inCycle: refused in a scheduling cycle (PreFilter). When a
// starving pod is held by another limit than before, the pods held
// behind it are tried again (off the caller's locks): the room they left
// it may not be the room it needs now.
func (pl *Plugin) holdPod(logger klog.Logger, pod *v1.Pod, req *ugm.Request, reason error, inCycle bool) {
	p := &hold.Pod{Key: string(pod.UID), Name: pod.Namespace + "/" + pod.Name, Request: req, Reason: reason,
		Priority: podPriority(pod), Created: pod.CreationTimestamp.Time}
	old := pl.held.hold(p, inCycle)
	kind := hold.KindOf(reason)
	if old == nil || hold.KindOf(old.Reason) != kind || !hold.SameLimit(old.Reason, reason) {
		metrics.RecordHold(string(kind))
		pl.status.held(pod, kind, reason)
		if old != nil && pl.held.hasBehind(p.Key) {
			go pl.openBehind(logger, p.Key)
		}
	}
}

// letIn tries the held pods cands in order: each that fits now gets room
// and goes to the active queue; one that does not stays held (with its
// new reason) without blocking those behind it. replace: place each again
// (a config change); else the request it was held with stands. The pods
// let in go to the active queue in the order they were first held, the
// queue's own order (holds.send).
func (pl *Plugin) letIn(logger klog.Logger, cands []*hold.Pod, replace bool) {
	in, opened := pl.decideLetIn(logger, cands, replace)
	pl.sendLetIn(logger, in, opened)
}

// decideLetIn is letIn's decisions: the pods let in (room held, off the
// book) and the held pods among them that others may wait behind.
func (pl *Plugin) decideLetIn(logger klog.Logger, cands []*hold.Pod, replace bool) (in []letInPod, opened []*hold.Pod) {
	sieve := hold.Sieve{}
	for _, c := range cands {
		if !replace && sieve.Skip(c.Reason) {
			continue
		}
		pod := pl.current(c)
		if pod == nil {
			continue
		}
		placed := c.Request
		if replace {
			placed = nil
		}
		req, reason := pl.admitPod(pod, placed)
		if reason != nil {
			sieve.Refused(reason)
			if pl.held.get(pod.UID) != nil {
				pl.holdPod(logger, pod, req, reason, false)
			}
			if v := logger.V(5); v.Enabled() {
				v.Info("Held pod stays held", "pod", klog.KObj(pod), "reason", reason.Error())
			}
			continue
		}
		if v := logger.V(5); v.Enabled() {
			v.Info("Held pod admitted", "pod", klog.KObj(pod))
		}
		entry := pl.held.letIn(pod.UID)
		if entry == nil {
			// Gone meanwhile (its delete may have been handled before the
			// admission), or let in by PreEnqueue: the room goes with it;
			// PreFilter decides without it.
			pl.dropRoom(logger, pod.UID)
			continue
		}
		in = append(in, letInPod{seq: entry.Seq, pod: pod})
		metrics.RecordLetIn()
		pl.status.admitted(pod)
		if hold.KindOf(c.Reason) != hold.KindBehind {
			opened = append(opened, c)
		}
	}
	return in, opened
}

// sendLetIn activates the pods decideLetIn let in, in the order they
// were first held, then tries the pods held behind the opened ones.
func (pl *Plugin) sendLetIn(logger klog.Logger, in []letInPod, opened []*hold.Pod) {
	pl.held.send(logger, sentInOrder(in))
	for _, c := range opened {
		pl.openBehind(logger, c.Key)
	}
}

// openBehind lets in what fits of the pods held behind the pod key (the
// starvation barrier), which was let in or is gone: no room is kept for
// it any more. Not under the scheduling queue's lock (Activate takes it).
func (pl *Plugin) openBehind(logger klog.Logger, key string) {
	if behind := pl.held.behind(key, queueOrder{pl.ugm}); len(behind) > 0 {
		pl.letIn(logger, behind, false)
	}
}

// letInPod is a pod let in and its place in the hold book (hold.Pod.Seq).
type letInPod struct {
	seq uint64
	pod *v1.Pod
}

// sentInOrder returns the pods let in, in the order they were first held:
// the order the scheduling queue took them in, as near as the book knows
// (a pod held at PreEnqueue is held as the queue takes it; the start-up
// let-in books the pods that waited in the queue's order).
func sentInOrder(in []letInPod) []*v1.Pod {
	slices.SortFunc(in, func(a, b letInPod) int { return cmp.Compare(a.seq, b.seq) })
	pods := make([]*v1.Pod, len(in))
	for i, p := range in {
		pods[i] = p.pod
	}
	return pods
}

// current returns the informer's object for a held pod, or nil when the
// pod is gone (its delete is on its way to forgetPod). The book keeps no
// object of its own: the status patch that says held replaces it, and a
// copy kept would keep two versions of every held pod alive.
func (pl *Plugin) current(p *hold.Pod) *v1.Pod {
	pod := pl.pods.byKey(p.Name)
	if pod == nil || string(pod.UID) != p.Key {
		return nil
	}
	return pod
}

// onRelease lets in the held pods the release of released may admit, and
// activates the pods refused for room lent out before it (as do the
// config and share changes below). Call it after the release is done.
func (pl *Plugin) onRelease(logger klog.Logger, released ugm.Request) {
	pl.held.freedNow()
	pl.letIn(logger, pl.held.released(&released, queueOrder{pl.ugm}), false)
	pl.reclaim.activateBlocked(logger, pl.held.freed())
}

// onConfigChange lets in every held pod a new config may admit (any).
func (pl *Plugin) onConfigChange(logger klog.Logger) {
	pl.held.freedNow()
	pl.letIn(logger, pl.held.all(queueOrder{pl.ugm}), true)
	pl.reclaim.activateBlocked(logger, pl.held.freed())
}

// letInWaiting decides the pods PreEnqueue held while the running pods
// were being accounted (start-up), as a release decides held pods: in
// let-in order (priority, the queue's application order, age), those that
// fit now get room and go to the active queue (in the order they waited
// in: letIn), the others stay held with what holds them (their status
// says so from now on). Deciding here rather than activating them all
// keeps the let-in order, which a map of pods handed to Activate does
// not, and spares the pods that stay held a second PreEnqueue under the
// scheduling queue's lock: they are among its unschedulable pods already.
// pods come in the order they were first seen (holds.started) and are
// booked in it, so that the hold book's Seq keeps it. Once decided,
// PreEnqueue's wait is released (holds.startUpDecided) before anything is
// activated: a pod PreEnqueue has not held (not in queued) goes to the
// active queue at its first PreEnqueue, and only the queued ones let in
// are activated.
func (pl *Plugin) letInWaiting(logger klog.Logger, pods []*v1.Pod, queued map[string]bool) {
	if reason := pl.held.configError(); reason != nil {
		for _, pod := range pods {
			if !pl.gone(pod) {
				pl.holdPod(logger, pod, nil, reason, false)
			}
		}
		pl.dropGone(pods)
		pl.held.startUpDecided()
		return
	}
	cfg, queues := pl.partition(), pl.queues()
	// The requests are read ahead of the booking, on another goroutine:
	// booking changes nothing placement reads.
	readAhead(pods, func(pod *v1.Pod, r *waitingRequest) {
		p := &preparedPod{}
		if _, err := pl.prepare(pod, p, cfg, queues); err == nil {
			r.p = p
		}
	}, func(pod *v1.Pod, r *waitingRequest) {
		p := &hold.Pod{Key: string(pod.UID), Name: pod.Namespace + "/" + pod.Name, Reason: hold.StartingError{},
			Priority: podPriority(pod), Created: pod.CreationTimestamp.Time}
		if r.p != nil {
			// Placed now, so that the let-in orders it by its queue's
			// application order; one that cannot be placed is decided
			// (and held, saying why) by the let-in. The placement is
			// kept for its PreFilter too (placed.go), as PreEnqueue's is:
			// the let-in below admits it with this request.
			req := r.p.req
			p.Request = &req
			pl.placed.put(pod, r.p)
		}
		pl.held.hold(p, false)
	})
	pl.dropGone(pods)
	in, opened := pl.decideLetIn(logger, pl.held.of(hold.KindStarting, queueOrder{pl.ugm}), false)
	pl.held.startUpDecided()
	pl.forgetPlacedHeld(pods)
	in = slices.DeleteFunc(in, func(p letInPod) bool { return !queued[p.pod.Namespace+"/"+p.pod.Name] })
	pl.sendLetIn(logger, in, opened)
}

// forgetPlacedHeld drops the placements kept for the pods among pods
// that stay held. PreFilter uses a placement only for the pod object it
// was made for, and a held pod's status write makes a new one, so most
// would be kept in vain, about 200 bytes a held pod for as long as it
// waits; a pod let in later is placed again by its PreFilter (a few µs).
func (pl *Plugin) forgetPlacedHeld(pods []*v1.Pod) {
	for _, pod := range pods {
		if pl.held.get(pod.UID) != nil {
			pl.placed.forget(pod.UID)
		}
	}
}

// waitingRequest is a waiting pod's placement, read ahead of its
// booking; nil: it could not be placed. Its own allocation: the
// read-ahead's batches are reused, and placedPods keeps it.
type waitingRequest struct {
	p *preparedPod
}

// dropGone forgets the pods among pods that went away or were bound:
// booked after their delete or bind was handled, they would stay held
// until their next event (goneOrBound).
func (pl *Plugin) dropGone(pods []*v1.Pod) {
	for _, pod := range pods {
		if pl.goneOrBound(pod) {
			pl.held.forget(pod.UID)
			pl.status.forget(pod.UID)
		}
	}
}

// onSharesChange lets in the pods held by a runtime share.
func (pl *Plugin) onSharesChange(logger klog.Logger) {
	pl.held.freedNow()
	pl.letIn(logger, pl.held.of(hold.KindShare, queueOrder{pl.ugm}), false)
	pl.reclaim.activateBlocked(logger, pl.held.freed())
}

// forgetPod drops what is held for a pod that is gone or bound: its
// hold, then its room, and its wanted status. The hold goes first: the
// room's let-in must not find the pod still held and admit it again, and
// a let-in racing this one (room admitted, hold not yet taken) then finds
// no hold and drops the room itself.
func (pl *Plugin) forgetPod(logger klog.Logger, uid types.UID) {
	entry := pl.held.forget(uid)
	pl.gangs.forget(uid)
	pl.dropRoom(logger, uid)
	pl.status.forget(uid)
	if entry != nil {
		pl.openBehind(logger, entry.Key)
	}
}

// dropRoom drops the room held for a pod (its admission), and lets in the
// held pods that room may admit: a dropped admission frees room as a
// release does. Not under the scheduling queue's lock (PreEnqueue).
func (pl *Plugin) dropRoom(logger klog.Logger, uid types.UID) {
	pl.placed.forget(uid)
	if req, ok := pl.ugm.Unadmit(string(uid)); ok {
		pl.onRelease(logger, req)
	}
}

// queueOrder is how the config in force orders a queue's applications
// (hold.Order).
type queueOrder struct{ m *ugm.Manager }

// Fair reports whether queue's application.sort.policy is fair.
func (o queueOrder) Fair(queue string) bool {
	return queueconfig.AppSortPolicy(o.m.InForce().Partition, queue) == queueconfig.AppSortFair
}

// Usage is app's dominant share of its queue's limits.
func (o queueOrder) Usage(app ugm.AppKey, _ string) float64 { return o.m.AppShare(app) }

// asRefusal returns err's *ugm.Refusal, if it is one.
func asRefusal(err error) (*ugm.Refusal, bool) { return errs.As[*ugm.Refusal](err) }
