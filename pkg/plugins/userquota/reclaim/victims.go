package reclaim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// Victim is a pod on a node that reclaim may evict.
type Victim struct {
	// PodInfo is the scheduler's view of the pod, for the node's dry run
	// (Node); Pod its object.
	PodInfo fwk.PodInfo
	Pod     *v1.Pod
	// Key is namespace/name, for messages and ties.
	Key string
	// Queue is its charge's leaf queue; Res its charge.
	Queue    string
	Res      resources.Vector
	Priority int32
	// Start is when it started (its creation when it has not).
	Start time.Time
	// Preemptible is false for a pod labelled userquota.io/preemptible:
	// "false" (now or when it was charged).
	Preemptible bool
	// Leaving: the pod is terminating already. It is always "taken"
	// (first), costs no queue anything (its usage is counted out already)
	// and is not evicted again; the preemptor may wait for its room.
	Leaving bool
	// Trees are the quota tree nodes it is charged on, each with the node
	// it is allocated at (ugm.TreeNode.ANode).
	Trees *ugm.TreePart

	// reason is set by eligible: metrics.ReasonPriority or ReasonReclaim.
	reason string
	// violates is set by choose: evicting it would violate a PDB.
	violates bool
}

// Reason is why the victim was chosen: metrics.ReasonPriority (a lower
// priority pod of the preemptor's own queue) or metrics.ReasonReclaim.
func (v *Victim) Reason() string { return v.reason }

// lessImportant orders victims: lower priority first, then the most
// recently started, then by name (so the order does not depend on the
// node's pod order).
func lessImportant(a, b *Victim) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	if !a.Start.Equal(b.Start) {
		return a.Start.After(b.Start)
	}
	return a.Key > b.Key
}

// inside reports whether queue is q or below it.
func inside(queue, q string) bool {
	return queue == q || strings.HasPrefix(queue, q+".")
}

// eligible decides whether the preemptor may take v at all, and sets
// v.reason. Pods of the preemptor's own queue: only lower priority (as
// kube-scheduler does). Pods of other queues: only when reclaim is on and
// every elastic queue between v's leaf and the queue holding both (that
// one excluded: the preemptor's pod stays in it) uses more than its share
// of some resource v holds. Never across a fence, never a non-preemptible
// pod.
func (s *State) eligible(v *Victim) bool {
	v.reason = ""
	if v.Leaving {
		return true
	}
	if !v.Preemptible || s.fenceOf(v.Queue) != s.fence {
		return false
	}
	if s.borrowerFor(v) {
		v.reason = metrics.ReasonTree
		return true
	}
	if v.Queue == s.queue {
		if v.Priority >= s.priority {
			return false
		}
		v.reason = metrics.ReasonPriority
		return true
	}
	if !s.reclaim || s.within != "" && !strings.HasPrefix(v.Queue, s.within+".") {
		return false
	}
	top := CommonAncestor(s.queue, v.Queue)
	elastic := false
	for q := v.Queue; q != top && q != ""; q = queueconfig.ParentPath(q) {
		u := s.queues[q]
		if u == nil {
			continue
		}
		elastic = true
		if !holdsAny(u.over, v.Res) {
			return false
		}
	}
	if elastic {
		v.reason = metrics.ReasonReclaim
	}
	return elastic
}

// borrowerFor reports whether v is allocated at a quota tree node the
// preemptor needs room at, from a node below it (a borrower of soft
// nodes), and gives way to it: always when the preemptor fits below that
// node (the seed's consumer claiming room at a lower level), else only to
// a higher priority.
func (s *State) borrowerFor(v *Victim) bool {
	return s.borrowedAt(v) != nil
}

// borrowedAt is the tree need v, a borrower that gives way to the
// preemptor, gives room back at, and its node; nil when none.
func (s *State) borrowedAt(v *Victim) *ugm.TreeNode {
	if v.Trees == nil {
		return nil
	}
	for _, need := range s.treeNeeds {
		if !need.Lower && v.Priority >= s.priority {
			continue
		}
		for i := range v.Trees.Nodes {
			n := &v.Trees.Nodes[i]
			if n.Tree == need.Tree && n.Borrowed() && n.ANode == need.Node {
				return n
			}
		}
	}
	return nil
}

