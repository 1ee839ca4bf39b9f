// Package hold is the book of pods held out of the scheduling queue
// because their quota cannot take them now (docs/design.md, "Hold and let
// in"): what holds each pod, the order they are let in when room frees,
// and the starvation rule that keeps room for a pod that waited too long.
// It decides nothing about limits itself: the caller asks ugm whether a
// pod fits and tells the book. It knows pods only as keys, requests and
// refusals, so the scheduler plugin and the simulator use it alike. A
// Book has no lock of its own: its owner locks (the B-trees' free lists,
// google/btree's, lock themselves, taken last).
package hold

import (
	"strings"
	"unicode/utf8"

	"github.com/userquota/userquota/pkg/errs"
	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/ugm"
)

// Kind names the kind of limit that holds a pod: the reason of the pod's
// condition (userquota.io/QuotaAdmitted=False) is Kind + "Limit", e.g.
// UserLimit.
type Kind string

// Kinds of holds.
const (
	KindUser         Kind = "User"
	KindGroup        Kind = "Group"
	KindQueue        Kind = "Queue"
	KindApplications Kind = "Applications"
	KindShare        Kind = "Share"
	KindGuaranteed   Kind = "Guaranteed"
	// KindPlacement: the pod has no queue it may run in (no such queue, a
	// parent queue, the ACLs, no placement rule) or its metadata is
	// malformed: a config change or an update of the pod may help.
	KindPlacement Kind = "Placement"
	// KindApplication: the pod's application runs for another user or in
	// another queue.
	KindApplication Kind = "Application"
	// KindBehind: the pod would fit, but it would take room kept for a pod
	// of the same limit that waited longer than the starvation wait.
	KindBehind Kind = "Behind"
	// KindGang: the pod's gang is malformed or missing its definition, or
	// failed (docs/gangs.md). A gang whose minimum does not fit is held
	// by the kind of the limit it meets.
	KindGang Kind = "Gang"
	// KindConfig: no valid queue config is in force and the ConfigMap's
	// does not load: every pod waits for a valid one (fail closed).
	KindConfig Kind = "Config"
	// KindTree: a quota tree's node (docs/forests.md): the pod's request
	// does not fit the node its tree label names, or an ancestor of it.
	KindTree Kind = "Tree"
	// KindStarting: the scheduler is still accounting the pods already
	// running (start-up): no pod is decided on partial usage. Such a hold
	// is never written to the pod's status; it lasts until start-up ends.
	KindStarting Kind = "Starting"
)

// KindOf classifies why a pod is held. The reasons the plugin holds pods
// with are its own errors, unwrapped: errs.As tells them apart by a type
// assertion (errors.As on each kind in turn took a microsecond a pod, for
// every held pod at every let-in), and looks for a wrapped one in the
// chain.
func KindOf(reason error) Kind {
	if _, ok := errs.As[StartingError](reason); ok {
		return KindStarting
	}
	if _, ok := errs.As[*ConfigError](reason); ok {
		return KindConfig
	}
	if _, ok := errs.As[*BehindError](reason); ok {
		return KindBehind
	}
	if _, ok := errs.As[*gang.Error](reason); ok {
		return KindGang
	}
	if _, ok := errs.As[*gang.FailedError](reason); ok {
		return KindGang
	}
	if r, ok := errs.As[*ugm.Refusal](reason); ok {
		return refusalKind(r)
	}
	if _, ok := errs.As[*ugm.AppConflict](reason); ok {
		return KindApplication
	}
	return KindPlacement
}

// refusalKind is the kind of limit a refusal names: applications, a
// share or a guarantee, else whose limit it is.
func refusalKind(r *ugm.Refusal) Kind {
	switch r.Limit {
	case ugm.LimitApplications:
		return KindApplications
	case ugm.LimitShare:
		return KindShare
	case ugm.LimitGuaranteed:
		return KindGuaranteed
	}
	switch r.Who {
	case ugm.WhoTree:
		return KindTree
	case ugm.WhoUser:
		return KindUser
	case ugm.WhoGroup:
		return KindGroup
	}
	return KindQueue
}

// StartingError holds a pod while the running pods are being accounted
// (start-up, see KindStarting).
type StartingError struct{}

func (StartingError) Error() string {
	return "UserQuota is accounting the pods already running (start-up)"
}

// BehindError holds a pod that fits but would take room kept for Pod, a
// pod of the same limit held longer than the starvation wait.
type BehindError struct {
	Pod *Pod
}

// ConfigError holds every pod of the scheduler while no valid queue config
// is in force and the one in the ConfigMap does not load (invalid, or
// without the partition the scheduler enforces): without it the pods would
// run without limits (docs/design.md, "Config"). Only a valid config lets
// them in.
type ConfigError struct {
	// Err is why the config does not load; it names the ConfigMap, the key
	// and every problem.
	Err error
}

// maxConfigText caps the config's problems in a ConfigError's message: it
// is a pod's condition and the note of a Warning event (at most 1 KiB);
// the scheduler's log and the ConfigMap's InvalidQueueConfig event have
// the rest.
const maxConfigText = 700

func (e *ConfigError) Error() string {
	text := strings.Join(strings.Fields(strings.ReplaceAll(e.Err.Error(), "\n", "; ")), " ")
	if len(text) > maxConfigText {
		cut := maxConfigText
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + " ... (more in the scheduler's log)"
	}
	return "no valid queue config is in force, so no pod is admitted until one is: " + text
}

// Unwrap returns the config's error.
func (e *ConfigError) Unwrap() error { return e.Err }

