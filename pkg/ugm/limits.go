package ugm

import (
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
)

// wildcard is the user or group name that matches everyone.
const wildcard = "*"

// limitEntry is one limit in force for one user or group on one queue.
// Entries are immutable and shared by every node they apply to.
type limitEntry struct {
	maxResources    resources.Limit // nil: no resource limit
	maxApplications uint64          // 0: no application limit
}

// queueLimits is what one queue of the config imposes, compiled once per
// config load so the check path only does pointer and map lookups.
type queueLimits struct {
	users         map[string]*limitEntry
	userWildcard  *limitEntry
	groups        map[string]*limitEntry
	groupWildcard *limitEntry
	// groupRank orders named groups for resolution: the index of the first
	// limit entry naming the group, then its place in that entry's list.
	groupRank map[string]int
	max       resources.Limit
	maxApps   uint64
	isParent  bool
	// share is the queue's input to the share computation; nil for
	// queues without settings (dynamic parents).
	share *shareSpec
}

func compileQueue(q *queueconfig.Queue) *queueLimits {
	ql := &queueLimits{
		max:      q.Max,
		maxApps:  q.MaxApplications,
		isParent: q.IsParent,
		share:    compileShare(q.Guaranteed, q.Max, q.Sharing),
	}
	rank := 0
	for _, l := range q.Limits {
		e := &limitEntry{maxResources: l.MaxResources, maxApplications: l.MaxApplications}
		for _, u := range l.Users {
			if u == wildcard {
				if ql.userWildcard == nil {
					ql.userWildcard = e
				}
				continue
			}
			if ql.users == nil {
				ql.users = map[string]*limitEntry{}
			}
			if _, dup := ql.users[u]; !dup {
				ql.users[u] = e
			}
		}
		for _, g := range l.Groups {
			if g == wildcard {
				if ql.groupWildcard == nil {
					ql.groupWildcard = e
				}
				continue
			}
			if ql.groups == nil {
				ql.groups = map[string]*limitEntry{}
				ql.groupRank = map[string]int{}
			}
			if _, dup := ql.groups[g]; !dup {
				ql.groups[g] = e
				ql.groupRank[g] = rank
				rank++
			}
		}
	}
	return ql
}

// userLimit returns the limit for user on this queue: a named entry beats
// the wildcard.
func (ql *queueLimits) userLimit(user string) *limitEntry {
	if ql == nil {
		return nil
	}
	if len(ql.users) > 0 {
		if e, ok := ql.users[user]; ok {
			return e
		}
	}
	return ql.userWildcard
}

// groupLimit returns the limit for a tracked group on this queue: its named
// entry, else the wildcard entry. For the cumulative group "*" that is the
// wildcard entry itself; for a named group on a queue that does not name it,
// "*" is the default limit of every group, as YuniKorn's validator assumes
// when it checks a child's named group limit against an ancestor's "*".
func (ql *queueLimits) groupLimit(group string) *limitEntry {
	if ql == nil {
		return nil
	}
	if len(ql.groups) > 0 {
		if e, ok := ql.groups[group]; ok {
			return e
		}
	}
	return ql.groupWildcard
}

// matchGroup returns the group this queue resolves for a user with the
// given groups: the named group of the earliest limit entry, else "*" when a
// wildcard group entry exists, else "".
func (ql *queueLimits) matchGroup(groups []string) string {
	if ql == nil || len(groups) == 0 {
		return ""
	}
	best, bestRank := "", -1
	if len(ql.groupRank) > 0 {
		for _, g := range groups {
			if r, ok := ql.groupRank[g]; ok && (bestRank < 0 || r < bestRank) {
				best, bestRank = g, r
			}
		}
	}
	if best != "" {
		return best
	}
	if ql.groupWildcard != nil {
		return wildcard
	}
	return ""
}
