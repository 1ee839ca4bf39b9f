package userquota

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	apipod "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
	"k8s.io/utils/clock"

	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// Reclaim (docs/reclaim.md): the plugin's PostFilter replaces
// DefaultPreemption. It runs the scheduler's own preemption machinery
// (preemption.Evaluator: dry runs on the nodes in parallel, PDB-aware
// candidate choice, nomination, victim deletion) with UserQuota's victim
// choice (victims.go): pods of queues over their runtime share, never below
// it, and lower-priority pods of the preemptor's own queue.

// Event reasons.
const (
	// ReasonPreempted is on a victim (as kube-scheduler names it).
	ReasonPreempted = "Preempted"
	// ReasonPreempting is on the pod that preempted, listing its victims.
	ReasonPreempting = "Preempting"
)

// Defaults of kube-scheduler's DefaultPreemptionArgs: how many nodes a
// preemption dry-runs at least, in percent of the nodes and absolute.
const (
	minCandidateNodesPercentage = 10
	minCandidateNodesAbsolute   = 100
)

// reclaimBook is the plugin's preemption bookkeeping. Its lock is taken
// alone: never while calling the ledger, ugm or the framework.
type reclaimBook struct {
	clock    clock.WithDelayedExecution
	activate activateFunc

	mu sync.Mutex
	// leaving: pods preempted or terminating that are still charged; their
	// usage is on its way out and is not counted when deciding how much a
	// queue may lose, so two preemptions in a row do not take the same
	// room twice.
	leaving map[types.UID]ugm.Request
	// waiters: pods of elastic queues that found no victims; a share
	// recompute that changes any share sends them back to the active queue.
	waiters map[types.UID]*v1.Pod
	// refusedSince: when the pod's preemption delay started, when its
	// PodScheduled condition does not say so yet.
	refusedSince map[types.UID]time.Time
	// timers activate a pod when its preemption delay is over.
	timers map[types.UID]clock.Timer
	// runs: the preemptions in progress, by preemptor.
	runs map[types.UID]*preemptRun
}

// preemptRun is one preemption in progress: its state and what it evicted.
type preemptRun struct {
	rs      *reclaimState
	mu      sync.Mutex
	victims []victimRecord
	// pdbViolations of the candidate that was carried out.
	pdbViolations int64
}

type victimRecord struct {
	key, queue, reason string
}

func newReclaimBook(c clock.WithDelayedExecution, activate activateFunc) *reclaimBook {
	return &reclaimBook{
		clock:        c,
		activate:     activate,
		leaving:      map[types.UID]ugm.Request{},
		waiters:      map[types.UID]*v1.Pod{},
		refusedSince: map[types.UID]time.Time{},
		timers:       map[types.UID]clock.Timer{},
		runs:         map[types.UID]*preemptRun{},
	}
}

func (b *reclaimBook) markLeaving(uid types.UID, req ugm.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leaving[uid] = req
}

// isLeaving reports whether the pod was preempted (or seen terminating)
// and still holds its charge.
func (b *reclaimBook) isLeaving(uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.leaving[uid]
	return ok
}

// released forgets a pod whose charge was released.
func (b *reclaimBook) released(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.leaving, uid)
}

func (b *reclaimBook) leavingRequests() []ugm.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]ugm.Request, 0, len(b.leaving))
	for _, r := range b.leaving {
		out = append(out, r)
	}
	return out
}

// forget drops what is kept about a pod that was bound or went away.
func (b *reclaimBook) forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.waiters, uid)
	delete(b.refusedSince, uid)
	if t := b.timers[uid]; t != nil {
		t.Stop()
		delete(b.timers, uid)
	}
}

func (b *reclaimBook) addWaiter(pod *v1.Pod) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiters[pod.UID] = pod
}

func (b *reclaimBook) dropWaiter(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.waiters, uid)
}

