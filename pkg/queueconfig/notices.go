package queueconfig

import (
	"fmt"
	"sort"
	"strings"
)

// Keys of YuniKorn's config that we accept, so that a YuniKorn config loads
// unchanged, but do not act on. Each is reported at load, naming the key
// and where it is first set, so an operator knows the setting is not in
// force (docs/mapping.md lists them all and what happens). So is the one
// place where we act differently from YuniKorn on purpose at load: a
// partition without any submitacl has submit ACL checks off
// (docs/placement.md). And so is a deprecated value read as another:
// application.sort.policy: stateaware is read as fifo (appsort.go).
//
// A key whose silent neglect would weaken a limit or an ACL is refused
// instead (validate.go, placement.go), never only noticed.

const (
	noticeGuaranteed = "not enforced: guaranteed takes effect with quota.sharing: elastic (docs/elastic.md)"
	noticeChecksum   = "ignored: the config's checksum is computed from its text"
	noticeNoACL      = "no queue sets submitacl, so submit ACL checks are off " +
		"(YuniKorn would refuse every pod; the first submitacl turns checks on)"

	noticePriority = "not enforced: a pod's priority is its PriorityClass's, " +
		"YuniKorn's queue priorities (priority.offset, priority.policy) are not applied"
	noticeAppSortPriority = "not enforced: pods waiting for quota are ordered by application.sort.policy (docs/design.md)"
	noticeQuotaPreemption = "not enforced: a queue over a lowered max takes no new pods, " +
		"but its running pods are not preempted to bring it under"
	noticeUnknownProperty = "not a property this scheduler knows, so it has no effect " +
		"(known: quota.sharing, quota.weight, quota.lend, preemption.policy, preemption.delay, application.sort.policy, " +
		"userquota.fairness, userquota.fairness.halflife, userquota.fairness.weights)"
	noticeOtherProperty     = "not read by this scheduler: no effect"
	noticePreemptionEnabled = "not read: reclaim preempts only in elastic subtrees, as each queue's preemption.policy says " +
		"(disabled stops a subtree's pods preempting: docs/reclaim.md); kube-scheduler's priority preemption follows its own profile"
	noticeNodeSort = "not enforced: kube-scheduler's scoring picks the node " +
		"(NodeResourcesFit's scoringStrategy in the scheduler config: LeastAllocated spreads like fair, MostAllocated packs like binpacking)"
	noticeResolver = "a pod's groups come only from its user info, " +
		"which the webhook stamps with the requester's groups (docs/security.md)"
	noticeSecondaryCreate = "has no effect on secondaryGroup, which places pods only in a queue that exists"
)

// yuniKornProperties are YuniKorn's queue properties we do not act on, with
// what the notice says.
var yuniKornProperties = map[string]string{
	"priority.offset":           noticePriority,
	"priority.policy":           noticePriority,
	"application.sort.priority": noticeAppSortPriority,
	"quota.preemption.delay":    noticeQuotaPreemption,
}

// propertyNotice says what a queue property does, "" for one we act on.
func propertyNotice(key string) string {
	if key == PropSharing || key == PropWeight || key == PropLend || isPreemptionProp(key) || key == PropAppSortPolicy || isFairnessProp(key) {
		return ""
	}
	if msg, ok := yuniKornProperties[key]; ok {
		return msg
	}
	for _, prefix := range []string{"quota.", "preemption.", "priority.", "application.", "userquota."} {
		if strings.HasPrefix(key, prefix) {
			return noticeUnknownProperty
		}
	}
	return noticeOtherProperty
}

// notices collects one notice per kind, naming the first place it appears.
type notices struct {
	order []string
	first map[string]string // kind -> first path
	msg   map[string]string
	count map[string]int
}

func (n *notices) add(kind, path, msg string) {
	if n.first == nil {
		n.first, n.msg, n.count = map[string]string{}, map[string]string{}, map[string]int{}
	}
	if _, ok := n.first[kind]; !ok {
		n.order = append(n.order, kind)
		n.first[kind] = path
		n.msg[kind] = msg
	}
	n.count[kind]++
}

func (n *notices) list() []string {
	var out []string
	for _, k := range n.order {
		s := fmt.Sprintf("%s: %s", n.first[k], n.msg[k])
		if c := n.count[k]; c > 1 {
			s += fmt.Sprintf(" (and %d more)", c-1)
		}
		out = append(out, s)
	}
	return out
}

