package main

// The history: every change of every pod, in etcd revision order, read
// from etcd directly (not through the API server, whose watch the soak
// restarts). Replaying it gives the cluster's true state at every
// revision, across API server restarts, so the harness can check each
// binding against the limits in force when it happened, and see how long a
// refused pod waits once it fits.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/userquota/userquota/pkg/hold"
)

const podPrefix = "/registry/pods/"

// decisionSlack is how long before the harness sees a binding (or a wait)
// the scheduler may have decided it: the config versions in force in that
// window are the ones the decision may have used.
const decisionSlack = 10 * time.Second

var decoder = serializer.NewCodecFactory(scheme.Scheme).UniversalDeserializer()

// podRec is the replayed state of one pod.
type podRec struct {
	key, ns, name, uid string
	charge             podCharge
	owner              string // "", Job, ReplicaSet
	fate               string // naked pods: what the workload does with it
	life               time.Duration
	node               string
	phase              v1.PodPhase
	deleting           bool
	charged            bool
	group              string // tracked group while charged
	created            time.Time
	boundAt            time.Time
	terminalAt         time.Time
	refused            bool      // PodScheduled=False seen
	refusal            string    // its message
	refusedAt          time.Time // when that message was first seen
	treeHeld           bool      // held by a quota tree's node at least once
	fitSince           time.Time
	heldBehind         bool // seen fitting while kept behind a starving pod
	claim              *behindClaim
}

func (p *podRec) pending() bool {
	return p.node == "" && !p.deleting && p.phase != v1.PodSucceeded && p.phase != v1.PodFailed
}

// cfgVersion is a queue config version and when it may have been in force.
type cfgVersion struct {
	cfg     *qconfig
	written time.Time
	applied time.Time // every running replica reported it; zero: not yet
}

// counters are the run's figures the history produces.
type counters struct {
	created, bound, lifecycles    int
	succeeded, failed             int
	deletedBound, deletedPending  int
	refusedPods                   int
	bindChecks                    int
	boundNoScheduler              int
	longestFitWait                time.Duration
	longestFitWaitPod             string
	heldBehind                    int // pods that fitted but waited behind a starving pod
	claimsAsked, claimsExcused    int // waits past the limit the leader was asked about; whose answers excused them
	gangFirstBinds, gangsWhole    int // gangs whose first pod bound; that ran their whole minimum
	historyEvents, historyResyncs int
	treeHeld                      int // pods held by a quota tree's node at least once
	treeBound                     int // bindings of pods that name a node of a tree
	lastRevision                  int64
	deletedWhileNoScheduler       int
}

// history replays pods from etcd. All fields behind mu.
type history struct {
	mu       sync.Mutex
	pods     map[string]*podRec
	model    *usageModel
	versions []*cfgVersion
	c        counters
	// violation is the first invariant broken, with both sides.
	violation string
	onViolate func(string)
	// explainWait, when set, says what the scheduler reports of a pod
	// that broke the wait invariant (runner.explainWait).
	explainWait func(ns, name string) string
	// askBehind, when set, asks the scheduler which pod, if any, a pod
	// that broke the wait invariant is kept behind (runner.behindClaim);
	// nil: a pod's status is all the checks read.
	askBehind func(ns, name string) behindClaim
	// noScheduler is set while the harness runs no scheduler replica.
	noScheduler bool
	// skew, for the self-test only, changes the limits the checks use.
	skew func(*qconfig) *qconfig
	// ended keeps the last endedKeep pods that were released, for the
	// timeline a drift report prints (explain).
	ended []endedPod
	// gangBound counts, per gang key, its pods seen bound: a gang with
	// none waits for its whole minimum.
	gangBound map[string]int
}

// endedPod is a released pod as the drift report shows it.
type endedPod struct {
	rec     podRec
	endedAt time.Time
	how     string
}

const endedKeep = 20000

func newHistory(cfg *qconfig, onViolate func(string)) *history {
	return &history{pods: map[string]*podRec{}, model: newUsageModel(cfg), onViolate: onViolate, gangBound: map[string]int{}}
}