// takeWaiters returns and forgets every waiter.
func (b *reclaimBook) takeWaiters() map[string]*v1.Pod {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiters) == 0 {
		return nil
	}
	out := make(map[string]*v1.Pod, len(b.waiters))
	for uid, p := range b.waiters {
		out[p.Namespace+"/"+p.Name] = p
		delete(b.waiters, uid)
	}
	return out
}

// activateWaiters sends the pods that found no victims back to the active
// queue: the shares changed, so a queue may now be over its share.
func (b *reclaimBook) activateWaiters(logger klog.Logger) {
	if pods := b.takeWaiters(); len(pods) > 0 {
		logger.V(4).Info("Activating pods waiting for a queue over its share", "count", len(pods))
		b.activate(logger, pods)
	}
}

// delayLeft returns how much of its queue's preemption delay the pod has
// still to wait, and makes sure it is activated then. The delay runs from
// the pod's first refusal: its PodScheduled=False condition, or the first
// PostFilter that saw it when the condition is not written yet.
func (b *reclaimBook) delayLeft(logger klog.Logger, pod *v1.Pod, delay time.Duration) time.Duration {
	if delay <= 0 {
		return 0
	}
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	since, ok := b.refusedSince[pod.UID]
	if !ok {
		since = now
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Time.Before(since) {
			since = c.LastTransitionTime.Time
		}
	}
	b.refusedSince[pod.UID] = since
	left := since.Add(delay).Sub(now)
	if left <= 0 {
		return 0
	}
	if b.timers[pod.UID] == nil {
		key := pod.Namespace + "/" + pod.Name
		uid := pod.UID
		b.timers[pod.UID] = b.clock.AfterFunc(left, func() {
			b.mu.Lock()
			delete(b.timers, uid)
			b.mu.Unlock()
			logger.V(4).Info("Preemption delay over: activating the pod", "pod", key)
			b.activate(logger, map[string]*v1.Pod{key: pod})
		})
	}
	return left
}

func (b *reclaimBook) start(uid types.UID, rs *reclaimState) *preemptRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := &preemptRun{rs: rs}
	b.runs[uid] = r
	return r
}

func (b *reclaimBook) run(uid types.UID) *preemptRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runs[uid]
}

func (b *reclaimBook) done(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.runs, uid)
}

// reclaimer is UserQuota's preemption.Interface.
type reclaimer struct{ pl *Plugin }

var _ preemption.Interface = &reclaimer{}

// newEvaluator builds the preemption machinery with our victim choice and
// our PreemptPod (which says why a victim goes). Synchronous: the pod is
// nominated after its victims were deleted, and no PreEnqueue plugin has to
// hold it back meanwhile.
func (pl *Plugin) newEvaluator() *preemption.Evaluator {
	ev := preemption.NewEvaluator(Name, pl.handle, &reclaimer{pl: pl}, false)
	ev.PreemptPod = pl.preemptPod
	return ev
}

// PostFilter preempts for a pod that passed the quota check but found no
// node: see docs/reclaim.md.
func (pl *Plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	defer schedmetrics.PreemptionAttempts.Inc()
	logger := klog.FromContext(ctx)
	s, err := getPreFilterState(state)
	if err != nil {
		// Refused by quota (PreFilter): no room in the quota, none to make
		// on a node.
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: not eligible: the pod is over a quota limit")
	}
	cfg := pl.partition()
	pol := policyFor(cfg, s.req.Queue)
	if pol.disabledBy != "" {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("preemption: not eligible: preemption.policy of queue %s is disabled", pol.disabledBy))
	}
	if left := pl.reclaim.delayLeft(logger, pod, pol.delay); left > 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("preemption: not eligible yet: queue %s sets preemption.delay %s (%s left)",
			pol.delayFrom, pol.delay, left.Round(time.Second)))
	}
	rs, why := pl.newReclaimState(pod, s.req, s.blocked, cfg, pol)
	if why != "" {
		// About shares: a share change may make it eligible.
		pl.reclaim.addWaiter(pod)
		return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: not eligible: "+why)
	}
	state.Write(reclaimKey, rs)
	run := pl.reclaim.start(pod.UID, rs)
	defer pl.reclaim.done(pod.UID)

	result, status := pl.evaluator.Preempt(ctx, state, pod, m)
	switch {
	case status.IsSuccess():
		pl.reclaim.dropWaiter(pod.UID)
		pl.reportPreemption(logger, pod, rs, result, run)
	case rs.reclaim && result != nil && status.Code() == fwk.Unschedulable:
		// No candidate (not "not eligible"): a later share change may
		// put a queue over its share.
		pl.reclaim.addWaiter(pod)
	}
	if msg := status.Message(); msg != "" {
		return result, fwk.NewStatus(status.Code(), "preemption: "+msg)
	}
	return result, status
}

