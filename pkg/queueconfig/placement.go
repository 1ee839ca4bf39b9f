package queueconfig

import (
	"regexp"
	"sort"
	"strings"
)

// Placement rules are checked as YuniKorn checks them, so that a config
// YuniKorn would refuse is refused here too; pkg/placement runs them.

// Placement rule names, lower-cased as PlacementRule.Name holds them.
const (
	RuleProvided = "provided"
	RuleUser     = "user"
	RuleTag      = "tag"
	RuleFixed    = "fixed"
	// RulePrimaryGroup and RuleSecondaryGroup are the rules YuniKorn's
	// configuration design names (PrimaryGroupName, SecondaryGroupName):
	// the user's first group, and the first of the others whose queue
	// exists (docs/placement.md).
	RulePrimaryGroup   = "primarygroup"
	RuleSecondaryGroup = "secondarygroup"
)

// knownRules are the rule names a config may use.
var knownRules = map[string]bool{
	RuleProvided: true, RuleUser: true, RuleTag: true, RuleFixed: true,
	RulePrimaryGroup: true, RuleSecondaryGroup: true,
}

// knownRulesText lists them as the config spells them, for messages.
const knownRulesText = "provided, user, tag, fixed, primaryGroup or secondaryGroup"

// checkPlacementRules applies YuniKorn's placement rule checks: rule names,
// filters, and the fixed part of each rule chain against the queue tree.
func (v *validator) checkPlacementRules(pb *partBuild) {
	for _, r := range pb.raw.rules {
		v.checkRule(r)
	}
	if pb.part.Root == nil {
		return
	}
	for i, r := range pb.raw.rules {
		v.checkRulePath(pb, i, r)
	}
}

// checkRule checks one rule and its parent rules.
func (v *validator) checkRule(r *rawRule) {
	if !ruleNameRE.MatchString(r.rule.Name) {
		p := r.nameP
		if p.line == 0 {
			p = r.p
		}
		v.errs.at(p, "invalid placement rule name %q: a letter or _ first, then letters, digits or _", shorten(r.rule.Name))
	} else {
		v.checkRuleKind(r)
	}
	if r.parent != nil {
		v.checkRule(r.parent)
	}
	f := r.rule.Filter
	fp := r.filterP
	if fp.line == 0 {
		fp = r.p
	}
	if f.Type != "" && !strings.EqualFold(f.Type, "allow") && !strings.EqualFold(f.Type, "deny") {
		v.errs.at(fp, "invalid placement filter type %q: use allow or deny", shorten(f.Type))
	}
	// A single entry is a name or a regular expression; longer lists are
	// plain names, and entries that are not names are ignored (as YuniKorn).
	if len(f.Users) == 1 && !userRE.MatchString(f.Users[0]) && !isRegexp(f.Users[0]) {
		v.errs.at(fp, "invalid placement filter users %q: a single entry must be a user name or a regular expression", shorten(f.Users[0]))
	}
	if len(f.Groups) == 1 && !groupRE.MatchString(f.Groups[0]) && !isRegexp(f.Groups[0]) {
		v.errs.at(fp, "invalid placement filter groups %q: a single entry must be a group name or a regular expression", shorten(f.Groups[0]))
	}
}

// checkRuleKind checks a rule whose name is well formed: YuniKorn fails to
// build a rule set with a rule it does not know, a tag or fixed rule
// without a value, or a fixed rule giving a full path with a parent rule;
// each would otherwise load and never place a pod (or never run its
// parent rule).
func (v *validator) checkRuleKind(r *rawRule) {
	name := strings.ToLower(r.rule.Name)
	if !knownRules[name] {
		p := r.nameP
		if p.line == 0 {
			p = r.p
		}
		v.errs.at(p, "unknown placement rule %q: use %s", shorten(r.rule.Name), knownRulesText)
		return
	}
	value := strings.TrimSpace(r.rule.Value)
	switch {
	case name == RuleTag && value == "":
		v.errs.at(r.p, "a tag rule needs a value: the tag to read (namespace, or a label or annotation name)")
	case name == RuleFixed && value == "":
		v.errs.at(r.p, "a fixed rule needs a value: the queue to place pods in")
	case name == RuleFixed && r.parent != nil && isFullPath(value):
		v.errs.at(r.p, "a fixed rule with a full path (%s) takes no parent rule: the parent rule would never run", shorten(value))
	}
}