// addVersion records a config version as written now.
func (h *history) addVersion(cfg *qconfig) *cfgVersion {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := &cfgVersion{cfg: cfg, written: time.Now()}
	h.versions = append(h.versions, v)
	return v
}

func (h *history) setApplied(v *cfgVersion, t time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v.applied = t
}

// inForce returns the versions the scheduler may have been using at some
// moment in [from, to]: each version written by to whose successor was not
// yet applied everywhere at from.
func (h *history) inForce(from, to time.Time) []*qconfig {
	var out []*qconfig
	for i, v := range h.versions {
		if v.written.After(to) {
			break
		}
		if i+1 < len(h.versions) {
			next := h.versions[i+1]
			if !next.applied.IsZero() && next.applied.Before(from) {
				continue
			}
		}
		if h.skew != nil {
			out = append(out, h.skew(v.cfg))
		} else {
			out = append(out, v.cfg)
		}
	}
	return out
}

func (h *history) current() *qconfig { return h.versions[len(h.versions)-1].cfg }

// run follows etcd from the current revision until ctx ends.
func (h *history) run(ctx context.Context, etcdURL string, ready chan<- struct{}) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()
	rev, err := h.resync(ctx, cli)
	if err != nil {
		return err
	}
	close(ready)
	for ctx.Err() == nil {
		wch := cli.Watch(clientv3.WithRequireLeader(ctx), podPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
		for resp := range wch {
			if err := resp.Err(); err != nil {
				if errors.Is(err, rpctypes.ErrCompacted) {
					// Fell behind the API server's compaction: start over
					// from a fresh read (binds in the gap go unchecked).
					if rev, err = h.resync(ctx, cli); err != nil {
						return err
					}
				}
				break
			}
			now := time.Now()
			h.mu.Lock()
			for _, ev := range resp.Events {
				h.apply(ev, now)
				rev = ev.Kv.ModRevision
			}
			h.c.lastRevision = rev
			h.mu.Unlock()
		}
	}
	return ctx.Err()
}

// resync replaces the state with a read of every pod.
func (h *history) resync(ctx context.Context, cli *clientv3.Client) (int64, error) {
	resp, err := cli.Get(ctx, podPrefix, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.pods) > 0 || h.c.historyEvents > 0 {
		h.c.historyResyncs++
	}
	h.pods = map[string]*podRec{}
	h.model = newUsageModel(h.current())
	now := time.Now()
	for _, kv := range resp.Kvs {
		pod, err := decodePod(kv.Value)
		if err != nil || pod.Spec.SchedulerName != schedulerName {
			continue
		}
		p := newRec(string(kv.Key), pod, now)
		p.node, p.phase = pod.Spec.NodeName, pod.Status.Phase
		if chargedNow(pod) {
			p.charged = true
			p.group = h.model.charge(p.charge)
		}
		h.pods[p.key] = p
	}
	return resp.Header.Revision, nil
}

func decodePod(b []byte) (*v1.Pod, error) {
	obj, _, err := decoder.Decode(b, nil, nil)
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("not a pod: %T", obj)
	}
	return pod, nil
}

var _ runtime.Object = (*v1.Pod)(nil)

func newRec(key string, pod *v1.Pod, now time.Time) *podRec {
	p := &podRec{key: key, ns: pod.Namespace, name: pod.Name, uid: string(pod.UID), charge: chargeOf(pod), created: now,
		fate: pod.Annotations[annFate]}
	if d, err := time.ParseDuration(pod.Annotations[annLife]); err == nil {
		p.life = d
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			p.owner = ref.Kind
		}
	}
	return p
}