// newReclaimState computes what the preemptor may take. The reason is not
// "" when it may not preempt at all.
func (pl *Plugin) newReclaimState(pod *v1.Pod, req ugm.Request, blocked []string, cfg *queueconfig.Partition, pol queuePolicy) (*reclaimState, string) {
	rs := &reclaimState{
		queue:    req.Queue,
		priority: corev1helpers.PodPriority(pod),
		fence:    pol.fence,
		fenceOf:  func(q string) string { return fenceFor(cfg, q) },
	}
	eq := pl.ugm.ElasticQueues()
	if eq == nil || !pl.ugm.InForce().Elastic {
		return rs, ""
	}
	rs.queues = make(map[string]*queueUse, len(eq))
	for p, e := range eq {
		rs.queues[p] = &queueUse{usage: e.Usage, share: e.Share}
	}
	for _, l := range pl.reclaim.leavingRequests() {
		for p := l.Queue; p != ""; p = queueconfig.ParentPath(p) {
			if q := rs.queues[p]; q != nil {
				q.usage.SubClamped(l.Resources)
			}
		}
	}
	for _, q := range rs.queues {
		q.over = overBy(q.usage, q.share)
	}
	for p := req.Queue; p != ""; p = queueconfig.ParentPath(p) {
		if rs.queues[p] != nil {
			rs.reclaim = true
			break
		}
	}
	if !rs.reclaim {
		if len(blocked) > 0 {
			return nil, "queues above its own are at their share"
		}
		return rs, ""
	}
	// Pods of the same queue already nominated (they preempted and wait
	// for their room) count as its usage: without them, a burst of pods
	// would each take back room that only one of them can use.
	nominated := pl.nominatedInQueue(pod, req.Queue, cfg)
	want := req.Resources.Clone()
	if want.CanAdd(nominated) {
		want.AddUnchecked(nominated)
	}
	if !nominated.IsZero() {
		if why := rs.overShare(req.Queue, want); why != "" {
			return nil, why
		}
	}
	// Queues above the pod's own that are at their share (PreFilter
	// refused it for them): the victims must give back enough in them,
	// and come from inside the deepest one.
	for _, p := range blocked {
		q := rs.queues[p]
		if q == nil {
			continue
		}
		var need resources.Vector
		for _, b := range q.share.Runtime {
			if req.Resources.Get(b.ID) > 0 {
				if d := q.usage.Get(b.ID) + want.Get(b.ID) - b.Max; d > 0 {
					need.Set(b.ID, d)
				}
			}
		}
		if !need.IsZero() {
			if rs.need == nil {
				rs.need = map[string]resources.Vector{}
				rs.within = p
			}
			rs.need[p] = need
		}
	}
	return rs, ""
}

// overShare says why need (this pod and its queue's nominated pods) does
// not fit its own queue's share, or "" when it does: within the queue's
// guaranteed share, or within its runtime share. (The queues above it are
// the need's business.)
func (rs *reclaimState) overShare(leaf string, need resources.Vector) string {
	q := rs.queues[leaf]
	if q == nil || q.share.WithinGuaranteed(q.usage, need) {
		return ""
	}
	if e, over := q.share.Runtime.Exceeds(q.usage, need); over {
		return fmt.Sprintf("pods of queue %s already nominated for a node take its share: with this one %s %s+%s > %s",
			leaf, e.ID.Name(), resources.FormatValue(e.ID, e.Usage), resources.FormatValue(e.ID, e.Request), resources.FormatValue(e.ID, e.Max))
	}
	return ""
}

