package userquota

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/userquota/userquota/pkg/resources"
)

// capacity is the cluster's capacity for elastic quotas: the allocatable
// of schedulable, ready nodes, minus what pods this scheduler does not
// track use on them (system pods, other schedulers' pods). It is fed by
// informer handlers and read by the share recompute.
type capacity struct {
	mu      sync.Mutex
	nodes   map[string]nodeCapacity
	foreign map[types.UID]foreignPod
	// requests sums a foreign pod's requests.
	requests podRequests
}

type nodeCapacity struct {
	allocatable resources.Vector
	usable      bool // Ready and not cordoned
}

// foreignPod is a bound, running pod of another scheduler.
type foreignPod struct {
	node     string
	requests resources.Vector
}

func newCapacity(requests podRequests) *capacity {
	return &capacity{nodes: map[string]nodeCapacity{}, foreign: map[types.UID]foreignPod{}, requests: requests}
}

// setNode records a node; it reports whether the capacity changed.
func (c *capacity) setNode(n *v1.Node) bool {
	alloc, err := resources.FromResourceList(n.Status.Allocatable)
	if err != nil {
		alloc = nil // out of range: counted as nothing rather than wrong
	}
	nc := nodeCapacity{allocatable: alloc, usable: nodeUsable(n)}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.nodes[n.Name]
	c.nodes[n.Name] = nc
	return !ok || old.usable != nc.usable || !old.allocatable.Equal(nc.allocatable)
}

func (c *capacity) deleteNode(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.nodes[name]
	delete(c.nodes, name)
	return ok
}

// nodeUsable: pods can be placed on the node (taints aside: a tainted
// node still counts, as tolerating pods can use it).
func nodeUsable(n *v1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == v1.NodeReady {
			return cond.Status == v1.ConditionTrue
		}
	}
	return false
}

// setForeign records or forgets a pod of another scheduler; it reports
// whether the capacity changed.
func (c *capacity) setForeign(pod *v1.Pod) bool {
	running := pod.Spec.NodeName != "" && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed
	var req resources.Vector
	if running {
		var err error
		if req, err = c.requests.of(pod); err != nil {
			running = false
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had := c.foreign[pod.UID]
	if !running {
		delete(c.foreign, pod.UID)
		return had
	}
	c.foreign[pod.UID] = foreignPod{node: pod.Spec.NodeName, requests: req}
	return !had || old.node != pod.Spec.NodeName || !old.requests.Equal(req)
}

func (c *capacity) deleteForeign(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.foreign[uid]
	delete(c.foreign, uid)
	return ok
}

// total returns the capacity as a limit naming every resource a usable
// node reports (others are unbounded for shares: node fit decides).
func (c *capacity) total() resources.Limit {
	c.mu.Lock()
	defer c.mu.Unlock()
	var sum resources.Vector
	named := map[resources.ID]bool{}
	for _, n := range c.nodes {
		if !n.usable {
			continue
		}
		for i, x := range n.allocatable {
			if x != 0 {
				named[resources.ID(i)] = true
			}
		}
		if sum.CanAdd(n.allocatable) {
			sum.AddUnchecked(n.allocatable)
		}
	}
	for _, p := range c.foreign {
		if n, ok := c.nodes[p.node]; ok && n.usable {
			sum.SubClamped(p.requests)
		}
	}
	out := make(map[string]int64, len(named))
	for id := range named {
		out[id.Name()] = sum.Get(id)
	}
	return resources.NewLimit(out)
}
