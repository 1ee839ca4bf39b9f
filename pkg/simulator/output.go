package simulator

import (
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// The output lines. Field order is key order, so each struct is the
// contract's line shape; omitempty drops the keys a line does not carry.

// allowed is {"pod":"p1","allowed":true}, with "queue" after it only when
// placement chose the queue (the line names none, or placement rules are
// configured).
type allowed struct {
	Pod     string `json:"pod"`
	Allowed bool   `json:"allowed"`
	Queue   string `json:"queue,omitempty"`
	// Borrowed is, by tree, the node above the pod's own it is allocated
	// at (a soft node's borrower: docs/forests.md); none when it is
	// allocated at its own node in every tree.
	Borrowed map[string]string `json:"borrowed,omitempty"`
}

// refused is {"pod":"p1","allowed":false,"reason":...} and, for a limit,
// who went over which one.
type refused struct {
	Pod     string `json:"pod"`
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason"`
	Who     string `json:"who,omitempty"`
	Name    string `json:"name,omitempty"`
	Queue   string `json:"queue,omitempty"`
	// Node is a quota tree's node (who "tree", name the tree).
	Node     string `json:"node,omitempty"`
	Limit    string `json:"limit,omitempty"`
	Resource string `json:"resource,omitempty"`
}

// podError is {"pod":"p1","error":"already allocated"}.
type podError struct {
	Pod   string `json:"pod"`
	Error string `json:"error"`
}

// releasedLine is {"pod":"p1","released":true|false}.
type releasedLine struct {
	Pod      string `json:"pod"`
	Released bool   `json:"released"`
}

// configLine is {"config":"applied"} or {"config":"rejected","errors":[...]}.
type configLine struct {
	Config string   `json:"config"`
	Errors []string `json:"errors,omitempty"`
}

// capacityLine is {"capacity":"applied"}.
type capacityLine struct {
	Capacity string `json:"capacity"`
}

// advanceLine is {"advance":"3m0s"}, a time line's output: how long the
// simulated clock moved on, as Go prints a duration.
type advanceLine struct {
	Advance string `json:"advance"`
}

// waitLine is {"wait":"3m0s"}, the same for a wait line.
type waitLine struct {
	Wait string `json:"wait"`
}

// gangDeclared is {"gang":"g1","declared":true}, a gang line's output.
type gangDeclared struct {
	Gang     string `json:"gang"`
	Declared bool   `json:"declared"`
}

// gangReserve is {"gang":"g1","reserved":true} when the gang's minimum is
// reserved, or {"gang":"g1","reserved":false,"reason":"..."} when it does
// not fit (once per wait), with "never":true when it never can. It comes
// right before the line of the pod whose decision reserved or refused it.
type gangReserve struct {
	Gang     string `json:"gang"`
	Reserved bool   `json:"reserved"`
	Reason   string `json:"reason,omitempty"`
	Never    bool   `json:"never,omitempty"`
}

// gangTimedOut is {"gang":"g1","timedout":true} when a reservation
// reaches its timeout, with "failed":true and the reason when a Hard gang
// short of its minimum fails.
type gangTimedOut struct {
	Gang     string `json:"gang"`
	TimedOut bool   `json:"timedout"`
	Failed   bool   `json:"failed,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// gangReleased is {"gang":"g1","released":true}: the reservation of a gang
// whose last pod was released (or withdrawn) went with it.
type gangReleased struct {
	Gang     string `json:"gang"`
	Released bool   `json:"released"`
}

// sharesLine is {"shares":[...]}: every queue of the share table, sorted by
// path.
type sharesLine struct {
	Shares []shareEntry `json:"shares"`
}

// shareEntry is one queue of a shares line. Guaranteed and Demand omit zero
// entries (resources.Vector's encoding); Max and Runtime list every bounded
// resource, 0 included, and omit unbounded ones. All keys are sorted.
type shareEntry struct {
	Queue      string           `json:"queue"`
	Guaranteed resources.Vector `json:"guaranteed"`
	Max        map[string]int64 `json:"max"`
	Demand     resources.Vector `json:"demand"`
	Runtime    map[string]int64 `json:"runtime"`
}

// lineError is {"line":N,"error":"..."} for a line that is not an operation
// the simulator can carry out.
type lineError struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// snapshot is the last line: usage as the REST endpoints show it, and with
// Options.Requeue the pods still held, in trace order ("pending":[] when
// none is; the key is absent without the option, as the contract's
// snapshot has it).
type snapshot struct {
	Users  []ugm.UserUsage  `json:"users"`
	Groups []ugm.GroupUsage `json:"groups"`
	Queues *ugm.QueueUsage  `json:"queues"`
	// Trees are the quota trees in force, each node with its quota and
	// usage (absent without trees: docs/forests.md).
	Trees   []ugm.ForestTree `json:"trees,omitempty"`
	Pending *[]string        `json:"pending,omitempty"`
}