// apply replays one etcd event. Called with mu held.
func (h *history) apply(ev *clientv3.Event, now time.Time) {
	h.c.historyEvents++
	key := string(ev.Kv.Key)
	p := h.pods[key]
	if ev.Type == clientv3.EventTypeDelete {
		if p == nil {
			return
		}
		if p.charged {
			h.release(p)
			h.c.deletedBound++
			if h.noScheduler {
				h.c.deletedWhileNoScheduler++
			}
		} else if p.node == "" {
			h.c.deletedPending++
		}
		delete(h.pods, key)
		return
	}
	pod, err := decodePod(ev.Kv.Value)
	if err != nil || pod.Spec.SchedulerName != schedulerName {
		return
	}
	if p != nil && p.uid != string(pod.UID) {
		// Deleted and created again between two events we saw as one.
		if p.charged {
			h.release(p)
		}
		p = nil
	}
	if p == nil {
		p = newRec(key, pod, now)
		h.pods[key] = p
		h.c.created++
	}
	wasUnbound := p.node == ""
	p.node, p.phase, p.deleting = pod.Spec.NodeName, pod.Status.Phase, pod.DeletionTimestamp != nil
	if (p.phase == v1.PodSucceeded || p.phase == v1.PodFailed) && p.terminalAt.IsZero() {
		p.terminalAt = now
		if p.phase == v1.PodSucceeded {
			h.c.succeeded++
		} else {
			h.c.failed++
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
			if !p.refused {
				h.c.refusedPods++
			}
			if !p.refused || p.refusal != c.Message {
				p.refusedAt = now
			}
			p.refused, p.refusal = true, c.Message
			if _, _, ok := treeRefusal(strings.TrimPrefix(c.Message, hold.MessagePrefix)); ok && !p.treeHeld {
				p.treeHeld = true
				h.c.treeHeld++
			}
		}
	}
	charged := chargedNow(pod)
	switch {
	case charged && !p.charged:
		if why := h.model.conflict(p.charge); wasUnbound && why != "" {
			h.violate(fmt.Sprintf("pod %s/%s (user %s, queue %s) was bound although its %s", p.ns, p.name, p.charge.user, p.charge.queue, why))
		}
		p.charged = true
		p.group = h.model.charge(p.charge)
		if wasUnbound {
			p.boundAt = now
			h.c.bound++
			if len(p.charge.trees) > 0 {
				h.c.treeBound++
			}
			if h.noScheduler {
				h.c.boundNoScheduler++
			}
			h.checkBind(p, now)
			h.gangBind(p, now)
		}
	case !charged && p.charged:
		h.release(p)
	}
}

func (h *history) release(p *podRec) {
	how := "deleted"
	if p.phase == v1.PodSucceeded || p.phase == v1.PodFailed {
		how = string(p.phase)
	}
	if len(h.ended) >= endedKeep {
		h.ended = append(h.ended[:0], h.ended[endedKeep/2:]...)
	}
	h.ended = append(h.ended, endedPod{rec: *p, endedAt: time.Now(), how: how})
	h.model.uncharge(p.charge, p.group)
	p.charged = false
	h.c.lifecycles++
}

// entities returns who a pod is tracked against.
func (p *podRec) entities() []who {
	w := []who{{kind: "user", name: p.charge.user}}
	if p.group != "" {
		w = append(w, who{kind: "group", name: p.group})
	}
	return append(w, who{kind: "queue"})
}

