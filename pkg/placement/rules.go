package placement

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/userquota/userquota/pkg/queueconfig"
)

// Rule names, as YuniKorn spells them (lower-cased by the parser).
const (
	ruleProvided       = queueconfig.RuleProvided
	ruleUser           = queueconfig.RuleUser
	ruleTag            = queueconfig.RuleTag
	ruleFixed          = queueconfig.RuleFixed
	rulePrimaryGroup   = queueconfig.RulePrimaryGroup
	ruleSecondaryGroup = queueconfig.RuleSecondaryGroup
)

// ruleDisplay spells the group rules as the config does, for messages.
var ruleDisplay = map[string]string{
	rulePrimaryGroup:   "primaryGroup",
	ruleSecondaryGroup: "secondaryGroup",
}

// displayName is the rule's name as messages spell it.
func displayName(name string) string {
	if d, ok := ruleDisplay[name]; ok {
		return d
	}
	return name
}

// fromIdentity reports whether the rule names its queue after who submits
// (the user or a group): such a name is never a full path, whatever it
// holds, so a user or group "root.x" cannot pick a queue by its name.
func fromIdentity(name string) bool {
	return name == ruleUser || name == rulePrimaryGroup || name == ruleSecondaryGroup
}

// dotReplacement replaces a dot in a generated queue name: a dot separates
// the levels of a path, so a user "john.doe" gets the queue john_dot_doe.
const dotReplacement = "_dot_"

// rule is one compiled placement rule, possibly with a parent rule that
// names the queue it creates its queue under. Immutable.
type rule struct {
	name   string
	value  string // fixed: the queue; tag: the tag name; lower-cased
	create bool
	filter filter
	parent *rule
	// display is the name as messages spell it (displayName), text the
	// whole rule (String): built once, as every placed pod's Result
	// carries text.
	display string
	text    string
}

func compileRule(r *queueconfig.PlacementRule) *rule {
	out := &rule{
		name:   r.Name,
		value:  strings.ToLower(r.Value),
		create: r.Create,
		filter: compileFilter(r.Filter),
	}
	if r.Parent != nil {
		out.parent = compileRule(r.Parent)
	}
	out.display = displayName(out.name)
	out.text = out.describe()
	return out
}

// String describes the rule for messages: "tag namespace (create, parent
// fixed root.namespaces, filter allow users john)".
func (r *rule) String() string { return r.text }

// describe builds String's text, once, at compile.
func (r *rule) describe() string {
	s := r.display
	if r.value != "" {
		s += " " + r.value
	}
	var opts []string
	if r.create {
		opts = append(opts, "create")
	}
	if r.parent != nil {
		opts = append(opts, "parent "+r.parent.String())
	}
	if r.filter.desc != "" {
		opts = append(opts, "filter "+r.filter.desc)
	}
	if len(opts) > 0 {
		s += " (" + strings.Join(opts, ", ") + ")"
	}
	return s
}

// mayCreate reports whether a queue the rule placed a pod in may be
// created: never for secondaryGroup, which only places in a queue that
// exists (its create flag has no effect; the config notice says so).
func (r *rule) mayCreate() bool {
	return r.create && r.name != ruleSecondaryGroup
}

// place runs the rule for in. It returns the full path of the queue the
// rule names, lower-cased, which exists or may be created (create is set);
// or "" and why the rule does not match; or an error that refuses the pod
// (an invalid queue name, a parent rule naming a leaf), as in YuniKorn.
func (r *rule) place(pol *Policy, in *Input, qs Queues) (path, why string, err error) {
	var name string
	var secondary []string // secondaryGroup: the user's secondary groups
	switch r.name {
	case ruleProvided:
		if in.Queue == "" {
			return "", "the pod names no queue", nil
		}
		name = in.Queue
	case ruleTag:
		if name = tagValue(in, r.value); name == "" {
			return "", fmt.Sprintf("the pod has no %s", tagWhat(r.value)), nil
		}
	case ruleUser:
		name = in.User
	case rulePrimaryGroup:
		if len(in.Groups) == 0 {
			return "", fmt.Sprintf("user %q has no groups", in.User), nil
		}
		name = in.Groups[0]
	case ruleSecondaryGroup:
		if secondary = secondaryGroups(in.Groups); len(secondary) == 0 {
			return "", fmt.Sprintf("user %q has no secondary groups", in.User), nil
		}
	case ruleFixed:
		name = r.value
	default:
		// The config refuses a rule name it does not know (as YuniKorn
		// refuses to build such a rule set); never match one regardless.
		return "", fmt.Sprintf("unknown rule %q (known: provided, user, tag, fixed, primaryGroup, secondaryGroup)", r.name), nil
	}
	if !r.filter.allows(in.User, in.Groups) {
		return "", r.filter.refusal(in.User, in.Groups), nil
	}
	if r.name == ruleSecondaryGroup {
		return r.placeSecondary(pol, in, qs, secondary)
	}
	name = strings.ToLower(name)
	switch {
	case !fromIdentity(r.name) && (strings.HasPrefix(name, "root.") || r.name == ruleFixed && name == "root"):
		// A full path: the parent rule is not run.
		for _, part := range strings.Split(name, ".") {
			if !queueconfig.IsQueueName(part) {
				return "", "", fmt.Errorf("%q is not a valid queue path: %q is not a queue name (1 to 64 of letters, digits and _ - : # / @)", name, part)
			}
		}
		path = name
	case r.name == ruleProvided && r.parent == nil && pol.part != nil:
		// Our extension (as without rules): a name that resolves to a
		// configured queue, root.NAME or the one leaf called NAME, is that
		// queue; an ambiguous one is an error. Anything else is placed as
		// YuniKorn does, root.NAME with dots replaced.
		resolved, rerr := queueconfig.ResolveQueue(pol.part, name)
		var re *queueconfig.ResolveError
		switch {
		case rerr == nil && pol.part.Queue(resolved) != nil:
			path = resolved
		case errors.As(rerr, &re) && len(re.Candidates) > 0:
			from := ""
			if in.QueueFrom != "" {
				from = " (from " + in.QueueFrom + ")"
			}
			return "", "", fmt.Errorf("queue %q%s %s", re.Name, from, re.Reason())
		}
	}
	if path == "" {
		child := strings.ReplaceAll(name, ".", dotReplacement)
		if !queueconfig.IsQueueName(child) {
			return "", "", fmt.Errorf("%q is not a valid queue name (1 to 64 of letters, digits and _ - : # / @)", child)
		}
		parent, pwhy, perr := r.parentPath(pol, in, qs)
		if perr != nil || parent == "" {
			return "", pwhy, perr
		}
		path = parent + "." + child
	}
	if !r.create && !pol.state(path, qs).exists {
		return "", fmt.Sprintf("%s does not exist and create is false", path), nil
	}
	return path, "", nil
}

