package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/gang"
)

// Gangs in the soak (issue "Whole applications"): Jobs whose pods form a
// YuniKorn task-group gang of all of them (parallelism = completions =
// minMember), so that quota must take each Job whole or not at all. The
// history checks that no gang's first pod binds unless its whole minimum
// fits, a waiting gang counts as waiting for its minimum, and a quiet
// check compares the scheduler's reservations with what the API server's
// pods imply.

// gangPrefix names the gang Jobs.
const gangPrefix = "gang-"

// gangDef is a pod's gang as the harness reads it.
type gangDef struct {
	key     string // as the scheduler names the reservation (gang.ID)
	min     vec    // the whole minimum, pods counted
	members int
}

// gangOf reads the pod's task-group gang, with app its application id
// (no namespace); nil when it carries none or it cannot be read.
func gangOf(pod *v1.Pod, app string) *gangDef {
	m, err := gang.TaskGroupsMember(pod, app)
	if err != nil || m == nil || m.Min == nil {
		return nil
	}
	return &gangDef{key: m.ID.String(), min: vec(m.Min.Resources.Map()), members: int(m.Min.Members)}
}

// gangJobs keeps up to four gang Jobs: each of a user picked uniformly
// (heavy users sit at their limits), 2-3 pods that must run together,
// completed by kwok after 1-3 s. A gang none of whose pods finished
// within gangPatience (held, since its pods run seconds) is deleted, so
// that held gangs do not take every turn; jobs() deletes the finished
// ones.
func (w *workload) gangJobs(ctx context.Context) {
	const gangPatience = 45 * time.Second
	w.every(ctx, 2*time.Second, func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		active := 0
		ok := w.eachJob(cctx, func(j *batchv1.Job) bool {
			if !strings.HasPrefix(j.Name, gangPrefix) || j.DeletionTimestamp != nil {
				return true
			}
			if j.Status.Succeeded == 0 && j.Status.Failed == 0 && time.Since(j.CreationTimestamp.Time) > gangPatience {
				return false
			}
			active++
			return true
		})
		if !ok {
			return
		}
		if active >= 4 {
			return
		}
		u := w.users[w.intn(len(w.users))]
		job, err := w.gangJob(u, w.queueFor(u), 2+w.intn(2))
		if err != nil {
			return
		}
		if _, err := w.c.client.BatchV1().Jobs(job.Namespace).Create(cctx, job, metav1.CreateOptions{}); err == nil {
			w.gangJobsMade.Add(1)
		}
	})
}

// gangJob is a Job of n pods of user u that form one gang: its task group
// asks for n members of exactly the pod's request.
func (w *workload) gangJob(u userSpec, queue string, n int) (*batchv1.Job, error) {
	meta, spec := w.podTemplate(u, queue)
	meta.Annotations[annRun] = fmt.Sprintf("%dms", 1000+w.intn(2000))
	per := map[string]string{}
	for name, q := range resourcehelper.PodRequests(&v1.Pod{Spec: spec}, resourcehelper.PodResourcesOptions{}) {
		per[string(name)] = q.String()
	}
	groups, err := json.Marshal([]map[string]any{{"name": "workers", "minMember": n, "minResource": per}})
	if err != nil {
		return nil, err
	}
	meta.Annotations[gang.AnnotationTaskGroupName] = "workers"
	meta.Annotations[gang.AnnotationTaskGroups] = string(groups)
	// Soft, and longer than jobs() lets a stuck Job live: a reservation
	// never times out in the soak, so every gang runs whole or not at all.
	meta.Annotations[gang.AnnotationPolicyParameters] = "placeholderTimeoutInSeconds=600 gangSchedulingStyle=Soft"
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%s-%07d", gangPrefix, u.name, w.seq.Add(1)), Namespace: podNamespaces[w.intn(len(podNamespaces))]},
		Spec: batchv1.JobSpec{
			Parallelism:  ptr.To(int32(n)),
			Completions:  ptr.To(int32(n)),
			BackoffLimit: ptr.To(int32(0)),
			Template:     v1.PodTemplateSpec{ObjectMeta: meta, Spec: spec},
		},
	}, nil
}

// gangPods is what the API server's pods of one gang imply.
type gangPods struct {
	def     *gangDef
	charge  podCharge // its first pod's: user, groups, queue, application
	bound   vec       // requests of its pods that ever bound (terminal ones too)
	nBound  int
	pending int
}

