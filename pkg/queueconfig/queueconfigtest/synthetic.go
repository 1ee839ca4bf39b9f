package queueconfigtest

import (
	"fmt"
	"sort"
	"strings"
)

// Synthetic is the benchmarks' queue tree (test/perf's workload, the
// plugin's benchmarks): Users spread evenly over Queues leaf queues (the
// users of leaf q are consecutive), user u in group u%Groups. Levels is the
// depth of the tree below root: 1 (or 0) puts the leaves under root; more
// puts them under Levels-1 tiers of parent queues, each parent with
// fanout children (the Levels-th root of Queues, rounded up), a user
// limit, a limit for every group, a max and maxapplications, so that a
// decision checks every level.
type Synthetic struct {
	Users, Queues, Groups, Levels int
}

func (s Synthetic) User(u int) string  { return fmt.Sprintf("user-%04d", u) }
func (s Synthetic) Group(u int) string { return fmt.Sprintf("group-%02d", u%s.Groups) }

// Leaf is user u's leaf queue (its index among the leaves).
func (s Synthetic) Leaf(u int) int { return u * s.Queues / s.Users }

// QueuePath is the full path of user u's leaf queue.
func (s Synthetic) QueuePath(u int) string {
	q := s.Leaf(u)
	path := "root"
	for tier := 1; tier < s.Levels; tier++ {
		path += "." + s.parentName(tier, q/s.span(tier))
	}
	return path + "." + fmt.Sprintf("q-%03d", q)
}

// fanout is how many children a parent queue has (levels > 1).
func (s Synthetic) fanout() int {
	f := 1
	for pow(f, s.Levels) < s.Queues {
		f++
	}
	return f
}

// span is how many leaves sit under one parent of tier (1: below root).
func (s Synthetic) span(tier int) int { return pow(s.fanout(), s.Levels-tier) }

// parentName names the index-th parent of tier (unique in the tree).
func (s Synthetic) parentName(tier, index int) string { return fmt.Sprintf("t%d-%03d", tier, index) }

// Config renders the tree as YuniKorn queue-config YAML with loose limits
// everywhere (nothing is refused for want of cpu, memory or
// applications): root with a limit for every group by name and one for
// every user; each leaf with a max, maxapplications and a user limit (and
// a group limit when Levels > 1); each parent between them with root's
// limits, a max and maxapplications. The users limit says (pods, true)
// for get a named limit of that many pods on their leaf; limit may be
// nil.
func (s Synthetic) Config(limit func(u int) (pods int, ok bool)) string {
	var b strings.Builder
	b.WriteString("partitions:\n- name: default\n  queues:\n  - name: root\n")
	s.writeParentLimits(&b, "    ")
	b.WriteString("    queues:\n")
	if s.Levels > 1 {
		s.writeParents(&b, "    ", 1, 0, limit)
	} else {
		for q := 0; q < s.Queues; q++ {
			s.writeLeaf(&b, "    ", q, limit)
		}
	}
	return b.String()
}

// writeParentLimits writes a parent's limits: one for every group by
// name and one for every user, loose.
func (s Synthetic) writeParentLimits(b *strings.Builder, indent string) {
	fmt.Fprintf(b, "%slimits:\n%s- limit: every group\n%s  groups: [%s]\n%s  maxresources: {vcore: \"100000\", memory: 100000Gi}\n%s  maxapplications: 100000\n",
		indent, indent, indent, s.groupList(), indent, indent)
	fmt.Fprintf(b, "%s- limit: every user\n%s  users: [\"*\"]\n%s  maxresources: {vcore: \"10000\", memory: 10000Gi}\n", indent, indent, indent)
}

// writeParents writes the parents of tier whose leaves start at leaf
// first, down to the leaves.
func (s Synthetic) writeParents(b *strings.Builder, indent string, tier, first int, limit func(u int) (int, bool)) {
	span := s.span(tier)
	for start := first; start < s.Queues && start < first+span*s.fanout(); start += span {
		fmt.Fprintf(b, "%s- name: %s\n%s  maxapplications: 1000000\n%s  resources:\n%s    max: {vcore: \"1000000\", memory: 1000000Gi}\n",
			indent, s.parentName(tier, start/span), indent, indent, indent)
		s.writeParentLimits(b, indent+"  ")
		fmt.Fprintf(b, "%s  queues:\n", indent)
		if tier+1 < s.Levels {
			s.writeParents(b, indent+"  ", tier+1, start, limit)
			continue
		}
		for q := start; q < start+span && q < s.Queues; q++ {
			s.writeLeaf(b, indent+"  ", q, limit)
		}
	}
}

// writeLeaf writes leaf q: a loose max and maxapplications, a loose limit
// for every user, and the named limits of the users limit says.
func (s Synthetic) writeLeaf(b *strings.Builder, indent string, q int, limit func(u int) (int, bool)) {
	fmt.Fprintf(b, "%s- name: q-%03d\n%s  maxapplications: 100000\n%s  resources:\n%s    max: {vcore: \"100000\", memory: 100000Gi}\n%s  limits:\n",
		indent, q, indent, indent, indent, indent)
	// Named limits for the users at a limit, grouped by their size.
	bySize := map[int][]string{}
	for u := 0; u < s.Users; u++ {
		if s.Leaf(u) != q {
			continue
		}
		if limit == nil {
			break
		}
		if k, ok := limit(u); ok {
			bySize[k] = append(bySize[k], fmt.Sprintf("%q", s.User(u)))
		}
	}
	sizes := make([]int, 0, len(bySize))
	for k := range bySize {
		sizes = append(sizes, k)
	}
	sort.Ints(sizes)
	for _, k := range sizes {
		fmt.Fprintf(b, "%s  - limit: at limit %d\n%s    users: [%s]\n%s    maxresources: {pods: \"%d\"}\n", indent, k, indent, strings.Join(bySize[k], ", "), indent, k)
	}
	fmt.Fprintf(b, "%s  - limit: every user\n%s    users: [\"*\"]\n%s    maxresources: {vcore: \"1000\", memory: 1000Gi, pods: \"100000\"}\n%s    maxapplications: 1000\n",
		indent, indent, indent, indent)
	if s.Levels > 1 {
		// A group limit on every level of the tree.
		fmt.Fprintf(b, "%s  - limit: every group\n%s    groups: [%s]\n%s    maxresources: {vcore: \"10000\", memory: 10000Gi}\n%s    maxapplications: 100000\n", indent, indent, s.groupList(), indent, indent)
	}
}

// groupList is every group's name, quoted, comma separated.
func (s Synthetic) groupList() string {
	names := make([]string, s.Groups)
	for g := range names {
		names[g] = fmt.Sprintf("%q", fmt.Sprintf("group-%02d", g))
	}
	return strings.Join(names, ", ")
}

func pow(b, e int) int {
	n := 1
	for ; e > 0; e-- {
		n *= b
	}
	return n
}