// parentPath runs the rule's parent rule: the queue the rule's queue goes
// below, root without a parent rule. "" and why when the parent rule
// yields nothing; an error when it refuses the pod or gives a leaf.
func (r *rule) parentPath(pol *Policy, in *Input, qs Queues) (parent, why string, err error) {
	if r.parent == nil {
		return "root", "", nil
	}
	pname := r.parent.display
	pp, pwhy, perr := r.parent.place(pol, in, qs)
	if perr != nil {
		return "", "", fmt.Errorf("parent rule %s: %w", pname, perr)
	}
	if pp == "" {
		return "", fmt.Sprintf("parent rule %s: %s", pname, pwhy), nil
	}
	if st := pol.state(pp, qs); st.exists && st.leaf {
		return "", "", fmt.Errorf("parent rule %s gave %s, which is a leaf queue", pname, pp)
	}
	return pp, "", nil
}

// secondaryGroups are the user's groups after the first (the primary),
// without the primary group listed again.
func secondaryGroups(groups []string) []string {
	if len(groups) < 2 {
		return nil
	}
	out := make([]string, 0, len(groups)-1)
	for _, g := range groups[1:] {
		if g != "" && g != groups[0] {
			out = append(out, g)
		}
	}
	return out
}

// maxListed bounds the queues a secondaryGroup message lists.
const maxListed = 5

// placeSecondary is the secondaryGroup rule after its filter: the queue,
// below the parent rule's queue (root without one), named after the first
// of the user's secondary groups (secondaryGroups of in.Groups) for which
// that queue exists, configured or dynamic. It
// never creates a queue; a group whose name is no queue name cannot have
// one and is passed over.
func (r *rule) placeSecondary(pol *Policy, in *Input, qs Queues, secondary []string) (path, why string, err error) {
	parent, pwhy, perr := r.parentPath(pol, in, qs)
	if perr != nil || parent == "" {
		return "", pwhy, perr
	}
	var missing []string
	for _, g := range secondary {
		child := strings.ReplaceAll(strings.ToLower(g), ".", dotReplacement)
		if !queueconfig.IsQueueName(child) {
			continue
		}
		p := parent + "." + child
		if pol.state(p, qs).exists {
			return p, "", nil
		}
		missing = append(missing, p)
	}
	list := missing
	if len(list) > maxListed {
		list = append(list[:maxListed:maxListed], fmt.Sprintf("and %d more", len(missing)-maxListed))
	}
	verb := "do not exist"
	if len(missing) == 1 {
		verb = "does not exist"
	}
	return "", fmt.Sprintf("no secondary group of user %q has a queue: %s %s", in.User, strings.Join(list, ", "), verb), nil
}

// tagValue reads a tag rule's tag from the pod: the namespace for
// "namespace" (default "default", as YuniKorn's shim), else a label, then
// an annotation, of that name. Tag names are lower-cased (YuniKorn's rule);
// a label or annotation whose key differs only in case also matches (the
// first in key order), so a key in capitals is not silently unusable.
func tagValue(in *Input, name string) string {
	if name == "namespace" {
		if in.Namespace == "" {
			return "default"
		}
		return in.Namespace
	}
	for _, m := range []map[string]string{in.Labels, in.Annotations} {
		if v := m[name]; v != "" {
			return v
		}
	}
	for _, m := range []map[string]string{in.Labels, in.Annotations} {
		var keys []string
		for k := range m {
			if strings.EqualFold(k, name) && m[k] != "" {
				keys = append(keys, k)
			}
		}
		if len(keys) > 0 {
			sort.Strings(keys)
			return m[keys[0]]
		}
	}
	return ""
}

func tagWhat(name string) string {
	if name == "namespace" {
		return "namespace"
	}
	return fmt.Sprintf("label or annotation %q", name)
}
