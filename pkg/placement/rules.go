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
	ruleProvided = "provided"
	ruleUser     = "user"
	ruleTag      = "tag"
	ruleFixed    = "fixed"
)

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
	return out
}

// String describes the rule for messages: "tag namespace (create, parent
// fixed root.namespaces, filter allow users john)".
func (r *rule) String() string {
	s := r.name
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

// place runs the rule for in. It returns the full path of the queue the
// rule names, lower-cased, which exists or may be created (create is set);
// or "" and why the rule does not match; or an error that refuses the pod
// (an invalid queue name, a parent rule naming a leaf), as in YuniKorn.
func (r *rule) place(pol *Policy, in *Input, qs Queues) (path, why string, err error) {
	var name string
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
	case ruleFixed:
		name = r.value
	default:
		// The validator accepts any rule name, as YuniKorn's config parser
		// does; YuniKorn then fails to build the rule set. Never match.
		return "", fmt.Sprintf("unknown rule %q (known: provided, user, tag, fixed)", r.name), nil
	}
	if !r.filter.allows(in.User, in.Groups) {
		return "", r.filter.refusal(in.User, in.Groups), nil
	}
	name = strings.ToLower(name)
	switch {
	case r.name != ruleUser && (strings.HasPrefix(name, "root.") || r.name == ruleFixed && name == "root"):
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
		parent := "root"
		if r.parent != nil {
			pp, pwhy, perr := r.parent.place(pol, in, qs)
			if perr != nil {
				return "", "", fmt.Errorf("parent rule %s: %w", r.parent.name, perr)
			}
			if pp == "" {
				return "", fmt.Sprintf("parent rule %s: %s", r.parent.name, pwhy), nil
			}
			if st := pol.state(pp, qs); st.exists && st.leaf {
				return "", "", fmt.Errorf("parent rule %s gave %s, which is a leaf queue", r.parent.name, pp)
			}
			parent = pp
		}
		path = parent + "." + child
	}
	if !r.create && !pol.state(path, qs).exists {
		return "", fmt.Sprintf("%s does not exist and create is false", path), nil
	}
	return path, "", nil
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
