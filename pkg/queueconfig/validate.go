package queueconfig

import (
	"fmt"
	"regexp"
	"strings"
)

// This file holds the rules of YuniKorn's config validator
// (yunikorn-core pkg/common/configs/configvalidator.go) in our model, plus
// the ones design.md adds. Every rule reports every violation it finds;
// a check whose inputs already failed to parse is skipped, so one typo does
// not cascade into several messages.

// Names, as YuniKorn's validator and docs define them.
var (
	// queueNameRE: 1 to 64 of letters, digits and _ - : # / @. No dots:
	// a dot separates the levels of a queue path.
	queueNameRE = regexp.MustCompile(`^[a-zA-Z0-9_:#/@-]{1,64}$`)
	// userRE: a letter or _, then letters, digits and _ : # / @ . -,
	// optionally ending in $.
	userRE = regexp.MustCompile(`^[_a-zA-Z][a-zA-Z0-9_:#/@.-]*[$]?$`)
	// groupRE: a letter or _, then letters, digits and _ : . -
	groupRE = regexp.MustCompile(`^[_a-zA-Z][a-zA-Z0-9_:.-]*$`)
	// ruleNameRE: a Go identifier.
	ruleNameRE = regexp.MustCompile(`^[_a-zA-Z][a-zA-Z0-9_]*$`)
	// specialRE finds the characters that make a filter entry a regexp.
	specialRE = regexp.MustCompile(`[\^$*+?()\[{}|]`)
)

const wildcard = "*"

type validator struct {
	errs *errorList
}

// validatePartitions checks what spans partitions: there is at least one,
// and their names are unique.
func (v *validator) validatePartitions(rc *rawConfig) {
	if len(rc.partitions) == 0 {
		p := rc.p
		if p.line == 0 {
			p = pos{line: 1, path: "partitions"}
		}
		v.errs.at(p, "no partitions defined: a config needs at least one partition with its queues")
		return
	}
	seen := map[string]pos{}
	for _, rp := range rc.partitions {
		name := partitionName(rp.name)
		if first, dup := seen[name]; dup {
			v.errs.at(rp.p, "duplicate partition name %q (first at %s)", name, where(first, rp.p))
			continue
		}
		seen[name] = rp.p
	}
}

// where renders a position for "first at ..." references: its line, or its
// path when it is on the same line as cur (a flow list) or has no line.
func where(p, cur pos) string {
	if p.line > 0 && p.line != cur.line {
		return fmt.Sprintf("line %d", p.line)
	}
	return p.path
}

// validatePartition runs every per-partition rule.
func (v *validator) validatePartition(pb *partBuild) {
	rp := pb.raw
	if !rp.queuesSet {
		v.errs.at(rp.p, "partition %q has no queues list", pb.part.Name)
	} else {
		root := pb.part.Root
		v.checkRoot(pb, root)
		for _, q := range pb.order {
			v.checkQueue(pb, q)
		}
		v.checkGuaranteed(pb, root, nil)
		v.checkSharing(pb)
		// preemption.* and application.sort.policy, on every queue and
		// child template.
		v.eachProperties(pb, v.checkPreemptionProps)
		v.eachProperties(pb, v.checkAppSortProp)
		v.checkFairness(pb)
		v.checkHierarchy(pb, root, newEffective())
	}
	v.checkPlacementRules(pb)
	v.checkNodeSort(pb)
}

// checkRoot: root takes no resources (it is bounded by the cluster), and
// partition limits, which are root's limits, must agree with root's own.
func (v *validator) checkRoot(pb *partBuild, root *Queue) {
	m := pb.meta[root]
	if rq := m.raw; rq != nil && (rq.guaranteed.given || rq.max.given) {
		v.errs.at(rq.resourcesP, "root queue must not have resources (max or guaranteed) set: root is bounded by the cluster itself")
	}
	if m.raw != nil && len(m.raw.limits) > 0 && len(pb.raw.limits) > 0 && !sameLimits(m.raw.limits, pb.raw.limits) {
		v.errs.at(pb.raw.limitsP, "partition limits and root queue limits are not equivalent: partition limits are root's limits, give them in one place")
	}
}

// sameLimits is YuniKorn's deep equality of two limit lists, on the values
// as written.
func sameLimits(a, b []*rawLimit) bool {
	if len(a) != len(b) {
		return false
	}
	eq := func(x, y []string) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.desc != y.desc || x.maxApps != y.maxApps || !eq(x.users, y.users) || !eq(x.groups, y.groups) ||
			len(x.maxRes.raw) != len(y.maxRes.raw) {
			return false
		}
		for k, s := range x.maxRes.raw {
			if t, ok := y.maxRes.raw[k]; !ok || s != t {
				return false
			}
		}
	}
	return true
}

