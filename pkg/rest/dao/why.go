package dao

import "time"

// Routes of the explanation endpoints ({partition}, {namespace}, {name}
// and {queue} are path elements; docs/api.md).
const (
	// WhyPath explains one pod: GET it for a PodExplanation. The pod's
	// owner may read it without RBAC; anyone else needs get on the path.
	WhyPath = "/ws/v1/partition/{partition}/why/{namespace}/{name}"
	// HeldPath lists the pods held in a leaf queue in let-in order: GET
	// it (?offset=N&limit=M) for a HeldPods.
	HeldPath = "/ws/v1/partition/{partition}/queue/{queue}/held"
)

// States of a pod in a PodExplanation.
const (
	// StateHeld: held by quota at the scheduling queue's door (Held says
	// why and what would let it in).
	StateHeld = "Held"
	// StateAdmitted: let in by quota (room is held for it); it waits for
	// its scheduling cycle or for a node.
	StateAdmitted = "Admitted"
	// StatePending: not held by quota and not admitted yet: in the
	// scheduling queue, or refused by something other than quota.
	StatePending = "Pending"
	// StateGated: it has scheduling gates; quota counts it once ungated.
	StateGated = "Gated"
	// StateRunning: bound to a node; Charged says what it is charged to.
	StateRunning = "Running"
	// StateFinished: it ended (Succeeded or Failed) and charges nothing.
	StateFinished = "Finished"
)

// PodExplanation is the answer of GET WhyPath: where one pod of the
// scheduler stands (docs/why-pending.md).
type PodExplanation struct {
	// Pod is namespace/name.
	Pod   string `json:"pod"`
	State string `json:"state"`
	// User is the pod's user as the scheduler reads it (the webhook
	// stamps the authenticated submitter), Queue its leaf queue and
	// Application its application (namespace/id), when known.
	User        string `json:"user"`
	Queue       string `json:"queue,omitempty"`
	Application string `json:"application,omitempty"`
	// Request is what the pod asks (base units; pods: 1 included).
	Request map[string]int64 `json:"request,omitempty"`
	// Message says in one sentence where the pod stands.
	Message string             `json:"message"`
	Held    *HeldExplanation   `json:"held,omitempty"`
	Charged *ChargeExplanation `json:"charged,omitempty"`
}

// HeldExplanation is what holds a held pod and what would let it in.
type HeldExplanation struct {
	// Kind is the kind of hold (User, Group, Queue, Applications, Share,
	// Guaranteed, Gang, Placement, Application, Behind, Config,
	// Starting), as in the pod's condition reason (Kind + "Limit").
	Kind string `json:"kind"`
	// Reason is what holds it, checked now (the pod's condition says
	// the same, as of its last decision).
	Reason string `json:"reason"`
	// Limit is the limit that holds it, with its numbers; absent when
	// no limit does (placement, config, an application conflict).
	Limit *Limit `json:"limit,omitempty"`
	// Gang is the pod's gang when its gang's minimum is what waits.
	Gang string `json:"gang,omitempty"`
	// Since is when it was first held.
	Since time.Time `json:"since"`
	// Position is its place (1 first) among the pods held in its queue,
	// in the order a let-in tries them (priority, the queue's
	// application order, age); QueueHeld is how many are held there.
	// Position is 0 when the pod has no queue (it could not be placed).
	Position  int `json:"position"`
	QueueHeld int `json:"queueHeld"`
	// LetIn is what would let it in; absent when no release can.
	LetIn *LetIn `json:"letIn,omitempty"`
	// Estimate is when it is likely let in, or why that cannot be said.
	Estimate Estimate `json:"estimate"`
}

// Limit is a limit with its numbers (ugm's Refusal): Who (user, group or
// queue) Name would go over Limit (resources, applications, share or
// guaranteed) of Resource in Queue: Usage + Request > Max, in base units
// (or applications). Admitted is the part of Usage held by pods let in
// and not running yet.
type Limit struct {
	Who      string `json:"who"`
	Name     string `json:"name"`
	Queue    string `json:"queue"`
	Limit    string `json:"limit"`
	Resource string `json:"resource,omitempty"`
	Usage    int64  `json:"usage"`
	Request  int64  `json:"request"`
	Max      int64  `json:"max"`
	Admitted int64  `json:"admitted,omitempty"`
}

// LetIn is what must be freed on the limit before the pod fits: Own for
// the pod alone (usage + request - max), and Ahead for the AheadPods
// pods held on the same limit that a let-in tries first (base units of
// Resource; for a maxapplications limit, applications). Holders are the
// running pods charged against the limit, by what they hold, the largest
// first; pods the caller may not see by name are counted together as one
// holder named Hidden.
type LetIn struct {
	Resource  string   `json:"resource,omitempty"`
	Own       int64    `json:"own"`
	Ahead     int64    `json:"ahead"`
	AheadPods int      `json:"aheadPods"`
	Holders   []Holder `json:"holders"`
	// MoreHolders and MoreAmount count the holders left out of Holders
	// (beyond the first 20) and what they hold.
	MoreHolders int   `json:"moreHolders,omitempty"`
	MoreAmount  int64 `json:"moreAmount,omitempty"`
}

