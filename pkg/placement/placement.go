package placement

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/userquota/userquota/pkg/queueconfig"
)

// Input is what placement knows about a pod.
type Input struct {
	User   string
	Groups []string
	// Namespace is the pod's namespace; "" reads as "default".
	Namespace string
	// Labels and Annotations feed tag rules whose value is not "namespace".
	Labels      map[string]string
	Annotations map[string]string
	// Queue is the queue the pod names ("" for none), for the provided
	// rule; QueueFrom says where it was found ("label queue"), for messages.
	Queue     string
	QueueFrom string
}

// Queues reports the queues that exist outside the config: created by a
// rule (dynamic) or left behind by a config change while in use
// (draining: they take no new pods). ugm.Manager implements it; nil means
// none exist.
type Queues interface {
	DynamicQueue(path string) (exists, leaf, draining bool)
}

// Options change how a pod is placed.
type Options struct {
	// SkipACL places without looking at ACLs: for accounting a pod that
	// already runs, which no ACL can refuse.
	SkipACL bool
}

// Result is where placement put a pod.
type Result struct {
	// Queue is the leaf queue's full path.
	Queue string
	// Create is true when the rule that placed the pod may create the
	// queue (and missing parents) if it does not exist when the pod is
	// charged.
	Create bool
	// Rule describes the rule that placed the pod; "" when the partition
	// has no placement rules (the named or default queue).
	Rule string
}

// Policy is the placement of one partition: its rules and ACLs, compiled
// once per config. Immutable and safe for concurrent use.
type Policy struct {
	part         *queueconfig.Partition
	defaultQueue string
	rules        []*rule
	acls         map[string]queueACLs
	aclOn        bool
}

// New compiles the placement of p (nil: no config, so no rules and no
// ACLs). defaultQueue is the full path of the queue a pod naming none runs
// in when the partition has no rules.
func New(p *queueconfig.Partition, defaultQueue string) *Policy {
	pol := &Policy{part: p, defaultQueue: defaultQueue}
	if p == nil {
		return pol
	}
	for i := range p.PlacementRules {
		pol.rules = append(pol.rules, compileRule(&p.PlacementRules[i]))
	}
	pol.acls = compileACLs(p)
	pol.aclOn = p.SubmitACLSet
	return pol
}

// last is the most recently compiled policy (For).
var last atomic.Pointer[Policy]

// For returns the compiled placement of p, compiling it only when p or
// defaultQueue differ from the last call's: a scheduler runs one config at
// a time, so this keeps one policy alive and compiles once per config.
func For(p *queueconfig.Partition, defaultQueue string) *Policy {
	if pol := last.Load(); pol != nil && pol.part == p && pol.defaultQueue == defaultQueue {
		return pol
	}
	pol := New(p, defaultQueue)
	last.Store(pol)
	return pol
}

// HasRules reports whether the partition has placement rules.
func (pol *Policy) HasRules() bool { return len(pol.rules) > 0 }

// ACLChecks reports whether submit ACLs are checked: only when some queue
// of the partition sets submitacl.
func (pol *Policy) ACLChecks() bool { return pol.aclOn }

// queueState is what placement knows about one path.
type queueState struct {
	exists, leaf, draining, configured bool
}

func (pol *Policy) state(path string, qs Queues) queueState {
	if pol.part != nil {
		if q := pol.part.Queue(path); q != nil {
			return queueState{exists: true, leaf: !q.IsParent, configured: true}
		}
	}
	if qs == nil {
		return queueState{}
	}
	exists, leaf, draining := qs.DynamicQueue(path)
	return queueState{exists: exists, leaf: leaf, draining: draining}
}

