package rest

import (
	"maps"
	"net/http"
	"slices"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/userquota/userquota/pkg/rest/dao"
	"github.com/userquota/userquota/pkg/ugm"
)

// SelfPattern is the route of the caller's own usage: authenticated, but
// with no SubjectAccessReview (Auth).
const SelfPattern = "/ws/v1/partition/{partition}/usage/me"

// selfGroupLookups is how many groups the caller's own usage looks up one
// by one (Usage.Group); with more candidates it copies every group once
// (Usage.Groups) and picks. Each lookup walks every running application
// under ugm's read lock, and an OIDC user may carry hundreds of groups.
const selfGroupLookups = 8

// self serves /ws/v1/partition/{partition}/usage/me: the usage of the
// caller the authenticator put in the request's context.
func (s *server) self(w http.ResponseWriter, r *http.Request) {
	if !s.partitionOK(w, r) {
		return
	}
	caller, ok := request.UserFrom(r.Context())
	if !ok || caller.GetName() == "" {
		writeError(w, http.StatusBadRequest, "no caller: this server does not authenticate requests",
			"/usage/me is the authenticated caller's own usage, and this server runs without authentication (restAuth: false): read /usage/user/NAME instead")
		return
	}
	writeJSON(w, http.StatusOK, selfUsage(s.opts.Usage, caller))
}

// selfUsage is caller's own usage and that of their groups, with other
// users' applications and gangs hidden (dao.Hidden).
func selfUsage(u Usage, caller user.Info) dao.SelfUsage {
	name := caller.GetName()
	groups := append([]string{}, caller.GetGroups()...)
	slices.Sort(groups)
	out := dao.SelfUsage{UserName: name, Groups: slices.Compact(groups), GroupUsage: []ugm.GroupUsage{}}
	uu, found := u.User(name)
	if !found {
		uu = ugm.UserUsage{UserName: name, Groups: map[string]string{}}
	}
	out.User = uu

	// Which groups: the caller's own, and those their running
	// applications are tracked against (a named group of the pod's
	// annotation, or "*"), whose limit holds their next pod.
	want := map[string]bool{}
	for _, g := range out.Groups {
		want[g] = true
	}
	for _, g := range uu.Groups {
		if g != "" {
			want[g] = true
		}
	}
	if len(want) <= selfGroupLookups {
		for _, g := range slices.Sorted(maps.Keys(want)) {
			if gu, ok := u.Group(g); ok {
				out.GroupUsage = append(out.GroupUsage, gu)
			}
		}
	} else {
		for _, gu := range u.Groups() { // sorted by name
			if want[gu.GroupName] {
				out.GroupUsage = append(out.GroupUsage, gu)
			}
		}
	}

	// What the caller may see by name: their running applications and
	// their gangs (all listed at the root of their tree).
	own := map[string]bool{}
	for app := range uu.Groups {
		own[app] = true
	}
	if uu.Queues != nil {
		for _, g := range uu.Queues.ReservedGangs {
			own[g] = true
		}
	}
	for i := range out.GroupUsage {
		gu := &out.GroupUsage[i]
		gu.Applications = hideOthers(gu.Applications, own)
		hideOthersInTree(gu.Queues, own)
	}
	return out
}

// hideOthers returns a sorted copy of names with each name not in own
// replaced by dao.Hidden (sorted again, so that where a hidden name stood
// tells nothing about it).
func hideOthers(names []string, own map[string]bool) []string {
	if names == nil {
		return nil
	}
	out := make([]string, len(names))
	for i, n := range names {
		if own[n] {
			out[i] = n
		} else {
			out[i] = dao.Hidden
		}
	}
	slices.Sort(out)
	return out
}

// hideOthersInTree applies hideOthers to the applications and gangs of
// every node of the tree.
func hideOthersInTree(q *ugm.QueueUsage, own map[string]bool) {
	if q == nil {
		return
	}
	q.RunningApplications = hideOthers(q.RunningApplications, own)
	q.ReservedGangs = hideOthers(q.ReservedGangs, own)
	for _, c := range q.Children {
		hideOthersInTree(c, own)
	}
}