// Holder is a running pod charged against a limit, or, for a
// maxapplications limit, a running application. Pod is namespace/name (or
// the application), or Hidden for the pods of other users the caller may
// not see, counted together (Pods of them, holding Amount); User is shown
// for named pods.
type Holder struct {
	Pod    string `json:"pod"`
	User   string `json:"user,omitempty"`
	Pods   int    `json:"pods"`
	Amount int64  `json:"amount"`
}

// Estimate is when a held pod is likely let in. Known: WaitSeconds from
// At, from what must be freed (LetIn's Own + Ahead) over the rate the
// limit's room was freed lately (Freed of the resource by Completions
// completions in SpanSeconds). Otherwise Unknown says why no estimate is
// made. Accuracy is how far such estimates were off.
type Estimate struct {
	Known       bool      `json:"known"`
	At          time.Time `json:"at"`
	WaitSeconds int64     `json:"waitSeconds,omitempty"`
	Unknown     string    `json:"unknown,omitempty"`
	Freed       int64     `json:"freed,omitempty"`
	Completions int       `json:"completions,omitempty"`
	SpanSeconds int64     `json:"spanSeconds,omitempty"`
	Accuracy    Accuracy  `json:"accuracy"`
}

// Accuracy is the measured accuracy of wait estimates: half of the
// Compared estimates were off by at most P50Seconds, nine in ten by at
// most P90Seconds (absolute error of the moment of the let-in). Scope says
// whose estimates: "queue root.a" or "all queues" (this scheduler's since
// it started, when it compared enough of them), else "simulator" (the
// reference measurement: Reference names it).
type Accuracy struct {
	Scope      string `json:"scope"`
	Compared   int    `json:"compared"`
	P50Seconds int64  `json:"p50Seconds"`
	P90Seconds int64  `json:"p90Seconds"`
	Reference  string `json:"reference,omitempty"`
}

// ChargeExplanation is what a running pod is charged to, and whether it
// uses capacity its queues borrowed (and could be taken back).
type ChargeExplanation struct {
	User        string           `json:"user"`
	Group       string           `json:"group,omitempty"`
	Queue       string           `json:"queue"`
	Application string           `json:"application"`
	Resources   map[string]int64 `json:"resources"`
	// Forced: charged without a check (found running: a restart, a
	// failover, bound by someone else).
	Forced bool `json:"forced,omitempty"`
	// Preemptible: reclaim may take the pod (not labelled
	// userquota.io/preemptible: "false").
	Preemptible bool `json:"preemptible"`
	// Elastic: a queue on its path has elastic quota (quota.sharing:
	// elastic) and a share, so it may borrow capacity idle queues lend.
	Elastic bool `json:"elastic"`
	// Borrowing lists the elastic queues on its path that use more than
	// their guaranteed share of a resource the pod holds: capacity lent
	// by idle queues.
	Borrowing []Borrow `json:"borrowing,omitempty"`
	// Reclaimable: preemptible, and a queue on its path uses more than
	// its runtime share of a resource the pod holds, so a pod of a queue
	// within its share that finds no node may preempt it
	// (docs/reclaim.md).
	Reclaimable bool `json:"reclaimable"`
}

// Borrow is one resource of an elastic queue used beyond its guaranteed
// share: Usage over Guaranteed, against its runtime Share (-1: unbounded);
// OverShare when over the share too.
type Borrow struct {
	Queue      string `json:"queue"`
	Resource   string `json:"resource"`
	Usage      int64  `json:"usage"`
	Guaranteed int64  `json:"guaranteed"`
	Share      int64  `json:"share"`
	OverShare  bool   `json:"overShare"`
}

// HeldPods is the answer of GET HeldPath: a page of the pods held in a
// queue, in let-in order. Total is how many are held there now; a page is
// cut from the order at the time of its request, so pages read one after
// the other may repeat or miss a pod that moved.
type HeldPods struct {
	Queue  string    `json:"queue"`
	Total  int       `json:"total"`
	Offset int       `json:"offset"`
	Limit  int       `json:"limit"`
	Pods   []HeldPod `json:"pods"`
}

// HeldPod is one held pod of a queue's list: its Position (1 first), the
// pod, its user, application and priority, when it was created and first
// held, the kind of hold and its reason as of its last decision, and its
// request (base units).
type HeldPod struct {
	Position    int              `json:"position"`
	Pod         string           `json:"pod"`
	User        string           `json:"user"`
	Application string           `json:"application"`
	Priority    int32            `json:"priority"`
	Created     time.Time        `json:"created"`
	Since       time.Time        `json:"since"`
	Kind        string           `json:"kind"`
	Reason      string           `json:"reason"`
	Request     map[string]int64 `json:"request"`
}