// checkQueue runs the rules about one queue and its direct children.
func (v *validator) checkQueue(pb *partBuild, q *Queue) {
	m := pb.meta[q]
	if rq := m.raw; rq != nil {
		if q.Parent != nil { // root's name was matched already
			v.checkQueueName(q, rq)
		}
		if rq.adminSet {
			v.checkACL("adminacl", rq.adminACL, q.Path, rq.adminACLP)
		}
		if rq.submitSet {
			v.checkACL("submitacl", rq.submitACL, q.Path, rq.submitACLP)
		}
		if rq.guaranteed.ok && rq.max.ok {
			if g, mx, bad := rq.guaranteed.q.above(rq.max.q); bad {
				v.errs.at(rq.guaranteed.p, "guaranteed %s %s of %s is above its max %s", g.name, g.raw, q.Path, mx.raw)
			}
		}
	}

	// Sibling names are unique, ignoring case (YuniKorn lower-cases names).
	seen := map[string]*Queue{}
	for _, c := range q.Children {
		if c.Name == "" {
			continue
		}
		if first, dup := seen[c.Name]; dup {
			v.errs.at(pb.meta[c].p, "duplicate queue name %q under %s (first at %s); queue names ignore case",
				c.Name, q.Path, where(pb.meta[first].p, pb.meta[c].p))
			continue
		}
		seen[c.Name] = c
	}

	// maxapplications: a parent that sets it bounds every child, and each
	// child must set its own, at most the parent's (YuniKorn's rule).
	if q.MaxApplications != 0 {
		for _, c := range q.Children {
			cm := pb.meta[c]
			switch {
			case c.MaxApplications == 0:
				v.errs.at(cm.p, "maxapplications of %s is not set, but its parent %s sets %d: a child of a queue with maxapplications must set its own, at most the parent's",
					c.Path, q.Path, q.MaxApplications)
			case c.MaxApplications > q.MaxApplications:
				v.errs.at(childAppsPos(cm), "maxapplications %d of %s is above %d of its parent %s",
					c.MaxApplications, c.Path, q.MaxApplications, q.Path)
			}
		}
	}

	v.checkLimits(pb, q)
}

func childAppsPos(m *queueMeta) pos {
	if m.raw != nil && m.raw.maxAppsP.line > 0 {
		return m.raw.maxAppsP
	}
	return m.p
}

// checkQueueName applies YuniKorn's queue name rule.
func (v *validator) checkQueueName(q *Queue, rq *rawQueue) {
	p := rq.nameP
	if p.line == 0 {
		p = rq.p
	}
	switch {
	case rq.name == "":
		v.errs.at(p, "queue name is missing")
	case strings.Contains(rq.name, "."):
		v.errs.at(p, "invalid queue name %q: a dot separates the levels of a queue path, so names cannot contain one", shorten(rq.name))
	case !queueNameRE.MatchString(rq.name):
		v.errs.at(p, "invalid queue name %q: use 1 to 64 letters, digits, or _ - : # / @", shorten(rq.name))
	}
}

// checkACL applies YuniKorn's ACL syntax: "*", empty, or "users groups"
// (comma-separated lists, one space between them). YuniKorn refuses an ACL
// with a second space; here its entries after that space would never
// match (" ops" is no group name), so the ACL would load and quietly deny
// them: refused too. A wildcard or an empty ACL with spaces around it is
// kept, as it says what it means.
func (v *validator) checkACL(key, acl, queue string, p pos) {
	t := strings.TrimSpace(acl)
	if t == "" || t == wildcard {
		return
	}
	switch {
	case len(strings.Fields(t)) > 2:
		v.errs.at(p, "invalid %s %q on %s: an ACL is a comma-separated user list, a space, then a comma-separated group list", key, shorten(acl), queue)
	case strings.Count(acl, " ") > 1:
		v.errs.at(p, "invalid %s %q on %s: it holds more than one space; an ACL is a comma-separated user list, one space, then a comma-separated group list, without spaces after commas (an entry after a second space would never match; YuniKorn refuses it too)", key, shorten(acl), queue)
	}
}

// limitName names a limit entry in messages: `limit "desc"`, or just
// "limit" when it has no description (the path tells which).
func limitName(l *rawLimit) string {
	if l.desc == "" {
		return "limit"
	}
	return fmt.Sprintf("limit %q", shorten(l.desc))
}

