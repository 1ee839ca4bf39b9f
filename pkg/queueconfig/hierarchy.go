package queueconfig

import "fmt"

// This file holds YuniKorn's hierarchical limit checks (checkLimitResource
// and checkLimitMaxApplications): a limit for a user or group on a queue
// must not be looser than the limit for the same name higher up, or, when no
// ancestor names it, than the wildcard ("*") limit of its kind higher up.
// Only the same name can be compared: group memberships are not known when
// the config is loaded.

// bound is the tightest limit found so far for one name on the way down
// from root, with the queue each value came from (for messages).
type bound struct {
	res      qtys
	resFrom  map[string]string // resource name -> queue path
	apps     uint64
	appsFrom string
}

// effective maps names to their bound, per kind, at one level of the tree.
type effective struct {
	users, groups map[string]*bound
}

func newEffective() effective {
	return effective{users: map[string]*bound{}, groups: map[string]*bound{}}
}

// checkHierarchy walks the tree top down. At each queue the bounds of the
// parent level are carried over, then tightened by the queue's own limits.
func (v *validator) checkHierarchy(pb *partBuild, q *Queue, parent effective) {
	cur := effective{users: make(map[string]*bound, len(parent.users)), groups: make(map[string]*bound, len(parent.groups))}
	for k, b := range parent.users {
		cur.users[k] = b
	}
	for k, b := range parent.groups {
		cur.groups[k] = b
	}
	for _, l := range pb.meta[q].limits {
		for i, u := range l.users {
			v.checkBound("user", u, l, l.usersP[i], q, parent.users, cur.users)
		}
		for i, g := range l.groups {
			v.checkBound("group", g, l, l.groupsP[i], q, parent.groups, cur.groups)
		}
	}
	for _, c := range q.Children {
		v.checkHierarchy(pb, c, cur)
	}
}

// checkBound compares one name of a limit on q with the bound above it and
// records the tightened bound for the levels below.
func (v *validator) checkBound(kind, name string, l *rawLimit, p pos, q *Queue, above, cur map[string]*bound) {
	up, ok := above[name]
	whose := fmt.Sprintf("%s %q", kind, shorten(name))
	if !ok && name != wildcard {
		if up, ok = above[wildcard]; ok {
			whose = fmt.Sprintf("the wildcard %s \"*\"", kind)
		}
	}
	mine := l.maxRes.q
	if !l.maxRes.ok {
		mine = nil // reported already; nothing to compare
	}
	if !ok {
		cur[name] = newBound(mine, l.maxApps, q.Path)
		return
	}
	if r, a, bad := mine.above(up.res); bad {
		v.errs.at(p, "%s %q: maxresources %s %s on %s is above the %s %s set for %s on %s",
			kind, shorten(name), r.name, r.raw, q.Path, a.name, a.raw, whose, up.resFrom[a.name])
	}
	if up.apps != 0 {
		switch {
		case l.maxApps == 0:
			v.errs.at(p, "%s %q: no maxapplications on %s, but %d is set for %s on %s: a limit below must not be looser, set maxapplications to at most %d",
				kind, shorten(name), q.Path, up.apps, whose, up.appsFrom, up.apps)
		case l.maxApps > up.apps:
			v.errs.at(p, "%s %q: maxapplications %d on %s is above the %d set for %s on %s",
				kind, shorten(name), l.maxApps, q.Path, up.apps, whose, up.appsFrom)
		}
	}
	cur[name] = tighten(up, mine, l.maxApps, q.Path)
}

func newBound(res qtys, apps uint64, from string) *bound {
	b := &bound{res: res, resFrom: map[string]string{}, apps: apps}
	for _, x := range res {
		b.resFrom[x.name] = from
	}
	if apps != 0 {
		b.appsFrom = from
	}
	return b
}

// tighten merges a limit into the bound above it: per resource the smaller
// value, and the smaller non-zero maxapplications (0 means no limit).
func tighten(up *bound, res qtys, apps uint64, from string) *bound {
	b := &bound{res: up.res.tightest(res), resFrom: map[string]string{}, apps: up.apps, appsFrom: up.appsFrom}
	for _, x := range b.res {
		if y, ok := res.get(x.name); ok && y.v == x.v {
			b.resFrom[x.name] = from
		} else {
			b.resFrom[x.name] = up.resFrom[x.name]
		}
	}
	if apps != 0 && (b.apps == 0 || apps < b.apps) {
		b.apps, b.appsFrom = apps, from
	}
	return b
}