// needUnmet says which queue of need, or quota tree node of treeNeeds,
// the victims among vs (all of them when keep is nil, else those keep
// selects) do not give back enough room in, or "" when they give back
// enough everywhere.
func (s *State) needUnmet(vs []*Victim, keep func(*Victim) bool) string {
	for _, need := range s.treeNeeds {
		var freed resources.Vector
		for _, v := range vs {
			if !v.Leaving && (keep == nil || keep(v)) && countsAt(v.Trees, need.Tree, need.Node) && freed.CanAdd(v.Res) {
				freed.AddUnchecked(v.Res)
			}
		}
		for i, n := range need.Need {
			if n > 0 && freed.Get(resources.ID(i)) < n {
				return fmt.Sprintf(treeUnmetFmt, need.Tree, need.Node)
			}
		}
	}
	for q, need := range s.need {
		var freed resources.Vector
		for _, v := range vs {
			if !v.Leaving && (keep == nil || keep(v)) && inside(v.Queue, q) && freed.CanAdd(v.Res) {
				freed.AddUnchecked(v.Res)
			}
		}
		for i, n := range need {
			if n > 0 && freed.Get(resources.ID(i)) < n {
				return fmt.Sprintf(needUnmetFmt, q)
			}
		}
	}
	return ""
}

// holdsAny reports whether res has some of a resource over names.
func holdsAny(over, res resources.Vector) bool {
	for i, o := range over {
		if o > 0 && res.Get(resources.ID(i)) > 0 {
			return true
		}
	}
	return false
}

// taken is what the victims chosen so far take from each elastic queue.
type taken map[string]resources.Vector

// fits reports whether taking reclaim victim v too keeps every elastic
// queue between v's leaf and the common queue at or above its share in
// each resource it is over in. (A resource it is not over in is not
// bound: it cannot be given back without the pod that holds it.)
func (s *State) fits(v *Victim, t taken) bool {
	top := CommonAncestor(s.queue, v.Queue)
	for q := v.Queue; q != top && q != ""; q = queueconfig.ParentPath(q) {
		u := s.queues[q]
		if u == nil {
			continue
		}
		already := t[q]
		for i, o := range u.over {
			if o > 0 && already.Get(resources.ID(i))+v.Res.Get(resources.ID(i)) > o {
				return false
			}
		}
	}
	return true
}

func (s *State) take(v *Victim, t taken) {
	top := CommonAncestor(s.queue, v.Queue)
	for q := v.Queue; q != top && q != ""; q = queueconfig.ParentPath(q) {
		if s.queues[q] == nil {
			continue
		}
		x := t[q]
		x.AddUnchecked(v.Res)
		t[q] = x
	}
}

// choose returns the victims the preemptor may take from pods: the
// eligible ones, in the order they are taken, skipping a reclaim victim
// that would take a queue below its share given those taken before it.
// The order: pods already leaving, then pods whose eviction keeps every
// PodDisruptionBudget, then the others (so a budget's room is spent on
// them only when nothing else makes room, as kube-scheduler prefers); in
// each group least important first.
func (s *State) choose(pods []*Victim, pdbs []*policy.PodDisruptionBudget) []*Victim {
	var out []*Victim
	for _, v := range pods {
		if s.eligible(v) {
			out = append(out, v)
		}
	}
	// As kube-scheduler: a PDB's allowance goes to the most important pods.
	sort.SliceStable(out, func(i, j int) bool { return lessImportant(out[j], out[i]) })
	violating, nonViolating := splitByPDB(out, pdbs)
	for _, v := range violating {
		v.violates = !v.Leaving
	}
	for _, v := range nonViolating {
		v.violates = false
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Leaving != out[j].Leaving {
			return out[i].Leaving
		}
		if out[i].violates != out[j].violates {
			return !out[i].violates
		}
		return lessImportant(out[i], out[j])
	})
	t := taken{}
	kept := out[:0]
	for _, v := range out {
		if v.reason == metrics.ReasonReclaim {
			if !s.fits(v, t) {
				continue
			}
			s.take(v, t)
		}
		kept = append(kept, v)
	}
	return kept
}

