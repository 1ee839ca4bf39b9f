package hold

import (
	"github.com/userquota/userquota/pkg/errs"
	"github.com/userquota/userquota/pkg/ugm"
)

// Sieve makes a let-in pass over many pods held by one limit cheap: it
// remembers the smallest request each limit refused during the pass. A
// later pod held by the same limit that asks for at least as much cannot
// fit either (usage only grows during a pass: it admits, it never
// releases), so it is passed over without a decision. A pass is one
// release's, one config change's or one share change's let-in; a config
// change re-places pods, so it does not skip.
type Sieve map[sieveKey]int64

// sieveKey names a limit: who, where, which resource.
type sieveKey struct {
	who, name, queue, limit, resource string
	// node is a quota tree's node (ugm.WhoTree).
	node string
}

func refusalKey(reason error) (sieveKey, int64, bool) {
	r, ok := errs.As[*ugm.Refusal](reason)
	if !ok {
		return sieveKey{}, 0, false
	}
	return sieveKey{r.Who, r.Name, r.Queue, r.Limit, r.Resource, r.Node}, r.Request, true
}

// Refused records a refusal of this pass.
func (s Sieve) Refused(reason error) {
	k, req, ok := refusalKey(reason)
	if !ok {
		return
	}
	if min, seen := s[k]; !seen || req < min {
		s[k] = req
	}
}

// Skip reports whether a pod held for reason (its recorded refusal) cannot
// fit now: the same limit refused a request no larger during this pass.
func (s Sieve) Skip(reason error) bool {
	k, req, ok := refusalKey(reason)
	if !ok {
		return false
	}
	min, seen := s[k]
	return seen && req >= min
}