// nominatedInQueue sums the requests of the pods of queue (other than pod)
// nominated to a node and not charged yet, with a priority at least pod's.
func (pl *Plugin) nominatedInQueue(pod *v1.Pod, queue string, cfg *queueconfig.Partition) resources.Vector {
	nodes, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil
	}
	prio := corev1helpers.PodPriority(pod)
	var sum resources.Vector
	for _, n := range nodes {
		for _, pi := range pl.handle.NominatedPodsForNode(n.Node().Name) {
			p := pi.GetPod()
			if p.UID == pod.UID || !pl.ours(p) || corev1helpers.PodPriority(p) < prio {
				continue
			}
			if _, charged := pl.ledger.Get(string(p.UID)); charged {
				continue
			}
			req, err := pl.podRequest(p, cfg, pl.queues())
			if err != nil || req.Queue != queue || !sum.CanAdd(req.Resources) {
				continue
			}
			sum.AddUnchecked(req.Resources)
		}
	}
	return sum
}

// victimOf returns the pod as a possible victim: ours and charged, or
// ours and terminating already (leaving: its room is about to be free, as
// kube-scheduler counts it); nil otherwise.
func (pl *Plugin) victimOf(pi fwk.PodInfo) *victim {
	pod := pi.GetPod()
	if !pl.ours(pod) {
		return nil
	}
	c, live := pl.ledger.Get(string(pod.UID))
	start := pod.CreationTimestamp.Time
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	// A pod we preempted is leaving even while the scheduler's snapshot
	// does not show its deletion yet (informer lag under load): it must not
	// be chosen, deleted and counted a second time.
	if pod.DeletionTimestamp != nil || pl.reclaim.isLeaving(pod.UID) {
		return &victim{pi: pi, pod: pod, key: pod.Namespace + "/" + pod.Name, queue: c.Request.Queue,
			priority: corev1helpers.PodPriority(pod), start: start, leaving: true}
	}
	if !live {
		return nil
	}
	return &victim{
		pi:          pi,
		pod:         pod,
		key:         pod.Namespace + "/" + pod.Name,
		queue:       c.Request.Queue,
		res:         c.Request.Resources,
		priority:    corev1helpers.PodPriority(pod),
		start:       start,
		preemptible: podPreemptible(pod) && !c.Request.NonPreemptible,
	}
}

// GetOffsetAndNumCandidates: a random first node and DefaultPreemption's
// default number of candidates.
func (r *reclaimer) GetOffsetAndNumCandidates(numNodes int32) (int32, int32) {
	n := numNodes * minCandidateNodesPercentage / 100
	if n < minCandidateNodesAbsolute {
		n = minCandidateNodesAbsolute
	}
	if n > numNodes {
		n = numNodes
	}
	return rand.Int31n(numNodes), n
}

// CandidatesToVictimsMap maps each candidate node to its victims.
func (r *reclaimer) CandidatesToVictimsMap(candidates []preemption.Candidate) map[string]*extenderv1.Victims {
	m := make(map[string]*extenderv1.Victims, len(candidates))
	for _, c := range candidates {
		m[c.Name()] = c.Victims()
	}
	return m
}

// PodEligibleToPreemptOthers: not a pod with preemptionPolicy Never, nor
// one whose earlier victims are still terminating on its nominated node
// (unless that node no longer suits it), as DefaultPreemption decides.
// Queue policy and delay are decided before (PostFilter).
func (r *reclaimer) PodEligibleToPreemptOthers(_ context.Context, pod *v1.Pod, nominatedNodeStatus *fwk.Status) (bool, string) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return false, "not eligible due to preemptionPolicy=Never."
	}
	nom := pod.Status.NominatedNodeName
	if nom == "" || nominatedNodeStatus.Code() == fwk.UnschedulableAndUnresolvable {
		return true, ""
	}
	if ni, _ := r.pl.handle.SnapshotSharedLister().NodeInfos().Get(nom); ni != nil {
		for _, p := range ni.GetPods() {
			if podTerminatingByPreemption(p.GetPod()) {
				return false, "not eligible due to a terminating pod on the nominated node."
			}
		}
	}
	return true, ""
}