// splitByPDB groups victims (in order) by whether evicting them, in this
// order, would take a PodDisruptionBudget below what it allows: the
// scheduler's own rule (DefaultPreemption's filterPodsWithPDBViolation).
func splitByPDB(vs []*Victim, pdbs []*policy.PodDisruptionBudget) (violating, nonViolating []*Victim) {
	allowed := make([]int32, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
	}
	for _, v := range vs {
		pod := v.Pod
		violates := false
		if len(pod.Labels) != 0 {
			for i, pdb := range pdbs {
				if pdb.Namespace != pod.Namespace {
					continue
				}
				sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
				if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
					continue
				}
				if _, disrupted := pdb.Status.DisruptedPods[pod.Name]; disrupted {
					continue
				}
				allowed[i]--
				if allowed[i] < 0 {
					violates = true
				}
			}
		}
		if violates {
			violating = append(violating, v)
		} else {
			nonViolating = append(nonViolating, v)
		}
	}
	return violating, nonViolating
}

// Why says why a pod of queue with priority, charged res, goes for this
// preemptor, for its condition and event, with the metric reason.
func (s *State) Why(queue string, priority int32, res resources.Vector) (why, reason string) {
	if queue == s.queue {
		return fmt.Sprintf("preempting to accommodate a higher priority pod of queue %s (priority %d > %d)",
			queue, s.priority, priority), metrics.ReasonPriority
	}
	top := CommonAncestor(s.queue, queue)
	for q := queue; q != top && q != ""; q = queueconfig.ParentPath(q) {
		u := s.queues[q]
		if u == nil {
			continue
		}
		for i, o := range u.over {
			id := resources.ID(i)
			if o <= 0 || res.Get(id) <= 0 {
				continue
			}
			rt, _ := u.share.Runtime.Get(id)
			return fmt.Sprintf("queue %s uses more than its share (%s %s > %s, guaranteed %s): queue %s takes back capacity it lent",
				q, id.Name(), resources.FormatValue(id, u.usage.Get(id)), resources.FormatValue(id, rt),
				resources.FormatValue(id, u.share.Guaranteed.Get(id)), s.queue), metrics.ReasonReclaim
		}
	}
	return fmt.Sprintf("queue %s uses more than its share: queue %s takes back capacity it lent", queue, s.queue), metrics.ReasonReclaim
}

// WhyCharge is Why for a victim with its charge: a borrower of a quota
// tree node the preemptor needs room at says so (metrics.ReasonTree).
func (s *State) WhyCharge(charge ugm.Request, priority int32) (why, reason string) {
	v := &Victim{Trees: charge.Trees, Priority: priority}
	if n := s.borrowedAt(v); n != nil {
		who := fmt.Sprintf("a pod of queue %s that fits below node %s", s.queue, n.ANode)
		if !s.lowerAt(n.Tree, n.ANode) {
			who = fmt.Sprintf("a pod of queue %s with a higher priority (%d > %d)", s.queue, s.priority, priority)
		}
		return fmt.Sprintf("quota tree %s: allocated at node %s above its node %s (room borrowed through soft nodes), which %s takes back",
			n.Tree, n.ANode, n.Node, who), metrics.ReasonTree
	}
	return s.Why(charge.Queue, priority, charge.Resources)
}

// lowerAt reports whether the preemptor fits below node of tree (a need
// there with Lower).
func (s *State) lowerAt(tree, node string) bool {
	for _, n := range s.treeNeeds {
		if n.Tree == tree && n.Node == node {
			return n.Lower
		}
	}
	return false
}