// MessagePrefix starts the PodScheduled message of a held pod; the reason
// it is held follows.
const MessagePrefix = "held by quota: "

// BehindPrefix starts a BehindError's message; the pod's namespace/name
// follows, then a comma.
const BehindPrefix = "waiting behind pod "

func (e *BehindError) Error() string {
	return BehindPrefix + e.Pod.Name + ", held since " + e.Pod.Since.UTC().Format("15:04:05") +
		" (longer than the starvation wait): the room it needs is kept for it; it was held because " + e.Pod.Reason.Error()
}

// block is what holds a pod, as a key of the book's index: the user or
// group limit, the queue (its max, maxapplications or share), the
// application, a quota tree's node, or placement.
type block struct {
	kind byte // 'u', 'g', 'q', 'a', 't', 'p'
	name string
}

// blockOf is the index key of a reason.
func blockOf(reason error) block {
	if behind, ok := errs.As[*BehindError](reason); ok {
		return blockOf(behind.Pod.Reason)
	}
	if r, ok := errs.As[*ugm.Refusal](reason); ok {
		switch r.Who {
		case ugm.WhoUser:
			return block{'u', r.Name}
		case ugm.WhoGroup:
			return block{'g', r.Name}
		case ugm.WhoTree:
			return treeBlock(r.Name, r.Node)
		}
		return block{'q', r.Queue}
	}
	if conflict, ok := errs.As[*ugm.AppConflict](reason); ok {
		return block{'a', conflict.App.String()}
	}
	return block{'p', ""}
}

// touched lists the blocks a release of released may open: its user, its
// groups (and the cumulative group "*"), every queue on its path, its
// application.
func touched(released *ugm.Request) []block {
	// Sized for a path of four queues: one allocation.
	out := make([]block, 0, 7+len(released.Groups))
	out = append(out, block{'u', released.User}, block{'a', released.App.String()})
	for _, g := range released.Groups {
		out = append(out, block{'g', g})
	}
	if len(released.Groups) > 0 {
		out = append(out, block{'g', "*"})
	}
	return pathBlocks(released, out)
}

// takenFrom lists the blocks an admission of req, whose application is
// tracked against group ("" for none), takes room from: its user, that
// one group, every queue on its path, its application.
func takenFrom(req *ugm.Request, group string) []block {
	out := make([]block, 0, 8)
	out = append(out, block{'u', req.User}, block{'a', req.App.String()})
	if group != "" {
		out = append(out, block{'g', group})
	}
	return pathBlocks(req, out)
}

// pathBlocks adds to out the blocks of every queue on req's path and of
// its trees' nodes.
func pathBlocks(req *ugm.Request, out []block) []block {
	for p := req.Queue; p != ""; p = queueconfig.ParentPath(p) {
		out = append(out, block{'q', p})
	}
	return treeBlocks(req, out)
}

// Affects reports whether req counts against the limit that reason says
// holds a pod (behind a starving pod: that pod's limit): a limit's
// refusal as ugm.Refusal.Counts says (the same user or a group of req's
// user, under the limit's queue; a queue on req's path), a quota tree's
// node req is charged on or under, or the application that blocked it.
// A release of req may then make room for the pod, and an admission of
// req would take room from it.
func Affects(reason error, req *ugm.Request) bool { return affects(reason, req, nil) }

// takes reports whether an admission of req, whose application is tracked
// against group, would take room from the limit reason says holds a pod:
// Affects, but a group's limit only for the group it is charged to
// (ugm.Refusal.CountsFor), so that a starving pod held by one group's
// limit keeps no room from the users of another.
func takes(reason error, req *ugm.Request, group string) bool { return affects(reason, req, &group) }

// affects is Affects, and with group (not nil) takes.
func affects(reason error, req *ugm.Request, group *string) bool {
	if behind, ok := errs.As[*BehindError](reason); ok {
		reason = behind.Pod.Reason
	}
	if r, ok := errs.As[*ugm.Refusal](reason); ok && r.Who != ugm.WhoTree {
		if group != nil {
			return r.CountsFor(req, *group)
		}
		return r.Counts(req)
	}
	b := blockOf(reason)
	switch b.kind {
	case 'a':
		return req.App.String() == b.name
	case 't':
		return onTree(req, b.name)
	}
	// Placement waits for a config change or an update of the pod itself.
	return false
}

// canEverFit reports whether the pod's request alone fits the limit that
// holds it: a pod that asks for more than a max can never run there, and
// no room is kept for it.
func canEverFit(reason error) bool {
	r, ok := errs.As[*ugm.Refusal](reason)
	if !ok || r.Limit == ugm.LimitGuaranteed && r.Resource == "" {
		return false
	}
	return r.Request <= r.Max
}

// SameLimit reports whether two reasons name the same limit (who, which,
// where, and its maximum: a runtime share changes with the shares), not
// the same usage behind it: the plugin writes a held pod's status only
// when its limit changes, and a starving pod held by another limit than
// before has the pods held behind it tried again (they may not count
// against the new one). Reasons that are not limits compare by message.
func SameLimit(a, b error) bool {
	ra, oka := errs.As[*ugm.Refusal](a)
	rb, okb := errs.As[*ugm.Refusal](b)
	if oka != okb {
		return false
	}
	if !oka {
		return a.Error() == b.Error()
	}
	return ra.Who == rb.Who && ra.Name == rb.Name && ra.Queue == rb.Queue && ra.Limit == rb.Limit && ra.Resource == rb.Resource && ra.Max == rb.Max
}