// podTerminatingByPreemption: the pod is being deleted by a scheduler's
// preemption.
func podTerminatingByPreemption(p *v1.Pod) bool {
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			return c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler
		}
	}
	return false
}

// OrderedScoreFuncs: nil, so candidate nodes are compared as kube-scheduler
// does (fewest PDB violations, lowest highest victim priority, ...).
func (r *reclaimer) OrderedScoreFuncs(context.Context, map[string]*extenderv1.Victims) []func(string) int64 {
	return nil
}

// SelectVictimsOnNode finds the victims on one node (nodeInfo and state are
// copies): the eligible pods least important first, within each queue's
// allowance (victims.go), removed; if the pod fits then, the most important
// of them are given back while it still fits, those whose eviction would
// violate a PodDisruptionBudget first, as DefaultPreemption does.
func (r *reclaimer) SelectVictimsOnNode(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo, pdbs []*policy.PodDisruptionBudget) ([]*v1.Pod, int, *fwk.Status) {
	logger := klog.FromContext(ctx)
	fh := r.pl.handle
	c, err := state.Read(reclaimKey)
	if err != nil {
		return nil, 0, fwk.AsStatus(err)
	}
	rs, ok := c.(*reclaimState)
	if !ok {
		return nil, 0, fwk.AsStatus(fmt.Errorf("%+v cannot be converted to *reclaimState", c))
	}
	var pods []*victim
	for _, pi := range nodeInfo.GetPods() {
		if v := r.pl.victimOf(pi); v != nil {
			pods = append(pods, v)
		}
	}
	chosen := rs.choose(pods, pdbs)
	if len(chosen) == 0 {
		return nil, 0, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "no pod on the node may be preempted for this pod (only pods of queues over their share, or of lower priority in its own queue)")
	}
	removePod := func(pi fwk.PodInfo) error {
		if err := nodeInfo.RemovePod(logger, pi.GetPod()); err != nil {
			return err
		}
		return fh.RunPreFilterExtensionRemovePod(ctx, state, pod, pi, nodeInfo).AsError()
	}
	addPod := func(pi fwk.PodInfo) error {
		nodeInfo.AddPodInfo(pi)
		return fh.RunPreFilterExtensionAddPod(ctx, state, pod, pi, nodeInfo).AsError()
	}
	for _, v := range chosen {
		if err := removePod(v.pi); err != nil {
			return nil, 0, fwk.AsStatus(err)
		}
	}
	if q := rs.needUnmet(chosen, nil); q != "" {
		return nil, 0, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("queue %s is at its share and the pods on the node do not free enough of it", q))
	}
	if s := fh.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo); !s.IsSuccess() {
		return nil, 0, s
	}
	// Give back as many as possible, most important first; those whose
	// eviction would violate a PDB before the others; pods already leaving
	// last (their room is counted on before any pod is evicted).
	sort.SliceStable(chosen, func(i, j int) bool {
		if chosen[i].leaving != chosen[j].leaving {
			return !chosen[i].leaving
		}
		return lessImportant(chosen[j], chosen[i])
	})
	var violating, nonViolating []*victim
	for _, v := range chosen {
		if v.violates {
			violating = append(violating, v)
		} else {
			nonViolating = append(nonViolating, v)
		}
	}
	var victims []*victim
	// out: what is still removed, victims or not yet reprieved.
	out := map[*victim]bool{}
	for _, v := range chosen {
		out[v] = true
	}
	reprieve := func(v *victim) (bool, error) {
		// Given back only if the pod still fits the node, and the queues
		// it needs room in keep enough without it.
		if rs.needUnmet(chosen, func(x *victim) bool { return x != v && out[x] }) != "" {
			victims = append(victims, v)
			return false, nil
		}
		if err := addPod(v.pi); err != nil {
			return false, err
		}
		if fh.RunFilterPluginsWithNominatedPods(ctx, state, pod, nodeInfo).IsSuccess() {
			delete(out, v)
			return true, nil
		}
		if err := removePod(v.pi); err != nil {
			return false, err
		}
		victims = append(victims, v)
		return false, nil
	}
	numViolating := 0
	for _, v := range violating {
		fits, err := reprieve(v)
		if err != nil {
			return nil, 0, fwk.AsStatus(err)
		}
		if !fits {
			numViolating++
		}
	}
	for _, v := range nonViolating {
		if _, err := reprieve(v); err != nil {
			return nil, 0, fwk.AsStatus(err)
		}
	}
	sort.SliceStable(victims, func(i, j int) bool { return lessImportant(victims[j], victims[i]) })
	res := make([]*v1.Pod, len(victims))
	for i, v := range victims {
		res[i] = v.pi.GetPod()
		logger.V(5).Info("Preemption victim on node", "pod", klog.KObj(res[i]), "node", nodeInfo.Node().Name, "queue", v.queue, "reason", v.reason)
	}
	return res, numViolating, nil
}

