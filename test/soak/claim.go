package main

import (
	"time"
)

// behindClaim is what the leading scheduler says, when asked, of a pod
// that has fitted longer than the wait limit: the pod it keeps the
// room for (namespace/name; "" when it says the pod waits behind none),
// and that pod's own reason, checked now.
//
// Both pods' statuses may lag their reasons: after a config change every
// held pod's limit changes, and the status writer (20 writes a second, 1
// while pods bind) rewrites them over seconds or minutes, so a pod re-held behind a starving pod
// still shows its old limit, and so may the starving pod. The claim is
// checked against the history (starving) as a status is, and holds for
// claimTTL: a pod still waiting after that is asked about again.
type behindClaim struct {
	ahead, reason string
	at            time.Time // when asked (the wait check's clock)
	excused       bool      // it excused a wait (counted once)
}

// claimTTL is how long a claim excuses a wait before it is asked again.
const claimTTL = 5 * time.Second

// maxAsks bounds the pods one wait check asks the scheduler about.
const maxAsks = 8

// claimedBehind reports whether the scheduler said, in the last claimTTL,
// that p waits behind a pod the history finds starving ahead of it, held
// by a limit p counts against.
func (h *history) claimedBehind(p *podRec, cfgs []*qconfig, now time.Time) bool {
	c := p.claim
	if c == nil || c.ahead == "" || now.Sub(c.at) > claimTTL {
		return false
	}
	q := h.pods[h.keyOf(p, c.ahead)]
	if q == nil || !h.starving(q, p, c.reason, cfgs, now) {
		return false
	}
	if !c.excused {
		c.excused = true
		h.c.claimsExcused++
	}
	return true
}

// askClaims asks the scheduler about pods (outside the history's lock)
// and records its answers at now.
func (h *history) askClaims(pods []*podRec, now time.Time) {
	claims := make([]behindClaim, len(pods))
	for i, p := range pods {
		claims[i] = h.askBehind(p.ns, p.name)
		claims[i].at = now
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, p := range pods {
		p.claim = &claims[i]
	}
	h.c.claimsAsked += len(pods)
}
