package queueconfig

import (
	"fmt"
	"strings"
)

// Keys of YuniKorn's config that we accept, so that a YuniKorn config loads
// unchanged, but do not act on yet. Each kind is reported once at load, so
// an operator knows the setting is not in force. So is the one place where
// we act differently from YuniKorn on purpose at load: a partition without
// any submitacl has submit ACL checks off (docs/placement.md). And so is a
// deprecated value read as another: application.sort.policy: stateaware is
// read as fifo (appsort.go).

const (
	noticeAccepted   = "accepted, not enforced yet"
	noticeGuaranteed = "not enforced: guaranteed takes effect with quota.sharing: elastic (docs/elastic.md)"
	noticeChecksum   = "ignored: the config's checksum is computed from its text"
	noticeNoACL      = "no queue sets submitacl, so submit ACL checks are off " +
		"(YuniKorn would refuse every pod; the first submitacl turns checks on)"
)

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
		if rp.preemptionSet {
			n.add("preemption", rp.preemptionP.path, noticeAccepted)
		}
		if rp.nodeSortSet {
			n.add("nodesortpolicy", rp.nodeSortP.path, noticeAccepted)
		}
		if rp.resolverSet {
			n.add("usergroupresolver", rp.resolverP.path, noticeAccepted)
		}
		var walk func(q *rawQueue, elastic bool)
		walk = func(q *rawQueue, elastic bool) {
			for k := range q.properties {
				if !strings.HasPrefix(k, "quota.") && !isPreemptionProp(k) && k != PropAppSortPolicy {
					n.add("properties", q.propertiesP.path, noticeAccepted)
					break
				}
			}
			if isStateAware(q.properties) {
				n.add("stateaware", childPos(q.propertiesP, PropAppSortPolicy, 0).path, noticeStateAware)
			}
			if q.childTemplate != nil && isStateAware(q.childTemplate.Properties) {
				tp := childPos(q.childTemplateP, "properties", 0)
				n.add("stateaware", childPos(tp, PropAppSortPolicy, 0).path, noticeStateAware)
			}
			elastic = elastic || q.properties[PropSharing] != ""
			if len(q.guaranteed.q) > 0 && !elastic {
				n.add("guaranteed", q.guaranteed.p.path, noticeGuaranteed)
			}
			for _, c := range q.queues {
				walk(c, elastic)
			}
		}
		for _, q := range rp.queues {
			walk(q, false)
		}
	}
	return n.list()
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