// preemptPod evicts one victim: the Evaluator's own steps (reject it if it
// waits at Permit; else the DisruptionTarget condition, then deletion),
// with a condition message and an event that say which queue took the room
// and why, and our bookkeeping.
func (pl *Plugin) preemptPod(ctx context.Context, c preemption.Candidate, preemptor, victim *v1.Pod, pluginName string) error {
	logger := klog.FromContext(ctx)
	if pl.reclaim.isLeaving(victim.UID) {
		// Preempted already (the candidate came from a snapshot that does
		// not show the deletion yet): its room is on its way.
		return nil
	}
	charge, charged := pl.ledger.Get(string(victim.UID))
	run := pl.reclaim.run(preemptor.UID)
	why, queue, reason := pl.victimWhy(run, preemptor, victim, charge.Request)
	if wp := pl.handle.GetWaitingPod(victim.UID); wp != nil {
		wp.Reject(pluginName, "preempted: "+why)
	} else {
		cond := &v1.PodCondition{
			Type:               v1.DisruptionTarget,
			ObservedGeneration: apipod.CalculatePodConditionObservedGeneration(&victim.Status, victim.Generation, v1.DisruptionTarget),
			Status:             v1.ConditionTrue,
			Reason:             v1.PodReasonPreemptionByScheduler,
			Message:            preemptor.Spec.SchedulerName + ": " + why,
		}
		status := victim.Status.DeepCopy()
		if apipod.UpdatePodCondition(status, cond) {
			if err := schedutil.PatchPodStatus(ctx, pl.handle.ClientSet(), victim.Name, victim.Namespace, &victim.Status, status); err != nil {
				if apierrors.IsNotFound(err) {
					return nil
				}
				logger.Error(err, "Could not add the DisruptionTarget condition to a preemption victim", "preemptor", klog.KObj(preemptor), "victim", klog.KObj(victim))
				return err
			}
		}
		// Leaving from now on: marked before the deletion, so that a release
		// that follows it (a pod without grace period goes at once) is not
		// undone; a release before the mark is caught just after.
		if charged {
			pl.reclaim.markLeaving(victim.UID, charge.Request)
		}
		err := schedutil.DeletePod(ctx, pl.handle.ClientSet(), victim)
		if _, live := pl.ledger.Get(string(victim.UID)); !live || err != nil && !apierrors.IsNotFound(err) {
			pl.reclaim.released(victim.UID)
		}
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			logger.Error(err, "Could not delete a preemption victim", "preemptor", klog.KObj(preemptor), "victim", klog.KObj(victim))
			return err
		}
	}
	logger.V(2).Info("Preempted a pod", "preemptor", klog.KObj(preemptor), "victim", klog.KObj(victim), "node", c.Name(), "queue", queue, "reason", reason)
	pl.handle.EventRecorder().Eventf(victim, preemptor, v1.EventTypeNormal, ReasonPreempted, "Preempting",
		"Preempted by pod %s/%s on node %s: %s", preemptor.Namespace, preemptor.Name, c.Name(), why)
	metrics.RecordPreempted(queue, reason)
	if run != nil {
		run.mu.Lock()
		run.victims = append(run.victims, victimRecord{key: victim.Namespace + "/" + victim.Name, queue: queue, reason: reason})
		run.pdbViolations = c.Victims().NumPDBViolations
		run.mu.Unlock()
	}
	return nil
}

