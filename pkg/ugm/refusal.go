package ugm

import (
	"errors"
	"fmt"
	"strings"

	"github.com/userquota/userquota/pkg/resources"
)

// Who a refusal is about.
const (
	WhoUser  = "user"
	WhoGroup = "group"
	WhoQueue = "queue"
)

// Which limit a refusal is about.
const (
	LimitResources    = "resources"
	LimitApplications = "applications"
	// LimitShare: the queue's runtime share (elastic quotas).
	LimitShare = "share"
)

// LimitGuaranteed (nonpreemptible.go) is the guaranteed share, for pods
// that must not be preempted: Usage is then the usage of the queue's
// non-preemptible pods, and Resource is "" when no elastic queue on the
// pod's path has a guaranteed share.

// Refusal says why an increase does not fit: who would go over which limit
// on which queue, with the usage, the request and the limit. When several
// limits would be exceeded it names the first in this order: leaf to root;
// at one queue user, then group, then queue; then resource name.
type Refusal struct {
	Who      string // WhoUser, WhoGroup or WhoQueue
	Name     string // the user or group name; the queue path for WhoQueue
	Queue    string // the queue whose limit is exceeded
	Limit    string // LimitResources or LimitApplications
	Resource string // the resource, for LimitResources
	Usage    int64  // current usage (base units, or running applications)
	Request  int64  // what the increase adds
	Max      int64  // the limit
	// Guaranteed is the queue's guaranteed share of Resource, for
	// LimitShare: the reason says how much of the share was lent.
	Guaranteed int64
	// Admitted is the part of Usage held by pods let into the scheduling
	// queue and not running yet (admissions).
	Admitted int64
	// Node and Leaf, for WhoTree (forest.go): the node of the tree Name
	// whose quota is exceeded, and the node the pod names (Node or a
	// node below it). Queue is empty then.
	Node, Leaf string
}

// NeverFits reports whether err refuses the request v by a resource max
// below v's own amount: v can never fit there, whatever is released (a
// gang's minimum then says "can never run" instead of waiting).
func NeverFits(err error, v resources.Vector) bool {
	var r *Refusal
	if !errors.As(err, &r) || r.Limit != LimitResources {
		return false
	}
	return v.Get(resources.Intern(r.Resource)) > r.Max
}

// Error reads well in `kubectl describe pod`, e.g.
// `user "sue" would exceed maxresources in root.sandbox: cpu 4500m+1 > 5`.
func (r *Refusal) Error() string {
	if r.Limit == LimitApplications {
		if r.Who == WhoQueue {
			return fmt.Sprintf("queue %s would exceed maxapplications: %d+%d > %d", r.Queue, r.Usage, r.Request, r.Max)
		}
		return fmt.Sprintf("%s %q would exceed maxapplications in %s: %d+%d > %d", r.Who, r.Name, r.Queue, r.Usage, r.Request, r.Max)
	}
	if r.Limit == LimitGuaranteed && r.Resource == "" {
		return fmt.Sprintf("queue %s has no guaranteed share: non-preemptible pods run only on guaranteed capacity, never on capacity lent by other queues", r.Queue)
	}
	id := resources.Intern(r.Resource)
	amounts := fmt.Sprintf("%s %s+%s > %s", r.Resource, resources.FormatValue(id, r.Usage),
		resources.FormatValue(id, r.Request), resources.FormatValue(id, r.Max))
	if r.Admitted > 0 {
		amounts += fmt.Sprintf(" (%s of it admitted, not running yet)", resources.FormatValue(id, r.Admitted))
	}
	if r.Limit == LimitGuaranteed {
		return fmt.Sprintf("queue %s has no guaranteed room left for non-preemptible pods: %s (non-preemptible pods never use capacity lent by other queues)", r.Queue, amounts)
	}
	if r.Limit == LimitShare {
		lent := "nothing lent by other queues"
		if r.Max > r.Guaranteed {
			lent = "lent " + resources.FormatValue(id, r.Max-r.Guaranteed) + " by idle queues"
		}
		return fmt.Sprintf("queue %s is at its share: %s (guaranteed %s, %s)", r.Queue, amounts, resources.FormatValue(id, r.Guaranteed), lent)
	}
	if r.Who == WhoQueue {
		return fmt.Sprintf("queue %s would exceed max: %s", r.Queue, amounts)
	}
	if r.Who == WhoTree {
		if r.Leaf != "" && r.Leaf != r.Node {
			return fmt.Sprintf("quota tree %s node %s (above %s) would exceed its quota: %s", r.Name, r.Node, r.Leaf, amounts)
		}
		return fmt.Sprintf("quota tree %s node %s would exceed its quota: %s", r.Name, r.Node, amounts)
	}
	return fmt.Sprintf("%s %q would exceed maxresources in %s: %s", r.Who, r.Name, r.Queue, amounts)
}

// QueueError refuses a request for a queue pods cannot run in.
type QueueError struct {
	Queue  string
	Reason string // "does not exist", "is a parent queue", ...
}

func (e *QueueError) Error() string { return fmt.Sprintf("queue %q %s", e.Queue, e.Reason) }

// AppConflict refuses a pod whose application is already charged to another
// user or another queue: an application has one owner and one queue for its
// whole life, or its group and running count would be ambiguous.
type AppConflict struct {
	App         AppKey
	User, Queue string // what the request says
	HeldUser    string // what the application is charged to
	HeldQueue   string
}

func (e *AppConflict) Error() string {
	return fmt.Sprintf("application %s is already charged to user %q in queue %s (this pod: user %q, queue %s)",
		e.App, e.HeldUser, e.HeldQueue, e.User, e.Queue)
}

// Counts reports whether a pod charged req counts against the limit r
// names: in r's queue or below it, and, for a user's or a group's limit,
// the user's, or a member's (a group "*": a user with any group). A
// completion in scope frees room on the limit; a running pod in scope
// holds some; a starving pod held by it keeps room from a pod in scope
// only. Group membership stands for the group an application is tracked
// against (resolved once per application): the same for a user whose
// groups resolve to one group on the path; CountsFor is exact.
func (r *Refusal) Counts(req *Request) bool {
	if !r.inScope(req) {
		return false
	}
	switch r.Who {
	case WhoUser:
		return req.User == r.Name
	case WhoGroup:
		if r.Name == "*" {
			return len(req.Groups) > 0
		}
		for _, g := range req.Groups {
			if g == r.Name {
				return true
			}
		}
		return false
	}
	return true
}

// CountsFor is Counts for a request whose application is tracked against
// group ("" for none; TrackedGroup): a group's limit counts only for the
// group the application is charged to, not for every group of its user.
// A user in groups g0 and g1 tracked as g0 takes nothing from g1's limit,
// nor from the cumulative group "*"'s.
func (r *Refusal) CountsFor(req *Request, group string) bool {
	if r.Who == WhoGroup {
		return group != "" && r.Name == group && r.inScope(req)
	}
	return r.Counts(req)
}

// inScope reports whether req's queue is r's queue or below it.
func (r *Refusal) inScope(req *Request) bool {
	return req.Queue == r.Queue || strings.HasPrefix(req.Queue, r.Queue+".")
}
