// Package ugm is the User Group Manager: it tracks, per user and per group,
// the resources and running applications on every queue of the path
// root..leaf, keeps the same aggregates per queue, and decides whether an
// increase fits every limit in force (YuniKorn's user/group limits and the
// queues' own max and maxapplications).
//
// Queues are those of the config, plus dynamic queues: a request whose
// placement rule may create its queue (Request.Create) creates it, and any
// missing parents, when it is committed, with the child template in force
// for it as its limits; a check never creates anything, and a dynamic queue
// goes with its last allocation.
//
// Room can be held before it is used: a pod's admission (admission.go),
// and a gang's reservation of its whole minimum, on which its pods draw
// (gang.go). Checks count held room as usage; snapshots do not.
//
// It has no Kubernetes scheduler or client imports, so it runs, is tested and
// is benchmarked on its own; the scheduler plugin and the simulator both
// drive it through package ledger.
//
// # Locking
//
// A Manager has one sync.RWMutex and it is the only lock in this package.
// Check and Decide take it for reading (Decide runs the caller's placement
// under it, so placement and limits come from one config); Increase,
// Decrease, Enforce/SetConfig and snapshots of mutable state take it for
// writing or reading as named on each method. The config in force
// (InForce) is stored under the write lock with the limits compiled from
// it, and read without a lock.
// Trackers, nodes and queues have no locks of their own: the Manager that
// owns them locks. One lock makes every increase all-or-nothing across user,
// group and queue (the seed documents' "user then group" order holds
// trivially), and a tracker removed while empty cannot race an increase that
// would have used it. Callers that hold their own lock (package ledger) take
// it before calling in: ledger.mu -> Manager.mu, never the reverse.
package ugm