// checkLimits applies the rules of one queue's limit list: names, duplicates,
// wildcard ordering, values, and the queue's own max and maxapplications.
func (v *validator) checkLimits(pb *partBuild, q *Queue) {
	m := pb.meta[q]
	users := map[string]pos{}
	groups := map[string]pos{}
	userWild, groupWild, groupWildReported := false, false, false
	var rq *rawQueue = m.raw
	for _, l := range m.limits {
		if len(l.users) == 0 && len(l.groups) == 0 {
			v.errs.at(l.p, "%s on %s names no users and no groups", limitName(l), q.Path)
		}
		for i, u := range l.users {
			up := l.usersP[i]
			if u != wildcard && !userRE.MatchString(u) {
				v.errs.at(up, "invalid user name %q: a letter or _ first, then letters, digits or _ : # / @ . - (optionally ending in $)", shorten(u))
			}
			if first, dup := users[u]; dup {
				v.errs.at(up, "user %q is listed twice in the limits of %s (first at %s)", shorten(u), q.Path, where(first, up))
				continue
			}
			users[u] = up
			if userWild && u != wildcard {
				v.errs.at(up, "user %q comes after the wildcard user \"*\" in the limits of %s: the wildcard must come after every named user", shorten(u), q.Path)
			}
			if u == wildcard {
				userWild = true
			}
		}
		for i, g := range l.groups {
			gp := l.groupsP[i]
			if g != wildcard && !groupRE.MatchString(g) {
				v.errs.at(gp, "invalid group name %q: a letter or _ first, then letters, digits or _ : . -", shorten(g))
			}
			if first, dup := groups[g]; dup {
				v.errs.at(gp, "group %q is listed twice in the limits of %s (first at %s)", shorten(g), q.Path, where(first, gp))
				continue
			}
			groups[g] = gp
			if groupWild && g != wildcard {
				v.errs.at(gp, "group %q comes after the wildcard group \"*\" in the limits of %s: the wildcard must come after every named group", shorten(g), q.Path)
			}
			if g == wildcard {
				groupWild = true
			}
		}
		if groupWild && len(groups) == 1 && !groupWildReported {
			groupWildReported = true
			v.errs.at(groups[wildcard], "the wildcard group \"*\" on %s needs a named group limit before it: alone it would only repeat the queue's own limit", q.Path)
		}

		res := l.maxRes
		if res.ok && res.q.allZero() {
			v.errs.at(res.p, "%s on %s: every maxresources value is 0, which blocks everything; set at least one above 0", limitName(l), q.Path)
		}
		if res.ok && len(res.q) == 0 && l.maxApps == 0 {
			v.errs.at(l.p, "%s on %s sets neither maxresources nor maxapplications, so it limits nothing", limitName(l), q.Path)
		}
		if q.MaxApplications != 0 && l.maxApps > q.MaxApplications {
			v.errs.at(appsPos(l), "%s on %s: maxapplications %d is above the queue's maxapplications %d",
				limitName(l), q.Path, l.maxApps, q.MaxApplications)
		}
		if rq != nil && q.Parent != nil && res.ok && rq.max.ok {
			if mine, theirs, bad := res.q.above(rq.max.q); bad {
				v.errs.at(res.p, "%s on %s: maxresources %s %s is above the queue's max %s %s",
					limitName(l), q.Path, mine.name, mine.raw, theirs.name, theirs.raw)
			}
		}
	}
}

func appsPos(l *rawLimit) pos {
	if l.appsP.line > 0 {
		return l.appsP
	}
	return l.p
}

// checkGuaranteed applies YuniKorn's queue resource rules, top down: a
// child's max is not above the max that applies to its parent (the tightest
// on the way to root), and the children's guaranteed resources add up to no
// more than the parent's guaranteed nor its max. It returns the queue's
// guaranteed resources, or its children's sum when it sets none.
func (v *validator) checkGuaranteed(pb *partBuild, q *Queue, parentMax qtys) qtys {
	m := pb.meta[q]
	var g, mx qtys
	ok := true
	if rq := m.raw; rq != nil {
		g, mx = rq.guaranteed.q, rq.max.q
		ok = rq.guaranteed.ok && rq.max.ok
		if rq.max.ok {
			if mine, theirs, bad := mx.above(parentMax); bad {
				v.errs.at(rq.max.p, "max %s %s of %s is above the max %s that applies to its parent %s",
					mine.name, mine.raw, q.Path, theirs.raw, q.Parent.Path)
			}
		}
	}
	eff := mx.tightest(parentMax)
	var sum qtys
	for _, c := range q.Children {
		sum = sum.plus(v.checkGuaranteed(pb, c, eff))
	}
	if ok && len(q.Children) > 0 {
		if !g.isZero() {
			if s, mine, bad := sum.above(g); bad {
				v.errs.at(m.p, "the children of %s have guaranteed %s %s in sum, above its own guaranteed %s",
					q.Path, s.name, s.raw, mine.raw)
			}
		}
		if s, mine, bad := sum.above(eff); bad {
			v.errs.at(m.p, "the children of %s have guaranteed %s %s in sum, above the max %s that applies to it",
				q.Path, s.name, s.raw, mine.raw)
		}
	}
	if !ok {
		return nil
	}
	if g.isZero() {
		return sum
	}
	return g
}

// eachProperties calls check with the properties of every queue and
// child template of the partition, and where they are in the YAML.
func (v *validator) eachProperties(pb *partBuild, check func(props map[string]string, p pos)) {
	for _, q := range pb.order {
		rq := pb.meta[q].raw
		if rq == nil {
			continue
		}
		check(rq.properties, rq.propertiesP)
		if rq.childTemplate != nil {
			check(rq.childTemplate.Properties, childPos(rq.childTemplateP, "properties", rq.childTemplateP.line))
		}
	}
}
