package placement

import (
	"fmt"
	"strings"

	"github.com/userquota/userquota/pkg/queueconfig"
)

// acl is one parsed access control list in YuniKorn's format: "*" for
// everyone, else "users groups": a comma-separated user list, a space, a
// comma-separated group list (" admins" is groups only). An empty ACL
// allows nobody. Immutable.
type acl struct {
	raw    string
	all    bool
	users  map[string]bool
	groups map[string]bool
}

// parseACL reads an ACL as YuniKorn does: "*" (spaces around it ignored),
// or a user list and a group list either of which may be "*". Entries are
// compared exactly. Departure: YuniKorn ignores entries that are not valid
// user or group names; we keep them, so Kubernetes identities such as
// system:serviceaccount:ns:sa can be listed.
func parseACL(s string) *acl {
	a := &acl{raw: s}
	if strings.TrimSpace(s) == "*" {
		a.all = true
		return a
	}
	users, groups, _ := strings.Cut(s, " ")
	groups = strings.TrimSpace(groups)
	if users == "*" || groups == "*" {
		a.all = true
		return a
	}
	a.users = names(users)
	a.groups = names(groups)
	return a
}

func names(list string) map[string]bool {
	var m map[string]bool
	for _, n := range strings.Split(list, ",") {
		if n == "" {
			continue
		}
		if m == nil {
			m = map[string]bool{}
		}
		m[n] = true
	}
	return m
}

// allows reports whether the user, or one of the groups, is on the list.
func (a *acl) allows(user string, groups []string) bool {
	if a == nil {
		return false
	}
	if a.all || a.users[user] {
		return true
	}
	for _, g := range groups {
		if a.groups[g] {
			return true
		}
	}
	return false
}

// queueACLs are the ACLs set on one configured queue (nil when not set or
// empty, which allow nobody alike).
type queueACLs struct {
	submit, admin *acl
}

// compileACLs collects the ACLs of every configured queue that sets one.
func compileACLs(p *queueconfig.Partition) map[string]queueACLs {
	out := map[string]queueACLs{}
	p.Walk(func(q *queueconfig.Queue) {
		var qa queueACLs
		if q.SubmitACL != "" {
			qa.submit = parseACL(q.SubmitACL)
		}
		if q.AdminACL != "" {
			qa.admin = parseACL(q.AdminACL)
		}
		if qa.submit != nil || qa.admin != nil {
			out[q.Path] = qa
		}
	})
	return out
}

// ACLError refuses a pod whose user and groups may not submit to the queue
// it was placed in: no submitacl or adminacl on the queue or any ancestor
// allows them.
type ACLError struct {
	Queue  string
	User   string
	Groups []string
	// ACLs lists the ACLs on the queue's path, leaf to root, as
	// "root.a: submitacl \"sue\"", one per ACL set; empty when none is.
	ACLs []string
	// Path lists the queues checked, leaf to root.
	Path []string
}

func (e *ACLError) Error() string {
	who := fmt.Sprintf("user %q", e.User)
	if len(e.Groups) > 0 {
		who += fmt.Sprintf(" (groups %s)", strings.Join(e.Groups, ", "))
	}
	on := "no queue on its path sets an ACL (" + strings.Join(e.Path, ", ") + ")"
	if len(e.ACLs) > 0 {
		on = "no ACL on its path allows it: " + strings.Join(e.ACLs, "; ")
	}
	return fmt.Sprintf("%s may not submit to queue %s: %s", who, e.Queue, on)
}

// checkSubmit returns nil when the user may submit to path (which need not
// exist: a queue to be created is covered by its ancestors' ACLs), else an
// *ACLError. YuniKorn: the submit or the admin ACL of the queue or of any
// ancestor grants access.
func (pol *Policy) checkSubmit(path, user string, groups []string) error {
	for p := path; p != ""; p = queueconfig.ParentPath(p) {
		qa, ok := pol.acls[p]
		if ok && (qa.submit.allows(user, groups) || qa.admin.allows(user, groups)) {
			return nil
		}
	}
	e := &ACLError{Queue: path, User: user, Groups: groups}
	for p := path; p != ""; p = queueconfig.ParentPath(p) {
		e.Path = append(e.Path, p)
		qa := pol.acls[p]
		if qa.submit != nil {
			e.ACLs = append(e.ACLs, fmt.Sprintf("%s submitacl %q", p, qa.submit.raw))
		}
		if qa.admin != nil {
			e.ACLs = append(e.ACLs, fmt.Sprintf("%s adminacl %q", p, qa.admin.raw))
		}
	}
	return e
}