// collectNotices walks the raw config in document order.
func collectNotices(rc *rawConfig) []string {
	var n notices
	if rc.checksum.path != "" {
		n.add("checksum", rc.checksum.path, noticeChecksum)
	}
	for _, rp := range rc.partitions {
		if !anySubmitACL(rp.queues) {
			// One per partition: each has its own ACLs.
			n.add("nosubmitacl "+rp.p.path, rp.p.path, noticeNoACL)
		}
		partitionNotices(&n, rp)
		for _, r := range rp.rules {
			ruleNotices(&n, r)
		}
		var walk func(q *rawQueue, path string, elastic bool)
		walk = func(q *rawQueue, path string, elastic bool) {
			if q.submitSet {
				aclNotice(&n, "submitacl", q.submitACL, q.submitACLP, path)
			}
			if q.adminSet {
				aclNotice(&n, "adminacl", q.adminACL, q.adminACLP, path)
			}
			propertyNotices(&n, q.properties, q.propertiesP, path)
			if isStateAware(q.properties) {
				n.add("stateaware", childPos(q.propertiesP, PropAppSortPolicy, 0).path, noticeStateAware)
			}
			elastic = elastic || q.properties[PropSharing] != ""
			if ct := q.childTemplate; ct != nil {
				tp := childPos(q.childTemplateP, "properties", 0)
				propertyNotices(&n, ct.Properties, tp, "the child template of "+path)
				if isStateAware(ct.Properties) {
					n.add("stateaware", childPos(tp, PropAppSortPolicy, 0).path, noticeStateAware)
				}
				if g := q.templateRes[0]; len(g.q) > 0 && !elastic && ct.Properties[PropSharing] == "" {
					n.add("template guaranteed", g.p.path, "guaranteed on the child template of "+path+": "+noticeGuaranteed)
				}
			}
			if len(q.guaranteed.q) > 0 && !elastic {
				n.add("guaranteed", q.guaranteed.p.path, noticeGuaranteed)
			}
			for _, c := range q.queues {
				walk(c, path+"."+strings.ToLower(c.name), elastic)
			}
		}
		implicitRoot := !explicitRoot(rp.queues)
		for _, q := range rp.queues {
			path := rootName
			if implicitRoot {
				path += "." + strings.ToLower(q.name)
			}
			walk(q, path, false)
		}
	}
	return n.list()
}

// partitionNotices reports the partition keys that are not acted on, each
// by its own key.
func partitionNotices(n *notices, rp *rawPartition) {
	if rp.preemptionSet {
		if rp.preemption.Enabled != nil {
			n.add("preemption.enabled", childPos(rp.preemptionP, "enabled", 0).path, noticePreemptionEnabled)
		}
		if rp.preemption.QuotaPreemptionEnabled != nil {
			n.add("preemption.quotapreemptionenabled", childPos(rp.preemptionP, "quotapreemptionenabled", 0).path, noticeQuotaPreemption)
		}
	}
	if rp.nodeSortSet && (rp.nodeSort.Type != "" || len(rp.nodeSort.ResourceWeights) > 0) {
		n.add("nodesortpolicy", rp.nodeSortP.path, noticeNodeSort)
	}
	if rp.resolverSet && rp.resolver.Type != "" {
		n.add("usergroupresolver", childPos(rp.resolverP, "type", 0).path,
			fmt.Sprintf("the %q resolver is not consulted: %s", shorten(rp.resolver.Type), noticeResolver))
	}
}

// propertyNotices reports each property of one queue or child template
// (where) that is not acted on, in key order: one notice per key, naming
// the first queue that sets it.
func propertyNotices(n *notices, props map[string]string, p pos, where string) {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if msg := propertyNotice(k); msg != "" {
			n.add("property "+k, childPos(p, k, 0).path, fmt.Sprintf("%s on %s: %s", shorten(k), where, msg))
		}
	}
}

// ruleNotices reports rule keys that load and do nothing: a value on a rule
// that takes none, create on secondaryGroup. Parent rules too.
func ruleNotices(n *notices, r *rawRule) {
	for ; r != nil; r = r.parent {
		name := strings.ToLower(r.rule.Name)
		if !knownRules[name] {
			continue // refused by validation
		}
		if r.valueP.line > 0 && r.rule.Value != "" && name != RuleTag && name != RuleFixed {
			n.add("rule value", r.valueP.path, fmt.Sprintf("ignored: the %s rule takes no value", shorten(r.rule.Name)))
		}
		if name == RuleSecondaryGroup && r.rule.Create {
			n.add("secondaryGroup create", r.createP.path, noticeSecondaryCreate)
		}
	}
}

// aclNotice reports an ACL whose user list ends in a comma before its one
// space ("sue, bob"): the entries after the space are read as groups, as
// YuniKorn reads them, which is seldom what was meant.
func aclNotice(n *notices, key, acl string, p pos, queue string) {
	users, groups, found := strings.Cut(acl, " ")
	if !found || !strings.HasSuffix(users, ",") || strings.TrimSpace(groups) == "" {
		return
	}
	n.add("acl comma space", p.path, fmt.Sprintf("%s %q on %s: the space ends the user list, so %s is read as a group list (as YuniKorn reads it); write %q for two users",
		key, shorten(acl), queue, shorten(strings.TrimSpace(groups)), shorten(users+strings.TrimSpace(groups))))
}

// anySubmitACL reports whether any queue of the tree sets submitacl.
func anySubmitACL(queues []*rawQueue) bool {
	for _, q := range queues {
		if q.submitSet || anySubmitACL(q.queues) {
			return true
		}
	}
	return false
}
