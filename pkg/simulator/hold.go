package simulator

import (
	"slices"
	"time"

	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// Hold and let in under Options.Requeue (docs/simulator.md), as the
// scheduler plugin does it (docs/design.md, "Hold and let in";
// pkg/plugins/userquota/letin.go): a refused pod is held in a hold.Book;
// the lines that free room let held pods in, in the book's order, each
// admitted at once (the simulator commits when it admits); a pod held
// longer than Options.Starvation keeps the room it needs.

// simStart is the simulated clock at the first line: 00:00:00 UTC, so that
// a time in a refusal ("held since 00:03:00") reads as time since the
// start.
var simStart = time.Unix(0, 0).UTC()

// createdAt is the creation of the pod of trace line n: its age in the
// let-in order is its line's position (a later line is younger, whatever
// the clock says).
func createdAt(n int) time.Time { return simStart.Add(time.Duration(n)) }

// pendingPod is a pod an allocate line asked for that is not admitted:
// while it is decided, and with Options.Requeue while it is held.
type pendingPod struct {
	name string
	// line is the allocate line, placed again on every attempt (a config
	// line may move the pod); req is its request without the queue.
	line *traceLine
	req  ugm.Request
	// priority and created (its line's position) order it for letting in.
	priority int32
	created  time.Time
	// queue is where the last placement put the pod; "" when placement
	// failed (a pod without a queue is no queue's demand).
	queue string
	// demand: the pod's charge counts in its queue's demand. False after
	// a user or group refusal (the pod cannot use a share) until a later
	// attempt is refused for another reason.
	demand bool
	// gang is the gang the allocate line names; nil for none.
	gang *simGang
	// runtime is how long it runs once charged (0: until released).
	runtime time.Duration
}

// hold records p as held for d's reason, as the plugin's holdPod: a pod
// held already keeps the time it was first held (the book keeps Since).
func (s *sim) hold(p *pendingPod, d decision) {
	_, again := s.pendingByName[p.name]
	s.pendingByName[p.name] = p
	s.join(p)
	s.book.Hold(&hold.Pod{Key: p.name, Name: p.name, Request: d.placed, Reason: d.reason,
		Priority: p.priority, Created: p.created, Obj: p}, s.now)
	if !again {
		s.estimateHeld(p.name)
	}
}

// dropPending stops p being held (admitted, or withdrawn by a release).
func (s *sim) dropPending(p *pendingPod) {
	delete(s.pendingByName, p.name)
	s.book.Remove(p.name)
}

// freed is what follows a line's output (after): the clock a time or
// wait line moves to, the gang a release left without pods, and for the
// let-in the charge a release gave back, or everything (a config or
// capacity line).
type freed struct {
	all bool
	// released is the charge a release gave back; sharesBefore the shares
	// before it (nil when no pod was held).
	released     *ugm.Request
	sharesBefore *shares.Table
	// until is where a time or wait line moves the clock (zero: it stays).
	until time.Time
	// gone is a reserved gang whose last pod the release took.
	gone *simGang
	// withdrawn is a held pod the release took: the pods held behind it
	// (a starving pod) are tried.
	withdrawn string
}

// after carries out what follows a line's output, in the plugin's order:
// the gang timeouts a time line passes (each with its let-in), the
// reservation of a gang whose last pod went, then the let-in of what the
// line freed.
func (s *sim) after(f *freed) {
	if !f.until.IsZero() {
		s.advance(f.until)
	}
	if f.gone != nil {
		s.gangGone(f.gone)
	}
	if f.withdrawn != "" && s.opts.Requeue {
		// As the plugin's forgetPod: no room is kept for it any more.
		if behind := s.book.Behind(f.withdrawn, queueOrder{s}); len(behind) > 0 {
			s.letIn(behind)
		}
	}
	if s.opts.Requeue && (f.all || f.released != nil) {
		s.letInAfter(f)
	}
}

// letInAfter lets in the held pods what f freed may admit, as the plugin
// does after the same event: after a config or capacity line every held
// pod (hold.Book.All); after a release those its room may admit
// (hold.Book.Released: its user, groups, queues and application, at most
// hold.Window pods of each), and then, when the release changed a runtime
// share, the pods held by a share (the plugin's recompute lets them in).
func (s *sim) letInAfter(f *freed) {
	if s.book.Len() == 0 {
		return
	}
	order := queueOrder{s}
	if f.all {
		// Ordered by the queue each pod was held in (a config line places
		// them again only when they are tried), as in the plugin.
		s.letIn(s.book.All(order))
		return
	}
	var sieve hold.Sieve
	if !s.opts.Estimates {
		// The estimates read the held pods' reasons, which a pod passed
		// over keeps from its last try: their reference accuracy
		// (pkg/estimate) was measured trying every pod.
		sieve = hold.Sieve{}
	}
	s.letInPass(s.book.Released(f.released, hold.Window, order), sieve)
	if f.sharesBefore == nil || s.book.Kinds()[hold.KindShare] == 0 || !s.computeShares(nil).RuntimesDiffer(f.sharesBefore) {
		return
	}
	var byShare []*hold.Pod
	for _, p := range s.book.All(order) {
		if hold.KindOf(p.Reason) == hold.KindShare {
			byShare = append(byShare, p)
		}
	}
	s.letIn(byShare)
}

// letIn tries the held pods cands in order, as the plugin's letIn: each
// that fits now (and takes no starving pod's room) is admitted and prints
// its allow line; one that does not stays held with its new reason,
// without blocking those behind it. When a pod let in had kept its room
// (a starving pod), the pods held behind it are tried next, then the held
// pods of the gangs reserved meanwhile.
func (s *sim) letIn(cands []*hold.Pod) { s.letInPass(cands, nil) }

// letInPass is letIn passing over, when sieve is not nil, the pods held by
// a limit that already refused as large a request in this pass, without
// trying them (hold.Sieve), as the plugin's let-in after a release does:
// usage only grows during a pass, so they would be refused again, and a
// pod tried and refused again prints nothing. It keeps a release over a
// deep backlog (fair-flood-*: 990 held pods) from trying every pod.
func (s *sim) letInPass(cands []*hold.Pod, sieve hold.Sieve) {
	var opened, reheld []*hold.Pod
	for _, c := range cands {
		p, _ := c.Obj.(*pendingPod)
		if p == nil || s.book.Get(c.Key) == nil {
			continue
		}
		if sieve != nil && sieve.Skip(c.Reason) {
			continue
		}
		d := s.try(p)
		if d.result == refusedPod {
			if sieve != nil {
				sieve.Refused(d.reason)
			}
			s.hold(p, d)
			if !hold.SameLimit(c.Reason, d.reason) && s.book.HasBehind(c.Key) {
				reheld = append(reheld, c)
			}
			continue
		}
		// Admitted (or, which cannot happen, live already).
		s.dropPending(p)
		s.estimateLetIn(p.name)
		s.emit(d.out)
		if hold.KindOf(c.Reason) != hold.KindBehind {
			opened = append(opened, c)
		}
	}
	// The pods behind a starving pod let in, or held by another limit
	// than before (they may not count against it), are tried again, as
	// the plugin does (openBehind).
	for _, c := range append(opened, reheld...) {
		if behind := s.book.Behind(c.Key, queueOrder{s}); len(behind) > 0 {
			s.letIn(behind)
		}
	}
	s.letInOpened()
}

// refreshPending places every held pod again after a config line, so that
// their demand counts where the new config puts them from the first
// recompute on.
func (s *sim) refreshPending() {
	for _, p := range s.pendingByName {
		req := p.req
		placed, err := s.place(&req, p.line)
		p.queue = ""
		if err == nil {
			p.queue = placed.Queue
		}
	}
}

// pendingNames lists the held pods in trace order, for the snapshot; nil
// without Options.Requeue.
func (s *sim) pendingNames() *[]string {
	if !s.opts.Requeue {
		return nil
	}
	held := make([]*pendingPod, 0, len(s.pendingByName))
	for _, p := range s.pendingByName {
		held = append(held, p)
	}
	slices.SortFunc(held, func(a, b *pendingPod) int { return a.created.Compare(b.created) })
	names := make([]string, 0, len(held))
	for _, p := range held {
		names = append(names, p.name)
	}
	return &names
}

// queueOrder is how the config in force orders a leaf queue's applications
// (hold.Order), as the plugin's: the queue's application.sort.policy, and
// for fair each application's share of its queue's limits (ugm's AppShare).
type queueOrder struct{ s *sim }

// Fair reports whether queue's application.sort.policy is fair.
func (o queueOrder) Fair(queue string) bool {
	return queueconfig.AppSortPolicy(o.s.partition, queue) == queueconfig.AppSortFair
}

// Usage is app's dominant share of its queue's limits.
func (o queueOrder) Usage(app ugm.AppKey, _ string) float64 {
	return o.s.ledger.Manager().AppShare(app)
}
