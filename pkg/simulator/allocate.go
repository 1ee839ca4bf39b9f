package simulator

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// Defaults the contract gives for fields an allocate line leaves out; they
// are the scheduler's defaults for a pod without user info or namespace.
const (
	defaultUser      = "nobody"
	defaultNamespace = "default"
)

// onePod is what every pod adds besides its requests: the scheduler
// charges `pods: 1`, so a pods limit caps the number of pods.
var onePod = resources.FromMap(map[string]int64{resources.Pods: 1})

// allocate places a pod and charges it through the ledger, as the plugin's
// PreEnqueue, PreFilter and Reserve do. With Options.Requeue a refused pod
// is held (see try and letIn).
func (s *sim) allocate(n int, l *traceLine) any {
	req, err := allocateRequest(l)
	var g *simGang
	if err == nil {
		g, err = s.lineGang(l, &req)
	}
	var runtime time.Duration
	if err == nil {
		runtime, err = runFor(l)
	}
	if err != nil {
		return lineError{Line: n, Error: "allocate: " + err.Error()}
	}
	// A live pod is reported as such whatever its queue now resolves to,
	// as the ledger reports it before asking ugm anything.
	if _, live := s.ledger.Get(l.Pod); live {
		return podError{Pod: l.Pod, Error: "already allocated"}
	}
	// A pod held under --requeue is the same pod: its first line stands.
	if _, held := s.pendingByName[l.Pod]; held {
		return podError{Pod: l.Pod, Error: "already pending"}
	}
	p := &pendingPod{name: l.Pod, line: l, req: req, demand: true, priority: l.Priority, created: createdAt(n), gang: g, runtime: runtime}
	d := s.try(p)
	if d.result == refusedPod && d.placed != nil && s.preemptForTrees(p, d) {
		d = s.try(p)
	}
	if d.result == refusedPod && s.opts.Requeue {
		s.hold(p, d)
	}
	return d.out
}

// Outcomes of try.
const (
	admittedPod = iota
	refusedPod
	// livePod: the ledger holds the pod already; it never waits.
	livePod
)

// decision is what try decided for a pod.
type decision struct {
	// out is the output line: the allow or refusal line.
	out    any
	result int
	// reason is why a refused pod is refused; placed its request as
	// placed, nil when placement failed.
	reason error
	placed *ugm.Request
}

// try places p and asks the ledger to charge it (admit), with the shares
// recomputed first counting p as pending (the pod asking is part of its
// queue's demand while it is decided). It records on p the queue
// placement gave it ("" when placement failed) and whether it counts as
// demand while it waits: not after a user or group refusal, which no
// share can lift.
func (s *sim) try(p *pendingPod) decision {
	req := p.req
	placed, err := s.place(&req, p.line)
	p.queue = ""
	var d decision
	if err == nil {
		req.Queue, req.Create = placed.Queue, placed.Create
		p.queue = placed.Queue
		d.placed = &req
	}
	s.recompute(p)
	if err == nil {
		err = s.admit(p, &req)
	}
	if err == nil {
		s.join(p)
		s.started(p)
		s.live[p.name] = liveInfo{priority: p.priority, created: p.created}
		out := allowed{Pod: p.name, Allowed: true}
		// The contract names the queue only when placement chose it: the
		// line names none, or rules decided (they may override the name).
		if p.line.Queue == "" || s.policy.HasRules() {
			out.Queue = placed.Queue
		}
		if req.Trees != nil {
			out.Borrowed = s.borrowed(p.name)
		}
		d.out, d.result = out, admittedPod
		return d
	}
	if errors.Is(err, ledger.ErrAlreadyAllocated) {
		d.out, d.result = podError{Pod: p.name, Error: "already allocated"}, livePod
		return d
	}
	// Refusals, queue errors, application conflicts, a starving pod's kept
	// room and anything else ugm turns down (a usage that would overflow):
	// the pod is not admitted.
	out := refused{Pod: p.name, Reason: err.Error()}
	p.demand = true
	var r *ugm.Refusal
	if errors.As(err, &r) {
		out.Who, out.Name, out.Queue, out.Node, out.Limit = r.Who, r.Name, r.Queue, r.Node, r.Limit
		if r.Limit == ugm.LimitResources || r.Limit == ugm.LimitShare {
			out.Resource = r.Resource
		}
		p.demand = r.Who != ugm.WhoUser && r.Who != ugm.WhoGroup && r.Who != ugm.WhoTree
	}
	d.out, d.result, d.reason = out, refusedPod, err
	return d
}

// admit charges p placed as req, or says why not. A gang's pod is decided
// with its gang (admitMember). Any other pod that fits but would take the
// room kept for a starving held pod (hold.Book.Barrier) is refused with a
// *hold.BehindError, as the plugin's PreEnqueue holds it; the barrier
// binds only a pod that fits: one that does not is held for its own limit
// (the plugin decides, then checks it).
func (s *sim) admit(p *pendingPod, req *ugm.Request) error {
	if p.gang != nil {
		return s.admitMember(p, req)
	}
	if head := s.book.Barrier(p.name, req, s.ledger.Manager().TrackedGroup(req), p.priority, p.created, s.now); head != nil {
		if err := s.ledger.Check(req); err != nil {
			return err
		}
		return &hold.BehindError{Pod: head}
	}
	return s.ledger.Allocate(p.name, *req)
}

// allocateRequest builds the ugm request an allocate line stands for, with
// the contract's defaults, or says which field is wrong.
func allocateRequest(l *traceLine) (ugm.Request, error) {
	if l.Pod == "" {
		return ugm.Request{}, errors.New(`missing "pod"`)
	}
	if l.Resources == nil {
		return ugm.Request{}, errors.New(`missing "resources" (Kubernetes quantities, e.g. {"cpu":"1","memory":"1Gi"})`)
	}
	vec, err := resources.Parse(l.Resources)
	if err != nil {
		return ugm.Request{}, fmt.Errorf("resources: %w", err)
	}
	if err := vec.Add(onePod); err != nil {
		return ugm.Request{}, fmt.Errorf("resources: %w", err)
	}
	user := defaultUser
	if l.User != nil {
		// The plugin refuses user info naming no user rather than guess.
		if user = *l.User; strings.TrimSpace(user) == "" {
			return ugm.Request{}, errors.New(`"user" is empty (leave it out for the default user)`)
		}
	}
	labels, trees, err := podTrees(l)
	if err != nil {
		return ugm.Request{}, err
	}
	l.Labels = labels
	req := ugm.Request{
		User:      user,
		Groups:    l.Groups,
		App:       ugm.AppKey{Namespace: l.Namespace, ID: l.App},
		Resources: vec,
		Trees:     trees,
		// As the plugin reads the label (podPreemptible).
		NonPreemptible: strings.EqualFold(strings.TrimSpace(l.Labels[podmeta.LabelPreemptible]), "false"),
	}
	if req.App.Namespace == "" {
		req.App.Namespace = defaultNamespace
	}
	if req.App.ID == "" {
		req.App.ID = l.Pod
	}
	return req, nil
}