// checkBind: the pod just bound; with it, no user, group or queue on its
// path may be over the loosest limit that may have been in force in the
// last decisionSlack (the scheduler sees a new config a moment after it is
// written). The scheduler's own view of usage is never below the true
// one (it charges at Reserve, before the binding, and releases after the
// API server says so), so the true usage after a binding bounds what the
// scheduler admitted against.
func (h *history) checkBind(p *podRec, now time.Time) {
	h.c.bindChecks++
	cfgs := h.inForce(now.Add(-decisionSlack), now)
	newApp := h.model.appPods[p.charge.app] == 1
	for _, q := range pathOf(p.charge.queue) {
		for _, w := range p.entities() {
			ls := make([]*limit, 0, len(cfgs))
			for _, c := range cfgs {
				ls = append(ls, c.limitFor(w, q))
			}
			n := h.model.node(w, q)
			if n == nil {
				continue
			}
			if why := loosest(ls).over(n.res, len(n.apps), p.charge.res, newApp); why != "" {
				name := w.name
				if w.kind == "queue" {
					name = q
				}
				h.violate(fmt.Sprintf("pod %s/%s (user %s, queue %s, request %s) was bound while %s %q was at its limit in %s: with it %s (config versions that may have been in force: %s)\n  %s's pods on %s now:\n%s",
					p.ns, p.name, p.charge.user, p.charge.queue, p.charge.res, w.kind, name, q, why, versionsOf(cfgs), w.kind, q, h.podsOf(w, q)))
				return
			}
		}
	}
	// Its nodes in the quota trees, and their ancestors: with it, none
	// over the loosest quota that may have been in force.
	for _, tn := range treeNodesOf(p.charge) {
		ls := make([]*limit, 0, len(cfgs))
		for _, c := range cfgs {
			ls = append(ls, c.treeLimit(tn[0], tn[1]))
		}
		if why := loosest(ls).over(h.model.treeUsage(tn[0], tn[1]), 0, p.charge.res, false); why != "" {
			h.violate(fmt.Sprintf("pod %s/%s (user %s, queue %s, request %s, trees %v) was bound while quota tree %s node %s was at its quota: with it %s (config versions that may have been in force: %s)\n  pods on the node now:\n%s",
				p.ns, p.name, p.charge.user, p.charge.queue, p.charge.res, p.charge.trees, tn[0], tn[1], why, versionsOf(cfgs), h.podsOnTree(tn[0], tn[1])))
			return
		}
	}
}

func versionsOf(cfgs []*qconfig) string {
	v := make([]string, len(cfgs))
	for i, c := range cfgs {
		v[i] = fmt.Sprint(c.version)
	}
	return strings.Join(v, ",")
}

