package ugm

// Handle is a request's place in the Manager, resolved once: its running
// application, its leaf queue and its user's and group's tracker nodes
// there. A check, commit or release through a valid handle skips the
// lookups by queue path, application, user and group (each a map probe
// and a few cache misses when many users are tracked) and climbs the
// tracker nodes from the leaf. The answer is the same as without it.
//
// A handle is bound to the user, queue and application it was resolved
// for and lives as long as that application runs: its end (app.ended)
// makes the handle resolve again on its next use. The end of any
// application on the same user leaf counts up the node's ends; only
// then does valid read the application itself. A config change needs
// no generation: while an application runs, its leaf queue and its
// tracker nodes stay the same objects (a queue or node goes only when
// empty), a config change updates their limits in place, and the checks
// that depend on the config (the leaf left it or became a parent) run on
// the handle's path too. TestDifferential checks handles against the
// model across config changes and ended applications.
//
// The zero value is unresolved. A Handle has no lock: each holder keeps
// its own (a pod's admission, a ledger's charge) and uses it from one
// goroutine at a time.
type Handle struct {
	a *app
	// leaf, user and group are a's (a.leaf, a.userLeaf, a.groupLeaf),
	// copied so that the check reads them without waiting for a.
	leaf        *queue
	user, group *node
	// groupName is a's group ("" for none).
	groupName string
	// ends is user.ends when h last found a running: while they are
	// equal a has not ended, and valid does not read a (one memory
	// access fewer on the check path, BenchmarkCheckHandle).
	ends uint64
	// The request it was resolved for.
	userName string
	queue    string
	app      AppKey
}

// valid reports whether h resolves req. Callers hold m.mu. It may note
// in h that its application still runs (h is the caller's own).
func (h *Handle) valid(req *Request) bool {
	if h == nil || h.a == nil || h.userName != req.User || h.queue != req.Queue || h.app != req.App {
		return false
	}
	// Equal: no application ended on h's user leaf since, so a runs.
	return h.user.ends == h.ends || h.stillRuns()
}

// stillRuns reports whether h's application runs, after an application
// ended on h's user leaf (valid's fast path did not hold), and notes it.
func (h *Handle) stillRuns() bool {
	if h.a.ended {
		return false
	}
	h.ends = h.user.ends
	return true
}

// resolve binds h to req's running application a (nil: none runs; h
// stays unresolved). a must run as req's user in req's queue. Callers
// hold m.mu; h is the caller's own.
func (h *Handle) resolve(req *Request, a *app) {
	if h == nil {
		return
	}
	if a == nil {
		*h = Handle{}
		return
	}
	group := ""
	if a.group != nil {
		group = a.group.name
	}
	*h = Handle{a: a, groupName: group, leaf: a.leaf, user: a.userLeaf, group: a.groupLeaf,
		ends: a.userLeaf.ends, userName: req.User, queue: req.Queue, app: req.App}
}

// Group is the group h's application is tracked against ("" for none or
// for a handle never resolved; a commit resolves its handle). h is the
// caller's own.
func (h *Handle) Group() string { return h.groupName }

// running returns h's application (nil: none), read without m.mu: h is the
// caller's own. Read before the lock, the handle's cache miss overlaps
// the request's (the lock is a fence on x86: what is read after it waits
// for what was read before).
func (h *Handle) running() *app {
	if h == nil {
		return nil
	}
	return h.a
}

// touch loads a's counters (nil: none) so that their cache miss overlaps
// the one of the handle's tracker nodes (the check's, or the release's
// validity test) rather than following it: the commit and the release
// write them. The test is never true (a running application holds at
// least one allocation); it keeps the load, which the compiler drops
// when nothing uses it. Callers hold m.mu for writing.
func (a *app) touch() {
	if a != nil && a.allocations < 0 {
		a.allocations = 0
	}
}
