package userquota

import (
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
	"github.com/userquota/userquota/pkg/shares"
)

// This file is reclaim's victim choice without the framework: which pods a
// preemptor may take, in which order, and how much each queue may lose
// (docs/reclaim.md). reclaim.go runs it on each node inside the scheduler's
// preemption machinery.

// reclaimKey is where PostFilter leaves the reclaim state for
// SelectVictimsOnNode.
const reclaimKey fwk.StateKey = "PostFilter" + Name

// queueUse is one elastic queue as reclaim sees it.
type queueUse struct {
	// usage is the queue's usage minus what pods already preempted or
	// terminating still hold (they are on their way out).
	usage resources.Vector
	share *shares.Share
	// over is, per resource, how much usage is above the runtime share
	// (positive entries only): how much the queue may lose of that
	// resource. All zero: the queue is within its share.
	over resources.Vector
}

// overBy returns the usage above the runtime share by resource, positive
// entries only (a resource the share does not bound is never over).
func overBy(usage resources.Vector, s *shares.Share) resources.Vector {
	var over resources.Vector
	for _, b := range s.Runtime {
		if d := usage.Get(b.ID) - b.Max; d > 0 {
			over.Set(b.ID, d)
		}
	}
	return over
}

// reclaimState is what one PostFilter computed for its preemptor. It is
// never modified after PostFilter wrote it: nodes are dry-run in parallel.
type reclaimState struct {
	// queue is the preemptor's leaf queue; priority its priority.
	queue    string
	priority int32
	// fence is the deepest fenced queue holding queue ("" none).
	fence string
	// reclaim: the preemptor may take pods of other queues that use more
	// than their share (its queue is elastic and a share table is in
	// force).
	reclaim bool
	// queues holds every elastic queue with a share, by path.
	queues map[string]*queueUse
	// fenceOf returns the deepest fenced queue holding a leaf queue.
	fenceOf func(queue string) string
	// need is, for each queue above the preemptor's own that is at its
	// share (PreFilter refused the pod for it), how much the victims must
	// give back there; within is the deepest of them: pods of other queues
	// are taken only inside it (elsewhere they would not help). nil: the
	// pod fits every share.
	need   map[string]resources.Vector
	within string
}

// Clone returns the state itself: it is never modified.
func (s *reclaimState) Clone() fwk.StateData { return s }

// victim is a pod on a node that reclaim may evict.
type victim struct {
	pi       fwk.PodInfo
	pod      *v1.Pod
	key      string // namespace/name, for messages and ties
	queue    string // its charge's leaf queue
	res      resources.Vector
	priority int32
	// start is when it started (its creation when it has not).
	start time.Time
	// preemptible is false for a pod labelled userquota.io/preemptible:
	// "false" (now or when it was charged).
	preemptible bool
	// reason is set by eligible: metrics.ReasonPriority or ReasonReclaim.
	reason string
	// violates is set by choose: evicting it would violate a PDB.
	violates bool
	// leaving: the pod is terminating already. It is always "taken" (first),
	// costs no queue anything (its usage is counted out already) and is
	// not evicted again; the preemptor may wait for its room.
	leaving bool
}

// lessImportant orders victims: lower priority first, then the most
// recently started, then by name (so the order does not depend on the
// node's pod order).
func lessImportant(a, b *victim) bool {
	if a.priority != b.priority {
		return a.priority < b.priority
	}
	if !a.start.Equal(b.start) {
		return a.start.After(b.start)
	}
	return a.key > b.key
}

// commonAncestor returns the deepest queue holding both a and b.
func commonAncestor(a, b string) string {
	for {
		if a == b || strings.HasPrefix(b, a+".") {
			return a
		}
		if a = queueconfig.ParentPath(a); a == "" {
			return ""
		}
	}
}