// podsOf lists the charged pods of an entity on a queue, for a violation
// report.
func (h *history) podsOf(w who, q string) string {
	var lines []string
	for _, p := range h.pods {
		if !p.charged || !strings.HasPrefix(p.charge.queue+".", q+".") {
			continue
		}
		if w.kind == "user" && p.charge.user != w.name || w.kind == "group" && p.group != w.name {
			continue
		}
		lines = append(lines, fmt.Sprintf("    %s/%s %s app %s bound %s", p.ns, p.name, p.charge.res, p.charge.app, p.boundAt.Format("15:04:05.000")))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func (h *history) violate(msg string) { h.violateExplained(msg, nil) }

// violateExplained is violate with explain's text (nil: none) added to
// the message onViolate gets; explain runs outside h.mu, before it.
func (h *history) violateExplained(msg string, explain func() string) {
	if h.violation != "" {
		return
	}
	h.violation = msg
	if h.onViolate != nil {
		go func() {
			if explain != nil {
				msg += explain()
			}
			h.onViolate(msg)
		}()
	}
}

// fits reports whether a pending pod fits now under every config version
// that may be in force, against the true usage.
func (h *history) fits(p *podRec, cfgs []*qconfig) bool { return h.fitsOn(p, cfgs, true) }

// fitsAlone reports whether a pending pod would fit if nothing else ran:
// one whose request alone exceeds a limit can never fit there.
func (h *history) fitsAlone(p *podRec, cfgs []*qconfig) bool { return h.fitsOn(p, cfgs, false) }

// fitsOn is fits, on the true usage or (usage false) on none.
func (h *history) fitsOn(p *podRec, cfgs []*qconfig, usage bool) bool {
	if usage && h.model.conflict(p.charge) != "" {
		return false
	}
	req := p.charge.res
	if g := p.charge.gang; g != nil && (!usage || h.gangBound[g.key] == 0) {
		// None of its gang runs: it waits for the gang's whole minimum.
		req = g.min
	}
	newApp := !usage || h.model.appPods[p.charge.app] == 0
	return h.model.fits(p.charge, req, newApp, usage, cfgs)
}

// checkWaits runs the wait invariant once: a refused pod that has fitted
// continuously for longer than maxWait since it was refused, while nothing
// disturbed the scheduler, is a violation. calm is when the last
// disturbance ended. A pod never refused is still in the scheduler's queue:
// how long it waits there is throughput (test/perf), not quota; and the
// wait starts no earlier than the refusal, since the refusal shows what the
// scheduler saw then (on a loaded machine its informers lag the etcd
// history by a second or more).
func (h *history) checkWaits(now, calm time.Time, maxWait time.Duration) {
	if ask := h.checkWaitsLocked(now, calm, maxWait); len(ask) > 0 {
		h.askClaims(ask, now)
	}
}

// checkWaitsLocked is checkWaits under the history's lock; it returns the
// pods to ask the scheduler about before their wait is a violation: those
// past the limit not asked about since they began to fit.
func (h *history) checkWaitsLocked(now, calm time.Time, maxWait time.Duration) []*podRec {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ask []*podRec
	cfgs := h.inForce(now.Add(-decisionSlack), now)
	for _, p := range h.pods {
		if !p.pending() || !p.refused {
			p.fitSince = time.Time{}
			continue
		}
		fits := h.fits(p, cfgs)
		if fits && h.waitsByPolicy(p, cfgs, now) {
			if !p.heldBehind {
				p.heldBehind = true
				h.c.heldBehind++
			}
			fits = false
		}
		if !fits {
			p.fitSince = time.Time{}
			continue
		}
		if p.fitSince.IsZero() {
			p.fitSince = now
		}
		from := p.fitSince
		if calm.After(from) {
			from = calm
		}
		if p.refusedAt.After(from) {
			from = p.refusedAt
		}
		wait := now.Sub(from)
		if wait < 0 {
			continue
		}
		if wait > h.c.longestFitWait {
			h.c.longestFitWait = wait
			h.c.longestFitWaitPod = p.ns + "/" + p.name
		}
		if wait > maxWait {
			if h.askBehind != nil && (p.claim == nil || p.claim.at.Before(from)) {
				if len(ask) < maxAsks {
					ask = append(ask, p)
				}
				continue
			}
			var explain func() string
			if h.explainWait != nil {
				explain = func() string { return h.explainWait(p.ns, p.name) }
			}
			h.violateExplained(fmt.Sprintf("pod %s/%s (user %s, groups %v, queue %s, app %s, request %s) has fitted every limit for %.1fs and is still not bound (refused before: %v %q)\n  user's pods on %s:\n%s",
				p.ns, p.name, p.charge.user, p.charge.groups, p.charge.queue, p.charge.app, p.charge.res, wait.Seconds(), p.refused, p.refusal,
				"root", h.podsOf(who{kind: "user", name: p.charge.user}, "root")), explain)
			return nil
		}
	}
	return ask
}

// keptBehind reports whether p, which fits, is held behind a pod still
// pending: the scheduler keeps the room that pod needs for it (the
// starvation barrier), so p's wait is policy, not a lost let-in. Once the
// pod it waits behind is bound or gone, p's wait counts again.
func (h *history) keptBehind(p *podRec) bool {
	_, rest, ok := strings.Cut(p.refusal, hold.BehindPrefix)
	if !ok {
		return false
	}
	name, _, _ := strings.Cut(rest, ",") // namespace/name
	q := h.pods[h.keyOf(p, name)]
	return q != nil && q.pending()
}

// keyOf is the history's key of the pod name (namespace/name): keys are
// etcd's, a prefix, then namespace/name, as p's.
func (h *history) keyOf(p *podRec, name string) string {
	return strings.TrimSuffix(p.key, p.ns+"/"+p.name) + name
}

// waitsByPolicy reports whether p, which fits, may be kept behind a
// starving pod (the starvation barrier): its status says so, the history
// finds such a pod ahead of it, or the scheduler said so when asked. No
// pod that only waits by policy is a lost let-in, in the wait check or in
// a quiet check.
func (h *history) waitsByPolicy(p *podRec, cfgs []*qconfig, now time.Time) bool {
	return h.keptBehind(p) || h.starvingAhead(p, cfgs, now) || h.claimedBehind(p, cfgs, now)
}

// starvingAhead reports whether a pending pod ahead of p may have the
// scheduler keep room for it (the starvation barrier) before p's status
// says so: a refused pod starving ahead of p by its status's reason.
// The plugin's status client writes at 20/s (1/s while pods bind), so
// after a config change re-holds many pods, a held pod's status can lag
// its reason by seconds or minutes (keptBehind reads the status).
func (h *history) starvingAhead(p *podRec, cfgs []*qconfig, now time.Time) bool {
	for _, q := range h.pods {
		if q != p && q.refused && h.starving(q, p, q.refusal, cfgs, now) {
			return true
		}
	}
	return false
}

// starving reports whether q is a pod the scheduler may keep room for
// ahead of p, held for reason: pending, created before p and more than the
// starvation wait ago, not fitting now but able to fit alone (the barrier
// keeps no room for a pod that can never fit), and held by a limit p
// counts against. Priorities are not compared: the soak's pods share one.
func (h *history) starving(q, p *podRec, reason string, cfgs []*qconfig, now time.Time) bool {
	return q != p && q.pending() && q.created.Before(p.created) &&
		now.Sub(q.created) > hold.DefaultStarvation && limitCounts(reason, p.charge, h.model.groupFor(p.charge)) &&
		!h.fits(q, cfgs) && h.fitsAlone(q, cfgs)
}

// limitCounts reports whether a pod with charge c, whose application is
// tracked against group ("" for none), counts against the limit a refusal
// message names (who, as the plugin words it: user "x", group "g", queue
// q), as the scheduler's starvation barrier does for its own reasons: a
// group's limit only for the group it is tracked against. A message
// naming no such limit (a pod waiting behind another, a placement error)
// counts for nobody.
func limitCounts(refusal string, c podCharge, group string) bool {
	msg := strings.TrimPrefix(refusal, hold.MessagePrefix)
	if strings.HasPrefix(msg, "gang ") {
		// A waiting gang's pod: the limit its minimum waits on follows.
		_, msg, _ = strings.Cut(msg, " fits at once: ")
	}
	switch {
	case strings.HasPrefix(msg, "user \""):
		name, rest, _ := strings.Cut(strings.TrimPrefix(msg, "user \""), "\"")
		return name == c.user && underLimitQueue(rest, c)
	case strings.HasPrefix(msg, "group \""):
		name, rest, _ := strings.Cut(strings.TrimPrefix(msg, "group \""), "\"")
		return group != "" && name == group && underLimitQueue(rest, c)
	case strings.HasPrefix(msg, "queue "):
		q, _, _ := strings.Cut(strings.TrimPrefix(msg, "queue "), " ")
		return c.queue == q || strings.HasPrefix(c.queue, q+".")
	}
	if tree, node, ok := treeRefusal(msg); ok {
		// A starving pod keeps room on the tree's node that holds it:
		// pods charged there (on it or below it) wait behind it.
		return treeCounts(c, tree, node)
	}
	return false
}

// underLimitQueue reports whether charge c's queue is under the queue of a
// user or group limit, from the rest of its refusal message after the
// name (' would exceed maxresources in root.b: ...'): a user's limit on
// one queue is not taken from by the user's pods in another (as
// hold.Affects). A message whose queue cannot be read counts.
func underLimitQueue(rest string, c podCharge) bool {
	_, after, ok := strings.Cut(rest, " in ")
	q, _, ok2 := strings.Cut(after, ":")
	if !ok || !ok2 || !strings.HasPrefix(q, "root") {
		return true
	}
	return c.queue == q || strings.HasPrefix(c.queue, q+".")
}

// staticCheck: no user, group or queue is above the loosest limit of the
// versions in force since the oldest charged pod was bound.
func (h *history) staticCheck(m *usageModel, since time.Time) string {
	h.mu.Lock()
	cfgs := h.inForce(since, time.Now())
	h.mu.Unlock()
	check := func(w who, tree map[string]*unode) string {
		for q, n := range tree {
			ls := make([]*limit, 0, len(cfgs))
			for _, c := range cfgs {
				ls = append(ls, c.limitFor(w, q))
			}
			l := loosest(ls)
			// Any request adds every resource a pod asks for: check them all.
			if why := l.over(n.res, len(n.apps), n.res, true); why != "" {
				name := w.name
				if w.kind == "queue" {
					name = q
				}
				return fmt.Sprintf("%s %q is above its limit in %s: %s (versions %s)", w.kind, name, q, why, versionsOf(cfgs))
			}
		}
		return ""
	}
	for u, tree := range m.users {
		if s := check(who{kind: "user", name: u}, tree); s != "" {
			return s
		}
	}
	for g, tree := range m.groups {
		if s := check(who{kind: "group", name: g}, tree); s != "" {
			return s
		}
	}
	if s := check(who{kind: "queue"}, m.queues); s != "" {
		return s
	}
	// No node of a quota tree above its quota.
	for tree, nodes := range m.trees {
		for node, u := range nodes {
			ls := make([]*limit, 0, len(cfgs))
			for _, c := range cfgs {
				ls = append(ls, c.treeLimit(tree, node))
			}
			if why := loosest(ls).over(u, 0, u, true); why != "" {
				return fmt.Sprintf("quota tree %s node %s is above its quota: %s (versions %s)", tree, node, why, versionsOf(cfgs))
			}
		}
	}
	return ""
}

// snapshot copies what the workload needs to decide: the pods.
func (h *history) snapshot() []podRec {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]podRec, 0, len(h.pods))
	for _, p := range h.pods {
		out = append(out, *p)
	}
	return out
}

