package placement

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/userquota/userquota/pkg/queueconfig"
)

// filter restricts a rule to some users or groups, as YuniKorn's rule
// filter: an entry list of exactly one item is a regular expression when it
// holds a character no name may hold, else a name; longer lists are names
// (entries that are not valid names are ignored). Names match exactly;
// regular expressions match anywhere in the name unless anchored (YuniKorn
// uses MatchString). The user is checked first, then each group in order;
// a match gives the filter's type (allow or deny), no match the opposite.
// A filter that lists nothing gives its type: an allow filter lets
// everyone through, a deny filter no one.
type filter struct {
	allow          bool
	empty          bool
	users, groups  map[string]bool
	userRE, groupR *regexp.Regexp
	desc           string
}

func compileFilter(f queueconfig.Filter) filter {
	out := filter{allow: !strings.EqualFold(f.Type, "deny"), empty: true}
	out.users, out.userRE = filterEntries(f.Users, queueconfig.IsUserName)
	out.groups, out.groupR = filterEntries(f.Groups, queueconfig.IsGroupName)
	if len(f.Users) > 0 || len(f.Groups) > 0 {
		out.empty = false
	}
	kind := "allow"
	if !out.allow {
		kind = "deny"
	}
	var parts []string
	if len(f.Users) > 0 {
		parts = append(parts, "users "+strings.Join(f.Users, ","))
	}
	if len(f.Groups) > 0 {
		parts = append(parts, "groups "+strings.Join(f.Groups, ","))
	}
	if len(parts) > 0 {
		out.desc = kind + " " + strings.Join(parts, " ")
	}
	return out
}

func filterEntries(list []string, valid func(string) bool) (map[string]bool, *regexp.Regexp) {
	if len(list) == 1 && queueconfig.IsFilterRegexp(list[0]) {
		// The validator made sure it compiles; one that does not matches
		// nothing, as in YuniKorn.
		re, _ := regexp.Compile(list[0])
		return nil, re
	}
	m := map[string]bool{}
	for _, n := range list {
		if valid(n) {
			m[n] = true
		}
	}
	return m, nil
}

// allows applies the filter to a user and their groups.
func (f *filter) allows(user string, groups []string) bool {
	if f.empty {
		return f.allow
	}
	if f.users[user] || f.userRE != nil && f.userRE.MatchString(user) {
		return f.allow
	}
	for _, g := range groups {
		if f.groups[g] || f.groupR != nil && f.groupR.MatchString(g) {
			return f.allow
		}
	}
	return !f.allow
}

// refusal says why the filter turned the user away.
func (f *filter) refusal(user string, groups []string) string {
	g := "no groups"
	if len(groups) > 0 {
		g = "groups " + strings.Join(groups, ",")
	}
	return fmt.Sprintf("filter (%s) does not let user %q (%s) through", f.desc, user, g)
}
