package userquota

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/userquota/userquota/pkg/estimate"
	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/rest"
	"github.com/userquota/userquota/pkg/rest/dao"
	"github.com/userquota/userquota/pkg/ugm"
)

// Where a pod stands (docs/why-pending.md): the REST API's explanation of
// one pod (why) and its queue's held pods in let-in order (heldPods).
// They read the hold book, ugm and the ledger, and change nothing but
// the record of estimates given (waits).

// maxHolders is how many holders of a limit an explanation names; the
// rest are counted.
const maxHolders = 20

// minCompared is how many estimates a scheduler compares with actual
// let-ins before an explanation quotes its own accuracy rather than the
// reference measurement.
const minCompared = 5

// why explains the pod namespace/name to v (rest.WhyFunc): rest.ErrNoPod
// when there is none or v may not see it (not v's pod), the same answer
// for both.
func (pl *Plugin) why(namespace, name string, v rest.Viewer) (*dao.PodExplanation, error) {
	pod, err := pl.pods.Pods(namespace).Get(name)
	if err != nil {
		return nil, rest.ErrNoPod
	}
	user, _, uerr := podUser(pod, pl.args.DefaultUser)
	if !v.All && (uerr != nil || user != v.User) {
		return nil, rest.ErrNoPod
	}
	if !pl.ours(pod) {
		return nil, &rest.NotOursError{SchedulerName: pod.Spec.SchedulerName, Ours: pl.profile}
	}
	e := &dao.PodExplanation{Pod: namespace + "/" + name, User: user, Application: podApp(pod).String()}
	if uerr != nil {
		e.User = ""
	}
	if pod.Spec.NodeName != "" {
		pl.explainBound(e, pod)
		return e, nil
	}
	pl.explainPending(e, pod, v)
	return e, nil
}

// explainBound explains a pod bound to a node: what it is charged to and
// whether it borrows.
func (pl *Plugin) explainBound(e *dao.PodExplanation, pod *v1.Pod) {
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		e.State = dao.StateFinished
		e.Message = fmt.Sprintf("It ended (%s): it charges nothing.", pod.Status.Phase)
		return
	}
	e.State = dao.StateRunning
	c, live := pl.ledger.Get(string(pod.UID))
	if !live {
		e.Message = "It is bound to node " + pod.Spec.NodeName + " and not charged yet: the scheduler has not handled its binding (it charges it within moments)."
		return
	}
	req := c.Request
	e.User, e.Queue, e.Application, e.Request = req.User, req.Queue, req.App.String(), req.Resources.Map()
	ch := &dao.ChargeExplanation{User: req.User, Queue: req.Queue, Application: req.App.String(),
		Resources: req.Resources.Map(), Forced: c.Forced, Preemptible: !req.NonPreemptible}
	if uu, ok := pl.ugm.User(req.User); ok {
		ch.Group = uu.Groups[req.App.String()]
	}
	queues := pl.ugm.ElasticQueues()
	for q := req.Queue; q != ""; q = queueconfig.ParentPath(q) {
		eq, ok := queues[q]
		if !ok {
			continue
		}
		ch.Elastic = true
		for _, id := range resourceIDs(req.Resources) {
			usage, guaranteed := eq.Usage.Get(id), eq.Share.Guaranteed.Get(id)
			if usage <= guaranteed {
				continue
			}
			b := dao.Borrow{Queue: q, Resource: id.Name(), Usage: usage, Guaranteed: guaranteed, Share: -1}
			if share, bounded := eq.Share.Runtime.Get(id); bounded {
				b.Share, b.OverShare = share, usage > share
			}
			ch.Borrowing = append(ch.Borrowing, b)
			ch.Reclaimable = ch.Reclaimable || b.OverShare && ch.Preemptible
		}
	}
	e.Charged = ch
	e.Message = fmt.Sprintf("Running on %s, charged to user %q in queue %s.", pod.Spec.NodeName, req.User, req.Queue)
	switch {
	case ch.Reclaimable:
		e.Message += " Its queues use more than their share of what it holds: it may be preempted to give capacity back."
	case len(ch.Borrowing) > 0 && ch.Preemptible:
		e.Message += " It runs on capacity lent by idle queues, within its queues' share now: it may be preempted if the lenders want it back."
	case len(ch.Borrowing) > 0:
		e.Message += " It runs on capacity lent by idle queues; it is not preemptible, so it is never taken back."
	}
}