func (h *history) counters() counters {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.c
}

func (h *history) setNoScheduler(v bool) {
	h.mu.Lock()
	h.noScheduler = v
	h.mu.Unlock()
}

// modelSnap returns the replayed usage and the earliest bind time among
// charged pods.
func (h *history) modelSnap() (snap, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	oldest := time.Now()
	for _, p := range h.pods {
		if p.charged && !p.boundAt.IsZero() && p.boundAt.Before(oldest) {
			oldest = p.boundAt
		}
	}
	return h.model.snap(), oldest
}

// fittingPending lists pending pods that fit every limit now: the
// scheduler is expected to bind them.
func (h *history) fittingPending() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	cfgs := h.inForce(now.Add(-decisionSlack), now)
	var out []string
	for _, p := range h.pods {
		if p.pending() && h.fits(p, cfgs) && !h.waitsByPolicy(p, cfgs, now) {
			out = append(out, p.ns+"/"+p.name)
		}
	}
	sort.Strings(out)
	return out
}

// dropVersion forgets a version whose write failed.
func (h *history) dropVersion(v *cfgVersion) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, x := range h.versions {
		if x == v {
			h.versions = append(h.versions[:i], h.versions[i+1:]...)
			return
		}
	}
}

// explain prints what the history knows of apps' pods: those still in etcd
// and the last released ones, with times, so a drift report shows which
// pod one side still counts and when it ended.
func (h *history) explain(apps []string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Format("15:04:05.000")
	}
	for _, app := range apps {
		fmt.Fprintf(&b, "  application %s:\n", app)
		n := 0
		for _, p := range h.pods {
			if p.charge.app != app {
				continue
			}
			n++
			fmt.Fprintf(&b, "    in etcd: %s uid %s user %s queue %s node %q phase %s deleting %v charged %v created %s bound %s\n",
				p.key, p.uid, p.charge.user, p.charge.queue, p.node, p.phase, p.deleting, p.charged, ts(p.created), ts(p.boundAt))
		}
		shown := 0
		for i := len(h.ended) - 1; i >= 0 && shown < 8; i-- {
			e := &h.ended[i]
			if e.rec.charge.app != app {
				continue
			}
			shown++
			fmt.Fprintf(&b, "    ended: %s uid %s user %s queue %s bound %s, released %s (%s)\n",
				e.rec.key, e.rec.uid, e.rec.charge.user, e.rec.charge.queue, ts(e.rec.boundAt), ts(e.endedAt), e.how)
		}
		if n == 0 && shown == 0 {
			b.WriteString("    (no pod of it in the history)\n")
		}
	}
	return b.String()
}
