package queueconfig

import (
	"strings"
)

// This file turns the raw partitions into the typed queue tree: the
// implicit root, lower-cased names and dotted paths, parent flags, and
// partition limits copied onto root. Resource values are converted (and
// their names interned) only in finish, after validation passed.

// rootName is the name of every partition's root queue.
const rootName = "root"

// DefaultPartition is the name of a partition written without a name, and
// the partition the scheduler enforces unless its args name another.
const DefaultPartition = "default"

// queueMeta is what validation needs about a built queue beyond its
// public fields.
type queueMeta struct {
	raw    *rawQueue // nil for an implicit root
	p      pos
	limits []*rawLimit // after partition limits were copied onto root
}

// partBuild is one partition under construction.
type partBuild struct {
	part  *Partition
	raw   *rawPartition
	meta  map[*Queue]*queueMeta
	order []*Queue // parents before children, children in config order
	// implicitRoot is true when root was inserted above the top-level queues.
	implicitRoot bool
}

// partitionName normalises a partition name as YuniKorn does: empty means
// "default", and names are compared and stored lower-cased.
func partitionName(name string) string {
	name = strings.ToLower(name)
	if name == "" {
		return DefaultPartition
	}
	return name
}

// buildPartition builds the queue tree of one partition. It never fails:
// problems are left for validation, which sees the tree as YuniKorn would.
func buildPartition(rp *rawPartition) *partBuild {
	pb := &partBuild{
		part: &Partition{
			Name:              partitionName(rp.name),
			Preemption:        rp.preemption,
			NodeSortPolicy:    rp.nodeSort,
			UserGroupResolver: rp.resolver,
			queues:            map[string]*Queue{},
		},
		raw:  rp,
		meta: map[*Queue]*queueMeta{},
	}
	pb.part.NodeSortPolicy.Type = strings.ToLower(pb.part.NodeSortPolicy.Type)
	for _, r := range rp.rules {
		pb.part.PlacementRules = append(pb.part.PlacementRules, *buildRule(r))
	}
	if !rp.queuesSet {
		return pb
	}

	// As YuniKorn: a single top-level queue named root (in any case) is the
	// root; otherwise a root is inserted above the top-level queues.
	var root *Queue
	if explicitRoot(rp.queues) {
		root = pb.add(rp.queues[0], nil)
	} else {
		pb.implicitRoot = true
		root = &Queue{Name: rootName, Path: rootName, IsParent: true}
		pb.meta[root] = &queueMeta{p: rp.queuesP}
		pb.order = append(pb.order, root)
		pb.part.queues[root.Path] = root
		for _, rq := range rp.queues {
			pb.add(rq, root)
		}
	}
	root.IsParent = true
	pb.part.Root = root

	// Partition limits are root's limits. When both are given they must be
	// equivalent (validation checks); root's own are used then.
	m := pb.meta[root]
	if len(m.limits) == 0 {
		m.limits = rp.limits
	}
	return pb
}

// explicitRoot reports whether a partition's top-level queues are its root
// (a single queue named root, in any case), as YuniKorn reads them; else a
// root is inserted above them.
func explicitRoot(queues []*rawQueue) bool {
	return len(queues) == 1 && strings.ToLower(queues[0].name) == rootName
}

// add builds q and its subtree under parent.
func (pb *partBuild) add(rq *rawQueue, parent *Queue) *Queue {
	q := &Queue{Name: strings.ToLower(rq.name), Parent: parent}
	if parent == nil {
		q.Path = q.Name
	} else {
		q.Path = parent.Path + "." + q.Name
		parent.Children = append(parent.Children, q)
	}
	q.IsParent = rq.parent || len(rq.queues) > 0
	q.MaxApplications = rq.maxApps
	q.Properties = rq.properties
	q.AdminACL = rq.adminACL
	q.SubmitACL = rq.submitACL
	if rq.submitSet {
		pb.part.SubmitACLSet = true
	}
	q.ChildTemplate = rq.childTemplate
	pb.meta[q] = &queueMeta{raw: rq, p: rq.p, limits: rq.limits}
	pb.order = append(pb.order, q)
	if _, taken := pb.part.queues[q.Path]; !taken {
		pb.part.queues[q.Path] = q
	}
	for _, c := range rq.queues {
		pb.add(c, q)
	}
	return q
}

// buildRule converts a placement rule; names are lower-cased as YuniKorn
// does when it creates the rule objects, and the filter type defaults to
// allow.
func buildRule(r *rawRule) *PlacementRule {
	out := r.rule
	out.Name = strings.ToLower(out.Name)
	out.Filter.Type = strings.ToLower(out.Filter.Type)
	if out.Filter.Type == "" {
		out.Filter.Type = "allow"
	}
	if r.parent != nil {
		out.Parent = buildRule(r.parent)
	}
	return &out
}

// finish fills the resource values of a validated partition. Resource names
// are interned here, so only accepted configs add to the registry.
func (pb *partBuild) finish() {
	for _, q := range pb.order {
		m := pb.meta[q]
		if rq := m.raw; rq != nil {
			if rq.guaranteed.given {
				q.Guaranteed = rq.guaranteed.q.vector()
			}
			if rq.max.given {
				q.Max = rq.max.q.limit()
			}
			q.Sharing = sharing(q.Sharing.Elastic, q.Properties, rq.guaranteed, rq.max)
			q.Preemption = preemption(q.Properties)
			q.AppSort = appSort(q.Properties)
			q.Fairness = fairness(q.Properties, rq.max, rq.guaranteed)
			if q.ChildTemplate != nil {
				ct := q.ChildTemplate
				ct.Sharing = sharing(ct.Sharing.Elastic, ct.Properties, rq.templateRes[0], rq.templateRes[1])
				ct.Preemption = preemption(ct.Properties)
				ct.AppSort = appSort(ct.Properties)
				ct.Fairness = fairness(ct.Properties, rq.templateRes[1], rq.templateRes[0])
				if rq.templateRes[0].given {
					q.ChildTemplate.Guaranteed = rq.templateRes[0].q.vector()
				}
				if rq.templateRes[1].given {
					q.ChildTemplate.Max = rq.templateRes[1].q.limit()
				}
			}
		}
		for _, l := range m.limits {
			lim := Limit{
				Description:     l.desc,
				Users:           l.users,
				Groups:          l.groups,
				MaxApplications: l.maxApps,
				Where:           l.p.path,
			}
			if len(l.maxRes.q) > 0 {
				lim.MaxResources = l.maxRes.q.limit()
			}
			q.Limits = append(q.Limits, lim)
		}
	}
}