// Place finds the queue of a pod. Errors: *NoMatchError (no rule placed
// it), *ACLError (no rules, and the named queue's ACLs deny the user),
// *RuleError (a rule refused the pod outright), or, without rules, the
// *queueconfig.ResolveError of a named queue that does not resolve.
func (pol *Policy) Place(in *Input, qs Queues, opts Options) (Result, error) {
	if len(pol.rules) == 0 {
		return pol.placeNamed(in, qs, opts)
	}
	tried := make([]string, 0, len(pol.rules))
	for i, r := range pol.rules {
		path, why, err := r.place(pol, in, qs)
		if err == nil && path != "" {
			why, err = pol.usable(path, in, qs, opts)
			if err == nil && why == "" {
				// The config's string for a configured queue
				// (queueconfig.ResolveQueue says why).
				return Result{Queue: pol.part.Canonical(path), Create: r.mayCreate(), Rule: r.String()}, nil
			}
		}
		if err != nil {
			return Result{}, &RuleError{No: i + 1, Rule: r.String(), Err: err}
		}
		tried = append(tried, fmt.Sprintf("%d. %s: %s", i+1, r, why))
	}
	return Result{}, &NoMatchError{Tried: tried}
}

// usable decides whether a rule's queue takes the pod, as YuniKorn does
// after a rule matched: an existing queue must be a leaf that is not
// draining; a queue to be created must hang below a parent queue; and the
// ACLs of the queue's path must let the user submit. "" means usable; an
// error refuses the pod (a queue cannot be created below a leaf).
func (pol *Policy) usable(path string, in *Input, qs Queues, opts Options) (string, error) {
	st := pol.state(path, qs)
	switch {
	case st.exists && st.draining:
		return fmt.Sprintf("%s left the queue config and takes no new pods until it is empty", path), nil
	case st.exists && !st.leaf:
		return fmt.Sprintf("%s is a parent queue; pods run only in leaf queues", path), nil
	case !st.exists:
		for p := queueconfig.ParentPath(path); p != ""; p = queueconfig.ParentPath(p) {
			ps := pol.state(p, qs)
			if !ps.exists {
				continue
			}
			if ps.draining {
				return "", fmt.Errorf("cannot create %s: %s left the queue config", path, p)
			}
			if ps.leaf {
				return "", fmt.Errorf("cannot create %s: %s is a leaf queue", path, p)
			}
			break
		}
	}
	if pol.aclOn && !opts.SkipACL {
		if err := pol.checkSubmit(path, in.User, in.Groups); err != nil {
			return err.Error(), nil
		}
	}
	return "", nil
}

// placeNamed places a pod in a partition without rules: its named queue
// (resolved by queueconfig.ResolveQueue), else the default queue. A queue
// that does not exist, or is a parent, is left to ugm to refuse; the ACLs
// are checked on a leaf that exists.
func (pol *Policy) placeNamed(in *Input, qs Queues, opts Options) (Result, error) {
	path := pol.defaultQueue
	if in.Queue != "" {
		var err error
		if path, err = queueconfig.ResolveQueue(pol.part, in.Queue); err != nil {
			return Result{}, err
		}
	}
	if pol.aclOn && !opts.SkipACL {
		if st := pol.state(path, qs); st.exists && st.leaf && !st.draining {
			if err := pol.checkSubmit(path, in.User, in.Groups); err != nil {
				return Result{}, err
			}
		}
	}
	return Result{Queue: path}, nil
}

// NoMatchError refuses a pod no placement rule placed, with what each rule
// said, in order.
type NoMatchError struct {
	// Tried holds one line per rule: "1. tag namespace: why it did not
	// place the pod".
	Tried []string
}

func (e *NoMatchError) Error() string {
	return "no placement rule placed the pod: " + strings.Join(e.Tried, "; ")
}

// RuleError refuses a pod because a rule failed outright: YuniKorn rejects
// the application then, without trying the rules after it.
type RuleError struct {
	No   int // 1-based position in placementrules
	Rule string
	Err  error
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("placement rule %d (%s): %v", e.No, e.Rule, e.Err)
}

func (e *RuleError) Unwrap() error { return e.Err }
