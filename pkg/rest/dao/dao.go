// Package dao holds the response types of the REST API (pkg/rest) that are
// ours and that clients decode too (userquotactl), apart from pkg/rest so
// that a client does not link the server's dependencies (the API server's
// authentication libraries). YuniKorn keeps its response types in a
// package of this name; the shapes borrowed from YuniKorn (users, groups,
// queue nodes) are ugm's.
package dao

import "github.com/userquota/userquota/pkg/ugm"

// HeaderLeader says on every answer of a leader-only path whether the
// replica that answered leads ("true" or "false"): a client that reached a
// follower asks another replica (the webhook's resize check does).
const HeaderLeader = "X-Userquota-Leader"

// Hidden stands for an application or a gang of another user in the group
// usage of a SelfUsage: a group's numbers are everyone's in the group (what
// its limit is compared with), but the caller sees only their own
// applications and gangs by name. It keeps the lists' lengths, so the
// applications column still counts what maxapplications counts. No
// application id or gang key can be it: those always contain "/".
const Hidden = "(another user's)"

// SelfUsage is the answer of GET /ws/v1/partition/{p}/usage/me: the
// authenticated caller's own usage and their groups' (docs/api.md).
type SelfUsage struct {
	// UserName is the caller as the API server authenticated them
	// (TokenReview): the name the admission webhook stamps on their pods.
	UserName string `json:"userName"`
	// Groups are the caller's groups as the API server gave them, sorted,
	// unfiltered (the webhook's --quota-groups is not known here).
	Groups []string `json:"groups"`
	// User is the caller's usage, as /usage/user/{userName} answers it; a
	// caller with nothing running and no gang reservation has no queues
	// (null) and no groups ({}).
	User ugm.UserUsage `json:"user"`
	// GroupUsage is the usage of each group the scheduler tracks that is
	// one of Groups or that one of the caller's running applications is
	// tracked against (the catch-all group "*" too), sorted by name, with
	// other users' applications and gangs named Hidden. Empty: none.
	GroupUsage []ugm.GroupUsage `json:"groupUsage"`
}