// resourceIDs lists the resources v holds (but pods, which every pod
// holds one of).
func resourceIDs(v resources.Vector) []resources.ID {
	var out []resources.ID
	for name := range v.Map() {
		if name != "pods" {
			out = append(out, resources.Intern(name))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// explainPending explains a pod not bound yet: held (what holds it, its
// place in its queue's line, what would let it in, when), let in, gated,
// or waiting in the scheduling queue.
func (pl *Plugin) explainPending(e *dao.PodExplanation, pod *v1.Pod, v rest.Viewer) {
	if !pl.held.isReady() {
		e.State = dao.StateHeld
		e.Held = &dao.HeldExplanation{Kind: string(hold.KindStarting), Reason: hold.StartingError{}.Error(),
			Estimate: dao.Estimate{At: pl.waits.clock.Now(), Unknown: "the scheduler is starting: pods are decided once the running ones are accounted (seconds)"}}
		e.Message = "Held: " + hold.StartingError{}.Error() + "."
		return
	}
	p := pl.held.get(pod.UID)
	if p == nil {
		if req, err := pl.podRequest(pod, pl.partition(), pl.queues()); err == nil {
			e.Queue, e.Request = req.Queue, req.Resources.Map()
		}
		switch {
		case len(pod.Spec.SchedulingGates) > 0:
			e.State = dao.StateGated
			e.Message = "It has scheduling gates: quota decides it once they are removed."
		case pl.ugm.Admitted(string(pod.UID)):
			e.State = dao.StateAdmitted
			e.Message = "Let in by quota (room is held for it): it waits for its scheduling cycle or for a node that fits it (kubectl describe pod shows the scheduler's reason when no node fits)."
		default:
			e.State = dao.StatePending
			e.Message = "Not held by quota: it is in the scheduling queue, or waits for a node (kubectl describe pod shows the scheduler's reason)."
		}
		return
	}
	e.State = dao.StateHeld
	if p.Request != nil {
		e.User, e.Queue, e.Application, e.Request = p.Request.User, p.Request.Queue, p.Request.App.String(), p.Request.Resources.Map()
	}
	order := queueOrder{pl.ugm}
	line, ahead := pl.held.line(p.Key, order)
	reason, fitsNow := pl.freshReason(p)
	h := &dao.HeldExplanation{Kind: string(hold.KindOf(reason)), Reason: pl.visibleReason(reason, v), Since: p.Since.UTC()}
	for i, q := range line {
		if q.Key == p.Key {
			h.Position = i + 1
		}
	}
	h.QueueHeld = len(line)
	var hg *gang.HeldError
	if errors.As(reason, &hg) {
		h.Gang = hg.Gang.String()
	}
	r, own := estimate.Limit(reason, p.Request)
	if r != nil {
		// Behind a starving pod, the request is this pod's own (the
		// refusal's is the starving pod's).
		h.Limit = &dao.Limit{Who: r.Who, Name: r.Name, Queue: r.Queue, Limit: r.Limit, Resource: r.Resource,
			Usage: r.Usage, Request: own, Max: r.Max, Admitted: r.Admitted}
	}
	est, inQueue, overall, now := pl.waits.estimate(p.Key, e.Queue, r, own, ahead)
	h.Estimate = dao.Estimate{At: now.UTC(), Known: est.Unknown == "", Unknown: est.Unknown,
		Freed: est.Freed, Completions: est.Completions}
	if est.Completions > 0 {
		// Under a second reads as one, as the rate counts it.
		h.Estimate.SpanSeconds = max(seconds(est.Span), 1)
	}
	if h.Estimate.Known {
		h.Estimate.WaitSeconds = int64((est.Wait + time.Second/2) / time.Second)
	}
	h.Estimate.Accuracy = accuracyOf(e.Queue, inQueue, overall)
	if r != nil && !est.Never && (r.Limit != ugm.LimitGuaranteed || r.Resource != "") {
		h.LetIn = &dao.LetIn{Resource: r.Resource, Own: est.Own, Ahead: est.Ahead, AheadPods: est.AheadPods}
		pl.holders(h.LetIn, r, v)
	}
	e.Held = h
	e.Message = "Held by quota: " + h.Reason
	if fitsNow {
		e.Message += " (it fits now: it is let in at the next release on its limit, or its next attempt)"
	}
}

// freshReason is what holds p now: a limit's refusal is checked again
// (the held reason is as of the pod's last decision, and a let-in pass
// may have passed over it without deciding); a pod kept behind a
// starving pod is held by that pod's limit, checked again. Other
// reasons stand. fitsNow: the check found room for it now.
func (pl *Plugin) freshReason(p *hold.Pod) (reason error, fitsNow bool) {
	switch hold.KindOf(p.Reason) {
	case hold.KindUser, hold.KindGroup, hold.KindQueue, hold.KindApplications, hold.KindShare, hold.KindGuaranteed, hold.KindTree:
	case hold.KindBehind:
		var behind *hold.BehindError
		if errors.As(p.Reason, &behind) && behind.Pod.Request != nil {
			var r *ugm.Refusal
			if err := pl.ugm.Check(behind.Pod.Request); errors.As(err, &r) {
				starving := *behind.Pod
				starving.Reason = r
				return &hold.BehindError{Pod: &starving}, false
			}
		}
		return p.Reason, false
	default:
		return p.Reason, false
	}
	var hg *gang.HeldError
	if p.Request == nil || errors.As(p.Reason, &hg) {
		// A gang's minimum is checked as a reservation, not as the
		// pod's request: its held reason stands.
		return p.Reason, false
	}
	err := pl.ugm.Check(p.Request)
	var r *ugm.Refusal
	switch {
	case errors.As(err, &r):
		return r, false
	case err == nil:
		return p.Reason, true
	}
	return err, false
}

// visibleReason is reason's text for v: a pod kept behind another user's
// starving pod does not name that pod to a viewer who may not see it.
func (pl *Plugin) visibleReason(reason error, v rest.Viewer) string {
	var behind *hold.BehindError
	if v.All || !errors.As(reason, &behind) || behind.Pod.Request != nil && behind.Pod.Request.User == v.User {
		return reason.Error()
	}
	hidden := *behind.Pod
	hidden.Name = dao.Hidden
	return (&hold.BehindError{Pod: &hidden}).Error()
}

// accuracyOf is the accuracy an explanation quotes: this scheduler's on
// the pod's queue, else over all queues, once it compared minCompared
// estimates; else the reference measurement (estimate.Reference*).
func accuracyOf(queue string, inQueue, overall estimate.Summary) dao.Accuracy {
	switch {
	case inQueue.Compared >= minCompared:
		return dao.Accuracy{Scope: "queue " + queue, Compared: inQueue.Compared, P50Seconds: seconds(inQueue.P50), P90Seconds: seconds(inQueue.P90)}
	case overall.Compared >= minCompared:
		return dao.Accuracy{Scope: "all queues", Compared: overall.Compared, P50Seconds: seconds(overall.P50), P90Seconds: seconds(overall.P90)}
	}
	return dao.Accuracy{Scope: "simulator", Compared: estimate.ReferenceCompared, P50Seconds: seconds(estimate.ReferenceP50),
		P90Seconds: seconds(estimate.ReferenceP90), Reference: estimate.ReferenceTrace}
}

func seconds(d time.Duration) int64 { return int64((d + time.Second/2) / time.Second) }

// holders fills l with the running pods charged against the limit r, the
// largest first; those v may not see by name (other users' pods, for a
// viewer without All) counted together as one dao.Hidden holder. For a
// maxapplications limit the holders are the running applications.
func (pl *Plugin) holders(l *dao.LetIn, r *ugm.Refusal, v rest.Viewer) {
	apps := r.Limit == ugm.LimitApplications
	id := resources.Intern(r.Resource)
	type held struct {
		key, user string
		pods      int
		amount    int64
	}
	byKey := map[string]*held{}
	hidden := &held{key: dao.Hidden}
	for _, uid := range pl.ledger.Pods() {
		c, ok := pl.ledger.Get(uid)
		if !ok || !r.CountsFor(&c.Request, c.Group()) {
			continue
		}
		amount := int64(0)
		if !apps {
			amount = c.Request.Resources.Get(id)
			if amount == 0 {
				continue
			}
		}
		if !v.All && c.Request.User != v.User {
			hidden.pods++
			hidden.amount += amount
			continue
		}
		key := uid
		if apps {
			key = c.Request.App.String()
		}
		x := byKey[key]
		if x == nil {
			x = &held{key: key, user: c.Request.User}
			byKey[key] = x
		}
		x.pods++
		x.amount += amount
	}
	var named []*held
	for _, x := range byKey {
		named = append(named, x)
	}
	if !apps && len(named) > 0 {
		// Pods by name: the informer's store by UID.
		names := map[string]string{}
		if pods, err := pl.pods.List(labels.Everything()); err == nil {
			for _, p := range pods {
				if _, ok := byKey[string(p.UID)]; ok {
					names[string(p.UID)] = p.Namespace + "/" + p.Name
				}
			}
		}
		for _, x := range named {
			if n, ok := names[x.key]; ok {
				x.key = n
			} else {
				x.key = "(pod " + x.key + ", gone)"
			}
		}
	}
	sort.Slice(named, func(i, j int) bool {
		a, b := named[i], named[j]
		if a.amount != b.amount {
			return a.amount > b.amount
		}
		if a.pods != b.pods {
			return a.pods > b.pods
		}
		return a.key < b.key
	})
	l.Holders = []dao.Holder{}
	for i, x := range named {
		if i >= maxHolders {
			l.MoreHolders++
			l.MoreAmount += x.amount
			continue
		}
		l.Holders = append(l.Holders, dao.Holder{Pod: x.key, User: x.user, Pods: x.pods, Amount: x.amount})
	}
	if hidden.pods > 0 {
		l.Holders = append(l.Holders, dao.Holder{Pod: dao.Hidden, Pods: hidden.pods, Amount: hidden.amount})
	}
}

// heldPods is a page of the pods held in queue, in let-in order
// (rest.HeldFunc).
func (pl *Plugin) heldPods(queue string, offset, limit int) dao.HeldPods {
	line := pl.held.queueLine(queue, queueOrder{pl.ugm})
	out := dao.HeldPods{Queue: queue, Total: len(line), Offset: offset, Limit: limit, Pods: []dao.HeldPod{}}
	for i := offset; i < len(line) && i < offset+limit; i++ {
		p := line[i]
		out.Pods = append(out.Pods, dao.HeldPod{Position: i + 1, Pod: p.Name, User: p.Request.User, Application: p.Request.App.String(),
			Priority: p.Priority, Created: p.Created.UTC(), Since: p.Since.UTC(), Kind: string(hold.KindOf(p.Reason)),
			Reason: oneLine(p.Reason.Error()), Request: p.Request.Resources.Map()})
	}
	return out
}

// oneLine folds a message onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// line returns the pods held in the queue of the held pod key, in let-in
// order, and those held on its limit that a let-in tries before it, read
// under one lock.
func (h *holds) line(key string, order hold.Order) (line, ahead []*hold.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.book.Get(key)
	if p == nil {
		return nil, nil
	}
	if p.Request != nil {
		line = h.book.Queue(p.Request.Queue, order)
	}
	return line, h.book.Ahead(key, order)
}

// queueLine returns the pods held in queue, in let-in order.
func (h *holds) queueLine(queue string, order hold.Order) []*hold.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.book.Queue(queue, order)
}

// queueCounts returns how many pods are held in each leaf queue.
func (h *holds) queueCounts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.book.QueueCounts()
}
