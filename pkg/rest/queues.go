package rest

import (
	"math"
	"net/http"
	"sort"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// Queue states, as YuniKorn names them.
const (
	statusActive   = "Active"
	statusDraining = "Draining"
)

// PartitionQueue is one queue of /ws/v1/partition/{p}/queues, in the shape
// of YuniKorn's dao.PartitionQueueDAOInfo: the same JSON names, only the
// fields this scheduler can fill. ReservedResource, RuntimeResource and
// Elastic are ours.
// Resource values are in base units (cpu millicores, memory bytes).
type PartitionQueue struct {
	// QueueName is the full path ("root.a.b"), as in YuniKorn.
	QueueName string `json:"queuename"`
	// Status is Active, or Draining for a queue that left the config and
	// still holds usage (it takes no new pods).
	Status    string `json:"status"`
	Partition string `json:"partition"`
	// PendingResource is the requests of the pods waiting for the queue's
	// subtree; absent when nothing waits or Options.Pending is nil.
	PendingResource map[string]int64 `json:"pendingResource,omitempty"`
	// MaxResource is resources.max resolved (percentages included) from
	// the share table when it has the queue, else the max in force
	// (configured, or the child template's for a dynamic queue); root's in
	// the share table is the cluster's capacity. Zeros (blocked) are kept.
	MaxResource map[string]int64 `json:"maxResource,omitempty"`
	// GuaranteedResource is resources.guaranteed resolved from the share
	// table (before any scaling down), else the configured absolute values.
	GuaranteedResource map[string]int64 `json:"guaranteedResource,omitempty"`
	// AllocatedResource is the usage of the queue's subtree.
	AllocatedResource map[string]int64 `json:"allocatedResource,omitempty"`
	// ReservedResource (ours) is what gang reservations in the subtree
	// hold beside it: counted against limits, not running yet.
	ReservedResource map[string]int64 `json:"reservedResource,omitempty"`
	IsLeaf           bool             `json:"isLeaf"`
	// IsManaged: the queue is in the config in force (root always is).
	IsManaged  bool              `json:"isManaged"`
	Properties map[string]string `json:"properties,omitempty"`
	// Parent is the parent's full path; "" for root.
	Parent     string           `json:"parent,omitempty"`
	Children   []PartitionQueue `json:"children,omitempty"`
	ChildNames []string         `json:"childNames,omitempty"`
	// MaxRunningApps is the queue's maxapplications in force (0: none).
	MaxRunningApps uint64 `json:"maxRunningApps,omitempty"`
	// RunningApps counts the applications with pods running in the subtree.
	RunningApps uint64 `json:"runningApps,omitempty"`

	// RuntimeResource (ours) is the queue's runtime share from the share
	// table: what the queue may use now. A resource it does not name is
	// unlimited; absent when the table does not have the queue.
	RuntimeResource map[string]int64 `json:"runtimeResource,omitempty"`
	// Elastic (ours): admission checks the runtime share on this queue
	// (quota.sharing: elastic on it or an ancestor, or on the child
	// template a dynamic queue was made from).
	Elastic bool `json:"elastic"`
}

// dynamicQueues is what *ugm.Manager says about queues outside the config;
// a Usage without it shows every queue as Active.
type dynamicQueues interface {
	DynamicQueue(path string) (exists, leaf, draining bool)
}

// queues serves /ws/v1/partition/{partition}/queues.
func (s *server) queues(w http.ResponseWriter, r *http.Request) {
	if !s.partitionOK(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, s.queueTree())
}

// qnode is one queue while the tree is assembled.
type qnode struct {
	path     string
	usage    *ugm.QueueUsage // nil: a queue only the share table has
	pending  resources.Vector
	children []*qnode
}

// queueSources are the inputs of one answer, each read once.
type queueSources struct {
	partition string
	part      *queueconfig.Partition // nil: no config in force
	table     *shares.Table          // nil: none
	pending   bool                   // Options.Pending is set
	dyn       dynamicQueues          // nil: not available
}

func (s *server) partitionConfig() *queueconfig.Partition {
	if s.opts.Config == nil {
		return nil
	}
	cfg := s.opts.Config()
	if cfg == nil {
		return nil
	}
	return cfg.Partition(s.opts.Partition)
}

func (s *server) shareTable() *shares.Table {
	if s.opts.Shares == nil {
		return nil
	}
	return s.opts.Shares()
}

// queueTree builds the answer: ugm's queue tree (configured, dynamic and
// draining queues), plus the queues only the share table has (dynamic
// queues pods wait for, not created yet), children sorted by path.
func (s *server) queueTree() PartitionQueue {
	src := queueSources{partition: s.opts.Partition, part: s.partitionConfig(), table: s.shareTable(), pending: s.opts.Pending != nil}
	src.dyn, _ = s.opts.Usage.(dynamicQueues)

	byPath := map[string]*qnode{}
	var build func(qu *ugm.QueueUsage) *qnode
	build = func(qu *ugm.QueueUsage) *qnode {
		n := &qnode{path: qu.QueuePath, usage: qu}
		byPath[n.path] = n
		for _, c := range qu.Children {
			n.children = append(n.children, build(c))
		}
		return n
	}
	usage := s.opts.Usage.Queues()
	if usage == nil {
		usage = &ugm.QueueUsage{QueuePath: "root"}
	}
	root := build(usage)

	// All is sorted by path, so a parent comes before its children (a
	// prefix sorts first). A path whose parent is unknown (a table computed
	// before the queue went) is left out.
	for _, sh := range src.table.All() {
		if byPath[sh.Path] != nil {
			continue
		}
		parent := byPath[queueconfig.ParentPath(sh.Path)]
		if parent == nil {
			continue
		}
		n := &qnode{path: sh.Path}
		byPath[n.path] = n
		parent.children = append(parent.children, n)
	}

	if src.pending {
		// Every queue sums the pending requests of its subtree, including
		// those of queues it does not show.
		for path, v := range s.opts.Pending() {
			for p := path; p != ""; p = queueconfig.ParentPath(p) {
				if n := byPath[p]; n != nil {
					addSaturated(&n.pending, v)
				}
			}
		}
	}
	return src.render(root)
}

// render turns n and its subtree into the answer.
func (src *queueSources) render(n *qnode) PartitionQueue {
	sort.Slice(n.children, func(i, j int) bool { return n.children[i].path < n.children[j].path })
	var cq *queueconfig.Queue
	if src.part != nil {
		cq = src.part.Queue(n.path)
	}
	q := PartitionQueue{
		QueueName: n.path,
		Partition: src.partition,
		Parent:    queueconfig.ParentPath(n.path),
		IsManaged: cq != nil || n.path == "root",
		IsLeaf:    len(n.children) == 0,
	}
	if cq != nil {
		q.IsLeaf = !cq.IsParent
		q.Properties = cq.Properties
		q.GuaranteedResource = nonEmpty(cq.Guaranteed.Map())
	}
	q.Status, q.Elastic = queueState(src.part, src.dyn, n.path, len(n.children) == 0, n.usage != nil)
	if u := n.usage; u != nil {
		q.AllocatedResource = nonEmpty(u.ResourceUsage.Map())
		q.ReservedResource = nonEmpty(u.ReservedResource.Map())
		q.MaxResource = nonEmpty(u.MaxResources.Map())
		q.MaxRunningApps = u.MaxApplications
		q.RunningApps = uint64(len(u.RunningApplications))
	}
	if sh := src.table.Get(n.path); sh != nil {
		q.GuaranteedResource = nonEmpty(sh.Configured.Map())
		q.MaxResource = nonEmpty(sh.Max.Map())
		q.RuntimeResource = nonEmpty(sh.Runtime.Map())
	}
	if src.pending {
		q.PendingResource = nonEmpty(n.pending.Map())
	}
	for _, c := range n.children {
		q.ChildNames = append(q.ChildNames, c.path)
		q.Children = append(q.Children, src.render(c))
	}
	return q
}

// queueState returns the status of the queue at path and whether
// admission checks its runtime share, as ugm decides it: a configured
// queue by its own settings (the config makes a subtree elastic), a
// dynamic leaf by the child template in force for it (the nearest on the
// way to root), a dynamic parent or a draining queue never. leaf: the
// queue has no children; tracked: ugm has the queue (not only the share
// table).
func queueState(part *queueconfig.Partition, dyn dynamicQueues, path string, leaf, tracked bool) (status string, elastic bool) {
	if part == nil {
		return statusActive, false
	}
	if cq := part.Queue(path); cq != nil {
		return statusActive, cq.Sharing.Elastic
	}
	if tracked && dyn != nil {
		if _, _, draining := dyn.DynamicQueue(path); draining {
			return statusDraining, false
		}
	}
	return statusActive, leaf && templateElastic(part, path)
}

// templateElastic reports whether the child template in force for a
// dynamic queue at path turns shares on.
func templateElastic(part *queueconfig.Partition, path string) bool {
	for p := queueconfig.ParentPath(path); p != ""; p = queueconfig.ParentPath(p) {
		cq := part.Queue(p)
		switch {
		case cq == nil:
			continue
		case !cq.IsParent:
			return false
		case cq.ChildTemplate != nil:
			return cq.ChildTemplate.Sharing.Elastic
		}
	}
	return false
}

// addSaturated adds o to v, stopping at the largest int64 instead of
// wrapping (pending requests are summed from pods; nothing checked them).
func addSaturated(v *resources.Vector, o resources.Vector) {
	for i, x := range o {
		id := resources.ID(i)
		cur := v.Get(id)
		switch {
		case x <= 0:
			continue
		case cur > math.MaxInt64-x:
			v.Set(id, math.MaxInt64)
		default:
			v.Set(id, cur+x)
		}
	}
}

// nonEmpty is m, or nil when it is empty (left out of the answer).
func nonEmpty[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	return m
}
