package queueconfig

import "github.com/userquota/userquota/pkg/resources"

// Config is a parsed and fully validated YuniKorn queue configuration. It is
// immutable once Parse returns it: consumers share it without copying and a
// new version replaces it as a whole.
type Config struct {
	Partitions []*Partition
	// Checksum is the hex SHA-256 of the YAML text the config was parsed
	// from; with quota trees, of that text and every tree's source and
	// JSON (LoadWithTrees).
	Checksum string
	// Trees are the quota trees loaded beside the queue config, sorted by
	// name (forest.go; docs/forests.md). Nil without trees.
	Trees []*Tree
	// Notices lists keys that were accepted but are not acted on, one per
	// key naming where it is first set and what happens instead
	// (`partitions[0].preemption.enabled: not read: ...`), each partition
	// whose submit ACL checks are off (no submitacl), and
	// application.sort.policy: stateaware, read as fifo. docs/mapping.md
	// lists them.
	Notices []string
}

// Partition is one partition of the config.
type Partition struct {
	Name string
	// Root is the root queue. Top-level queues other than root were placed
	// under an implicit root; partition-level limits were copied onto it.
	Root *Queue

	PlacementRules []PlacementRule
	// SubmitACLSet is true when any queue of the partition sets submitacl
	// (even to ""). Without one, submit ACL checks are off: see
	// docs/placement.md.
	SubmitACLSet      bool
	Preemption        PartitionPreemption
	NodeSortPolicy    NodeSortPolicy
	UserGroupResolver UserGroupResolver

	// queues indexes every queue by its full path ("root.a.b").
	queues map[string]*Queue
}

// Queue is one queue of the tree.
type Queue struct {
	// Name is the queue's own name; Path is the full dotted path from root.
	Name   string
	Path   string
	Parent *Queue // nil for root
	// Children in config order.
	Children []*Queue
	// IsParent is true for a queue with children or with `parent: true`.
	// Pods run only in leaf queues (IsParent false).
	IsParent bool

	// Guaranteed and Max are resources.guaranteed / resources.max. Max bounds
	// the aggregate usage of the queue's subtree; nil means unlimited.
	Guaranteed resources.Vector
	Max        resources.Limit
	// MaxApplications bounds running applications in the subtree; 0: none.
	MaxApplications uint64
	Properties      map[string]string
	AdminACL        string
	SubmitACL       string
	ChildTemplate   *ChildTemplate
	// Limits are the user and group limits set on this queue, in config order.
	Limits []Limit
	// Sharing holds the elastic-quota settings (sharing.go).
	Sharing Sharing
	// Preemption is what the queue's preemption.* properties set
	// (preemption.go); not inherited here.
	Preemption Preemption
	// AppSort is the queue's own application.sort.policy (appsort.go):
	// AppSortFIFO, AppSortFair, or "" when the queue does not set it; not
	// inherited here (AppSortPolicy resolves it for a leaf).
	AppSort string
	// Fairness is what the queue's userquota.fairness* properties set
	// (fairness.go); not inherited here (FairnessFor resolves it).
	Fairness Fairness
}

// Limit is one entry of a queue's `limits` list. It applies to each user
// and group it names individually, not to them together.
type Limit struct {
	Description string // the `limit` key
	Users       []string
	Groups      []string
	// MaxResources is nil when not given; MaxApplications 0 when not given.
	MaxResources    resources.Limit
	MaxApplications uint64
	// Where is the entry's location for messages:
	// "partitions[0].queues[0].limits[2]".
	Where string
}

// ChildTemplate is applied to queues created dynamically under a parent.
type ChildTemplate struct {
	MaxApplications uint64
	Properties      map[string]string
	Guaranteed      resources.Vector
	Max             resources.Limit
	// Sharing holds the template's elastic-quota settings; Elastic is set
	// when the queue holding the template is elastic or the template's
	// properties turn sharing on.
	Sharing Sharing
	// Preemption is what the template's preemption.* properties set.
	Preemption Preemption
	// AppSort is the template's application.sort.policy: AppSortFIFO,
	// AppSortFair, or "" when the template does not set it.
	AppSort string
	// Fairness is what the template's userquota.fairness* properties set,
	// measured against the template's max, else its guaranteed.
	Fairness Fairness
}

// PlacementRule is one entry of a partition's placementrules.
type PlacementRule struct {
	Name   string // lower-cased: one of the Rule* names (placement.go)
	Create bool
	Parent *PlacementRule
	Filter Filter
	Value  string
}

// Filter restricts a placement rule to some users or groups.
type Filter struct {
	Type   string // allow (default) or deny
	Users  []string
	Groups []string
}

// PartitionPreemption is the partition's preemption section.
type PartitionPreemption struct {
	Enabled                *bool
	QuotaPreemptionEnabled *bool
}

// NodeSortPolicy is the partition's node sorting section.
type NodeSortPolicy struct {
	Type            string
	ResourceWeights map[string]float64
}

// UserGroupResolver is the partition's user/group resolver section.
type UserGroupResolver struct {
	Type string
}

// Partition returns the named partition, or nil.
func (c *Config) Partition(name string) *Partition {
	for _, p := range c.Partitions {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Queue returns the queue with the given full path ("root.a.b"), or nil.
func (p *Partition) Queue(path string) *Queue { return p.queues[path] }

// Canonical is path as the config's own string when the queue is
// configured (Queue.Path), else path itself; p may be nil.
func (p *Partition) Canonical(path string) string {
	if p != nil {
		if q := p.queues[path]; q != nil {
			return q.Path
		}
	}
	return path
}

// Walk calls fn for every queue of the partition, parents before children,
// children in config order.
func (p *Partition) Walk(fn func(*Queue)) {
	var walk func(*Queue)
	walk = func(q *Queue) {
		fn(q)
		for _, c := range q.Children {
			walk(c)
		}
	}
	if p.Root != nil {
		walk(p.Root)
	}
}