// eligible decides whether the preemptor may take v at all, and sets
// v.reason. Pods of the preemptor's own queue: only lower priority (as
// kube-scheduler does). Pods of other queues: only when reclaim is on and
// every elastic queue between v's leaf and the queue holding both (that
// one excluded: the preemptor's pod stays in it) uses more than its share
// of some resource v holds. Never across a fence, never a non-preemptible
// pod.
func (s *reclaimState) eligible(v *victim) bool {
	v.reason = ""
	if v.leaving {
		return true
	}
	if !v.preemptible || s.fenceOf(v.queue) != s.fence {
		return false
	}
	if v.queue == s.queue {
		if v.priority >= s.priority {
			return false
		}
		v.reason = metrics.ReasonPriority
		return true
	}
	if !s.reclaim || s.within != "" && !strings.HasPrefix(v.queue, s.within+".") {
		return false
	}
	top := commonAncestor(s.queue, v.queue)
	elastic := false
	for p := v.queue; p != top && p != ""; p = queueconfig.ParentPath(p) {
		q := s.queues[p]
		if q == nil {
			continue
		}
		elastic = true
		if !holdsAny(q.over, v.res) {
			return false
		}
	}
	if elastic {
		v.reason = metrics.ReasonReclaim
	}
	return elastic
}

// needUnmet returns a queue of need whose room the victims among vs (all
// of them when keep is nil, else those keep selects) do not give back, or
// "" when they give back enough everywhere.
func (s *reclaimState) needUnmet(vs []*victim, keep func(*victim) bool) string {
	for q, need := range s.need {
		var freed resources.Vector
		for _, v := range vs {
			if !v.leaving && (keep == nil || keep(v)) && (v.queue == q || strings.HasPrefix(v.queue, q+".")) && freed.CanAdd(v.res) {
				freed.AddUnchecked(v.res)
			}
		}
		for i, n := range need {
			if n > 0 && freed.Get(resources.ID(i)) < n {
				return q
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
func (s *reclaimState) fits(v *victim, t taken) bool {
	top := commonAncestor(s.queue, v.queue)
	for p := v.queue; p != top && p != ""; p = queueconfig.ParentPath(p) {
		q := s.queues[p]
		if q == nil {
			continue
		}
		already := t[p]
		for i, o := range q.over {
			if o > 0 && already.Get(resources.ID(i))+v.res.Get(resources.ID(i)) > o {
				return false
			}
		}
	}
	return true
}

func (s *reclaimState) take(v *victim, t taken) {
	top := commonAncestor(s.queue, v.queue)
	for p := v.queue; p != top && p != ""; p = queueconfig.ParentPath(p) {
		if s.queues[p] == nil {
			continue
		}
		x := t[p]
		x.AddUnchecked(v.res)
		t[p] = x
	}
}

// choose returns the victims the preemptor may take from pods: the
// eligible ones, in the order they are taken, skipping a reclaim victim
// that would take a queue below its share given those taken before it.
// The order: pods whose eviction keeps every PodDisruptionBudget first,
// then the others (so a budget's room is spent on them only when nothing
// else makes room, as kube-scheduler prefers); in each group least
// important first.
func (s *reclaimState) choose(pods []*victim, pdbs []*policy.PodDisruptionBudget) []*victim {
	var out []*victim
	for _, v := range pods {
		if s.eligible(v) {
			out = append(out, v)
		}
	}
	// As kube-scheduler: a PDB's allowance goes to the most important pods.
	sort.SliceStable(out, func(i, j int) bool { return lessImportant(out[j], out[i]) })
	violating, nonViolating := splitByPDB(out, pdbs)
	for _, v := range violating {
		v.violates = !v.leaving
	}
	for _, v := range nonViolating {
		v.violates = false
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].leaving != out[j].leaving {
			return out[i].leaving
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
func splitByPDB(vs []*victim, pdbs []*policy.PodDisruptionBudget) (violating, nonViolating []*victim) {
	allowed := make([]int32, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
	}
	for _, v := range vs {
		pod := v.pod
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
