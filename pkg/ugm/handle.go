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
// makes the handle resolve again on its next use. A config change needs
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
	// The request it was resolved for.
	userName string
	queue    string
	app      AppKey
}

// valid reports whether h resolves req. Callers hold m.mu.
func (h *Handle) valid(req *Request) bool {
	return h != nil && h.a != nil && !h.a.ended &&
		h.userName == req.User && h.queue == req.Queue && h.app == req.App
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
	*h = Handle{a: a, groupName: group, leaf: a.leaf, user: a.userLeaf, group: a.groupLeaf, userName: req.User, queue: req.Queue, app: req.App}
}