// isFullPath reports whether a fixed rule's value is a full queue path,
// which pkg/placement uses as is.
func isFullPath(value string) bool {
	v := strings.ToLower(value)
	return v == rootName || strings.HasPrefix(v, rootName+".")
}

// isRegexp reports whether s compiles and uses regexp syntax.
func isRegexp(s string) bool {
	if !specialRE.MatchString(s) {
		return false
	}
	_, err := regexp.Compile(s)
	return err == nil
}

// checkRulePath follows the fixed part of a rule chain (parents first) and
// checks it against the queues, as YuniKorn does: a chain that ends in fixed
// must name a leaf that exists (or may be created); a fixed part followed by
// dynamic rules must name a parent queue.
func (v *validator) checkRulePath(pb *partBuild, no int, r *rawRule) {
	var chain []*rawRule
	for x := r; x != nil; x = x.parent {
		chain = append([]*rawRule{x}, chain...)
	}
	var path, names string
	dynamic := false
	for _, x := range chain {
		name := strings.ToLower(x.rule.Name)
		if names == "" {
			names = name
		} else {
			names += "->" + name
		}
		if dynamic {
			continue
		}
		if name != "fixed" {
			if path == "" {
				path = "<dynamic>"
			}
			dynamic = true
			continue
		}
		value := x.rule.Value
		if strings.TrimSpace(value) == "" {
			return // reported by checkRuleKind
		}
		if strings.HasPrefix(value, rootName) {
			if path != "" {
				v.errs.at(r.p, "placement rule #%d (%s): only the first fixed rule of a chain may give a full path, got %q", no, names, shorten(value))
				return
			}
			path = value
			continue
		}
		if path == "" {
			path = rootName
		}
		path += "." + value
	}
	if !strings.HasPrefix(path, rootName) {
		return
	}
	parts := strings.Split(strings.ToLower(path), ".")
	level := []*Queue{pb.part.Root}
	var parent *Queue
	for i, part := range parts {
		if len(level) == 0 {
			if parent != nil && !parent.IsParent {
				v.errs.at(r.p, "placement rule #%d (%s) refers to %s, which cannot be created: %s is a leaf queue", no, names, shorten(path), parent.Path)
			} else if !r.rule.Create {
				v.errs.at(r.p, "placement rule #%d (%s) refers to %s, which does not exist, and create is false", no, names, shorten(path))
			}
			return
		}
		var q *Queue
		for _, c := range level {
			if c.Name == part {
				q = c
				break
			}
		}
		if q == nil {
			if !r.rule.Create {
				v.errs.at(r.p, "placement rule #%d (%s) refers to %s, which does not exist, and create is false", no, names, shorten(path))
			}
			return
		}
		if i == len(parts)-1 {
			switch {
			case dynamic && !q.IsParent:
				v.errs.at(r.p, "placement rule #%d (%s) puts queues below %s, which is a leaf queue", no, names, q.Path)
			case !dynamic && q.IsParent:
				v.errs.at(r.p, "placement rule #%d (%s) refers to %s, which is a parent queue, not a leaf", no, names, q.Path)
			}
			return
		}
		parent, level = q, q.Children
	}
}

// checkNodeSort applies YuniKorn's node sorting policy checks.
func (v *validator) checkNodeSort(pb *partBuild) {
	ns := pb.raw.nodeSort
	switch strings.ToLower(ns.Type) {
	case "", "fair", "binpacking":
	default:
		v.errs.at(pb.raw.nodeSortP, "unknown node sort policy %q: use fair or binpacking", shorten(ns.Type))
	}
	names := make([]string, 0, len(ns.ResourceWeights))
	for k := range ns.ResourceWeights {
		names = append(names, k)
	}
	sort.Strings(names) // errors in a stable order
	for _, k := range names {
		if w := ns.ResourceWeights[k]; w < 0 {
			v.errs.at(pb.raw.weightP[k], "negative resource weight %v for %s", w, shorten(k))
		}
	}
}