// victimWhy says why victim goes, for its condition and event, and returns
// its queue and the metric reason.
func (pl *Plugin) victimWhy(run *preemptRun, preemptor, victim *v1.Pod, charge ugm.Request) (why, queue, reason string) {
	queue = charge.Queue
	if run == nil {
		return "preempting to accommodate another pod", queue, metrics.ReasonPriority
	}
	rs := run.rs
	if queue == rs.queue {
		return fmt.Sprintf("preempting to accommodate a higher priority pod of queue %s (priority %d > %d)",
			queue, rs.priority, corev1helpers.PodPriority(victim)), queue, metrics.ReasonPriority
	}
	top := commonAncestor(rs.queue, queue)
	for p := queue; p != top && p != ""; p = queueconfig.ParentPath(p) {
		q := rs.queues[p]
		if q == nil {
			continue
		}
		for i, o := range q.over {
			id := resources.ID(i)
			if o <= 0 || charge.Resources.Get(id) <= 0 {
				continue
			}
			rt, _ := q.share.Runtime.Get(id)
			return fmt.Sprintf("queue %s uses more than its share (%s %s > %s, guaranteed %s): queue %s takes back capacity it lent",
				p, id.Name(), resources.FormatValue(id, q.usage.Get(id)), resources.FormatValue(id, rt),
				resources.FormatValue(id, q.share.Guaranteed.Get(id)), rs.queue), queue, metrics.ReasonReclaim
		}
	}
	return fmt.Sprintf("queue %s uses more than its share: queue %s takes back capacity it lent", queue, rs.queue), queue, metrics.ReasonReclaim
}

// reportPreemption tells the preemptor what it preempted (an event) and
// counts it.
func (pl *Plugin) reportPreemption(logger klog.Logger, pod *v1.Pod, rs *reclaimState, result *fwk.PostFilterResult, run *preemptRun) {
	run.mu.Lock()
	victims := append([]victimRecord(nil), run.victims...)
	pdb := run.pdbViolations
	run.mu.Unlock()
	if len(victims) == 0 {
		return
	}
	node := ""
	if result != nil && result.NominatingInfo != nil {
		node = result.NominatedNodeName
	}
	sort.Slice(victims, func(i, j int) bool { return victims[i].key < victims[j].key })
	parts := make([]string, len(victims))
	for i, v := range victims {
		what := "over its share"
		if v.reason == metrics.ReasonPriority {
			what = "lower priority"
		}
		parts[i] = fmt.Sprintf("%s (queue %s, %s)", v.key, v.queue, what)
	}
	msg := fmt.Sprintf("Preempted %d pod(s) on node %s for this pod of queue %s: %s", len(victims), node, rs.queue, strings.Join(parts, ", "))
	kind := v1.EventTypeNormal
	if pdb > 0 {
		kind = v1.EventTypeWarning
		msg += fmt.Sprintf("; %d of them against a PodDisruptionBudget: no other choice made room", pdb)
	}
	pl.handle.EventRecorder().Eventf(pod, nil, kind, ReasonPreempting, "Preempting", "%s", msg)
	metrics.RecordPreemption(rs.queue)
	logger.V(2).Info("Preempted for a pod", "pod", klog.KObj(pod), "queue", rs.queue, "node", node, "victims", len(victims), "pdbViolations", pdb)
}