// reserve adds to m what the gangs of pods imply is still reserved: a
// gang with some of its members bound, fewer than its minimum, and
// others waiting holds its minimum less what the bound ones drew (they
// draw their requests on it). A gang none of whose pods runs, or that
// runs its minimum, holds nothing. Nor does one whose rest does not fit
// the limits of m's config on m's usage (call it after charging the pods):
// a config change drops every reservation and a failover rebuilds them,
// and a gang part bound then reserves its rest again only if it fits
// (docs/gangs.md); its pods wait until it does, which the waits
// invariant follows.
func (m *usageModel) reserve(pods []v1.Pod) {
	gangs := map[string]*gangPods{}
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.SchedulerName != schedulerName {
			continue
		}
		c := chargeOf(pod)
		if c.gang == nil {
			continue
		}
		g := gangs[c.gang.key]
		if g == nil {
			g = &gangPods{def: c.gang, charge: c, bound: vec{}}
			gangs[c.gang.key] = g
		}
		terminal := pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
		switch {
		case pod.Spec.NodeName != "":
			g.nBound++
			g.bound.add(c.res, 1)
		case !terminal && pod.DeletionTimestamp == nil:
			g.pending++
		}
	}
	for _, g := range gangs {
		if g.nBound == 0 || g.nBound >= g.def.members || g.pending == 0 {
			continue
		}
		left := vec{}
		for k, x := range g.def.min {
			if d := x - g.bound[k]; d > 0 {
				left[k] = d
			}
		}
		if m.cfg != nil && !m.fits(g.charge, left, m.appPods[g.charge.app] == 0, true, []*qconfig{m.cfg}) {
			continue
		}
		m.addReserved(g.def.key, g.charge, left)
	}
}

// addReserved records res reserved for the gang key of the pod charge c
// on every queue of its path, for its user, group and the queues.
func (m *usageModel) addReserved(key string, c podCharge, res vec) {
	if m.reserved == nil {
		m.reserved = map[string]*rnode{}
	}
	at := func(k string) {
		r := m.reserved[k]
		if r == nil {
			r = &rnode{res: vec{}}
			m.reserved[k] = r
		}
		r.res.add(res, 1)
		r.gangs = append(r.gangs, key)
	}
	group := m.groupFor(c)
	for _, q := range pathOf(c.queue) {
		at("user " + c.user + " " + q)
		if group != "" {
			at("group " + group + " " + q)
		}
		at("queue " + q)
	}
}

// rnode is what reservations hold on one entity and queue.
type rnode struct {
	res   vec
	gangs []string
}

// reservedLine is how a snap shows a reservation.
func reservedLine(res vec, gangs []string) string {
	g := append([]string(nil), gangs...)
	sort.Strings(g)
	return res.String() + " gangs=" + strings.Join(g, ",")
}

// reservedKey is the snap key of key's reservation.
func reservedKey(key string) string { return key + " reserved" }

// withoutReserved is s without its reservation lines.
func withoutReserved(s snap) snap {
	out := snap{lines: map[string]string{}, pods: s.pods}
	for k, l := range s.lines {
		if !strings.HasSuffix(k, " reserved") {
			out.lines[k] = l
		}
	}
	return out
}

// gangBind counts a bound pod of a gang and, for its gang's first, runs
// checkBind's check for the gang's whole minimum: no pod of a gang runs
// unless all of the minimum fitted. Called with h.mu held, after p was
// charged.
func (h *history) gangBind(p *podRec, now time.Time) {
	g := p.charge.gang
	if g == nil {
		return
	}
	h.gangBound[g.key]++
	switch h.gangBound[g.key] {
	case 1:
		h.c.gangFirstBinds++
	case g.members:
		h.c.gangsWhole++
		return
	default:
		return
	}
	rest := vec{}
	for k, x := range g.min {
		if d := x - p.charge.res[k]; d > 0 {
			rest[k] = d
		}
	}
	cfgs := h.inForce(now.Add(-decisionSlack), now)
	newApp := h.model.appPods[p.charge.app] == 1
	for _, q := range pathOf(p.charge.queue) {
		for _, w := range p.entities() {
			n := h.model.node(w, q)
			if n == nil {
				continue
			}
			ls := make([]*limit, 0, len(cfgs))
			for _, c := range cfgs {
				ls = append(ls, c.limitFor(w, q))
			}
			with := n.res.clone()
			with.add(rest, 1)
			if why := loosest(ls).over(with, len(n.apps), g.min, newApp); why != "" {
				name := w.name
				if w.kind == "queue" {
					name = q
				}
				h.violate(fmt.Sprintf("pod %s/%s, the first of gang %s (minimum %s, %d pods) to bind, was bound while %s %q in %s had no room for the whole minimum: with it %s (config versions that may have been in force: %s)\n  %s's pods on %s now:\n%s",
					p.ns, p.name, g.key, g.min, g.members, w.kind, name, q, why, versionsOf(cfgs), w.kind, q, h.podsOf(w, q)))
				return
			}
		}
	}
}
