package main

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/podmeta"
)

// Annotations the workload puts on its pods.
const (
	annRun  = "soak.userquota.io/run"  // kwok completes the pod this long after it runs
	annFail = "soak.userquota.io/fail" // ... as Failed
	annFate = "soak.userquota.io/fate" // what the harness does with a naked pod
	annLife = "soak.userquota.io/life" // how long after binding it deletes it
)

// Fates of naked pods.
const (
	fateComplete      = "complete"       // kwok ends it (Succeeded or Failed); the harness deletes it after
	fateDelete        = "delete"         // deleted while running, default grace (kwok finishes the deletion)
	fateDeleteNow     = "delete-now"     // deleted while running, grace 0
	fateLong          = "long"           // runs until deleted, longer
	fateDeletePending = "delete-pending" // deleted while still pending (else soon after binding)
)

type userSpec struct {
	name   string
	groups []string
	home   string
	weight int
	cap    int // most pods not yet finished at once
}

// workload submits and ends pods, Jobs and Deployments until paused.
type workload struct {
	o     *options
	c     *cluster
	h     *history
	users []userSpec
	total int // sum of weights

	rngMu sync.Mutex
	rng   *rand.Rand

	// gate: every action holds it for reading; pause takes it for writing,
	// so when pause returns nothing is in flight.
	gate   sync.RWMutex
	paused atomic.Bool

	seq          atomic.Int64
	submitted    atomic.Int64
	createErrs   atomic.Int64
	deletesSent  atomic.Int64
	jobsMade     atomic.Int64
	gangJobsMade atomic.Int64
	scales       atomic.Int64
	rollouts     atomic.Int64
	stsDeletes   atomic.Int64 // StatefulSet pods deleted (created again under their name)

	sentMu sync.Mutex
	sent   map[string]time.Time // pod key -> when its delete was sent

	createQ chan *v1.Pod
}

func vipUsers() []string { return []string{"u001", "u002"} }

func newWorkload(o *options, c *cluster, h *history, seed int64) *workload {
	w := &workload{o: o, c: c, h: h, rng: rand.New(rand.NewSource(seed)), sent: map[string]time.Time{}, createQ: make(chan *v1.Pod, 64)}
	leaves := leafPaths[1:]
	for i := 0; i < o.users; i++ {
		u := userSpec{name: fmt.Sprintf("u%03d", i), home: leaves[i%len(leaves)], weight: 1, cap: 6}
		switch {
		case i%10 == 9: // no groups: no group tracking
		case i%10 == 8:
			u.groups = []string{unnamedGroup} // named nowhere: the "*" group
		case i%7 == 3:
			u.groups = []string{groupName(i % o.groups), groupName((i + 1) % o.groups)}
		default:
			u.groups = []string{groupName(i % o.groups)}
		}
		if i%11 == 5 {
			u.home = defaultQueue
		}
		if i < o.users/4 {
			u.weight = 4 // heavy users: at their limits most of the time
		}
		for _, v := range vipUsers() {
			if v == u.name {
				u.cap = 10
			}
		}
		w.users = append(w.users, u)
		w.total += u.weight
	}
	return w
}

func (w *workload) intn(n int) int {
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return w.rng.Intn(n)
}

func (w *workload) float() float64 {
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return w.rng.Float64()
}

// act runs fn unless paused; false if it did not run.
func (w *workload) act(fn func()) bool {
	if w.paused.Load() || !w.gate.TryRLock() {
		return false
	}
	defer w.gate.RUnlock()
	fn()
	return true
}

// pause stops every action and waits for those in flight.
func (w *workload) pause() {
	w.paused.Store(true)
	w.gate.Lock()
}

func (w *workload) resume() {
	w.gate.Unlock()
	w.paused.Store(false)
}

// run starts the loops; they end with ctx.
func (w *workload) run(ctx context.Context) {
	for i := 0; i < 4; i++ {
		go w.creator(ctx)
	}
	go w.submitter(ctx)
	go w.deleter(ctx)
	if w.o.controllers {
		go w.jobs(ctx)
		go w.gangJobs(ctx)
		go w.deployments(ctx)
		go w.statefulSets(ctx)
	}
}

func (w *workload) creator(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case pod := <-w.createQ:
			w.act(func() {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if _, err := w.c.client.CoreV1().Pods(pod.Namespace).Create(cctx, pod, metav1.CreateOptions{}); err != nil {
					w.createErrs.Add(1)
					return
				}
				w.submitted.Add(1)
			})
		}
	}
}

// outstanding counts each user's pods that have not finished.
func (w *workload) outstanding() map[string]int {
	out := map[string]int{}
	for _, p := range w.h.snapshot() {
		if p.owner == "" && !p.deleting && p.phase != v1.PodSucceeded && p.phase != v1.PodFailed {
			out[p.charge.user]++
		}
	}
	return out
}

func (w *workload) submitter(ctx context.Context) {
	t := time.NewTicker(time.Duration(float64(time.Second) / w.o.rate))
	defer t.Stop()
	var counts map[string]int
	var countsAt time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if w.paused.Load() {
			continue
		}
		if time.Since(countsAt) > 200*time.Millisecond {
			counts, countsAt = w.outstanding(), time.Now()
		}
		// A user with fewer than cap pods unfinished, by weight.
		total := 0
		for _, u := range w.users {
			if counts[u.name] < u.cap {
				total += u.weight
			}
		}
		if total == 0 {
			continue
		}
		n := w.intn(total)
		for _, u := range w.users {
			if counts[u.name] >= u.cap {
				continue
			}
			if n >= u.weight {
				n -= u.weight
				continue
			}
			counts[u.name]++
			select {
			case w.createQ <- w.nakedPod(u):
			default: // the creators are behind (API server down): skip
			}
			break
		}
	}
}

func (w *workload) pickUser() userSpec {
	n := w.intn(w.total)
	for _, u := range w.users {
		if n < u.weight {
			return u
		}
		n -= u.weight
	}
	return w.users[len(w.users)-1]
}

var (
	cpus     = []string{"100m", "250m", "500m", "1"}
	memories = []string{"64Mi", "128Mi", "256Mi", "512Mi"}
)

func (w *workload) requests() v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse(cpus[w.intn(len(cpus))]),
		v1.ResourceMemory: resource.MustParse(memories[w.intn(len(memories))]),
	}
}

// podTemplate is what naked pods, Jobs and Deployments share: the user's
// identity, the queue, requests (sometimes two containers, sometimes an
// init container asking for more than the main one).
func (w *workload) podTemplate(u userSpec, queue string) (metav1.ObjectMeta, v1.PodSpec) {
	meta := metav1.ObjectMeta{Labels: map[string]string{"soak.userquota.io/user": u.name}, Annotations: map[string]string{}}
	if queue != "" {
		meta.Labels[podmeta.LabelQueue] = queue
	}
	if w.intn(100) != 0 {
		groups := `[]`
		if len(u.groups) > 0 {
			groups = `["` + strings.Join(u.groups, `","`) + `"]`
		}
		meta.Annotations[podmeta.AnnotationUserInfo] = fmt.Sprintf(`{"user":%q,"groups":%s}`, u.name, groups)
	} // else: no user info, the plugin's default user
	spec := v1.PodSpec{
		SchedulerName:                 schedulerName,
		RestartPolicy:                 v1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Requests: w.requests()}}},
	}
	switch w.intn(10) {
	case 0:
		spec.Containers = append(spec.Containers, v1.Container{Name: "side", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Requests: w.requests()}})
	case 1:
		spec.InitContainers = []v1.Container{{Name: "init", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("32Mi")}}}}
	}
	return meta, spec
}

// queueFor: mostly the user's home queue, sometimes another leaf, now and
// then none (the plugin's defaultQueue).
func (w *workload) queueFor(u userSpec) string {
	switch r := w.intn(100); {
	case r < 80:
		return u.home
	case r < 95:
		return leafPaths[w.intn(len(leafPaths))]
	default:
		return ""
	}
}

func (w *workload) nakedPod(u userSpec) *v1.Pod {
	queue := w.queueFor(u)
	meta, spec := w.podTemplate(u, queue)
	w.treeLabels(meta.Labels)
	meta.Name = fmt.Sprintf("%s-%07d", u.name, w.seq.Add(1))
	meta.Namespace = podNamespaces[w.intn(len(podNamespaces))]
	if w.intn(100) < 40 {
		leaf := queue
		if leaf == "" {
			leaf = defaultQueue
		}
		meta.Labels[podmeta.LabelAppID] = fmt.Sprintf("%s-%s-%d", u.name, leaf[strings.LastIndexByte(leaf, '.')+1:], w.intn(3))
	}
	ms := func(lo, hi int) string { return fmt.Sprintf("%dms", lo+w.intn(hi-lo+1)) }
	switch r := w.intn(100); {
	case r < 55:
		meta.Annotations[annFate] = fateComplete
		meta.Annotations[annRun] = ms(500, 4000)
		if w.intn(10) == 0 {
			meta.Annotations[annFail] = "true"
		}
	case r < 70:
		meta.Annotations[annFate] = fateDelete
		meta.Annotations[annLife] = ms(500, 5000)
	case r < 85:
		meta.Annotations[annFate] = fateDeleteNow
		meta.Annotations[annLife] = ms(500, 5000)
	case r < 95:
		meta.Annotations[annFate] = fateLong
		meta.Annotations[annLife] = ms(5000, 20000)
	default:
		meta.Annotations[annFate] = fateDeletePending
		meta.Annotations[annLife] = ms(500, 2000)
	}
	return &v1.Pod{ObjectMeta: meta, Spec: spec}
}

// deleter ends naked pods as their fates say, and removes finished ones.
func (w *workload) deleter(ctx context.Context) {
	w.every(ctx, 250*time.Millisecond, func() { w.deleteDue(ctx) })
}

// every runs fn (unless the workload is paused) every period until ctx ends.
func (w *workload) every(ctx context.Context, period time.Duration, fn func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.act(fn)
	}
}

func (w *workload) deleteDue(ctx context.Context) {
	now := time.Now()
	var due []podRec
	var grace []bool
	for _, p := range w.h.snapshot() {
		if p.owner != "" || p.deleting {
			continue
		}
		terminal := p.phase == v1.PodSucceeded || p.phase == v1.PodFailed
		switch {
		case terminal:
			if now.Sub(p.terminalAt) > time.Second {
				due, grace = append(due, p), append(grace, false)
			}
		case p.fate == fateDeletePending && p.node == "" && now.Sub(p.created) > 3*time.Second:
			due, grace = append(due, p), append(grace, false)
		case p.node != "" && p.fate != fateComplete && p.life > 0 && now.Sub(p.boundAt) > p.life:
			due, grace = append(due, p), append(grace, p.fate == fateDelete || p.fate == fateLong)
		}
	}
	for i, p := range due {
		if !w.markSent(p.key, now) {
			continue
		}
		opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID(p.uid))}}
		if !grace[i] {
			opts.GracePeriodSeconds = ptr.To[int64](0)
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := w.c.client.CoreV1().Pods(p.ns).Delete(cctx, p.name, opts)
		cancel()
		if err == nil {
			w.deletesSent.Add(1)
		}
	}
}

// markSent records a delete about to be sent; false if one was sent in
// the last 10 s (it may still be on its way).
func (w *workload) markSent(key string, now time.Time) bool {
	w.sentMu.Lock()
	defer w.sentMu.Unlock()
	if t, ok := w.sent[key]; ok && now.Sub(t) < 10*time.Second {
		return false
	}
	w.sent[key] = now
	if len(w.sent) > 20000 {
		for k, t := range w.sent {
			if now.Sub(t) > time.Minute {
				delete(w.sent, k)
			}
		}
	}
	return true
}

// deleteSome deletes a fraction of the bound naked pods at once (the
// no-scheduler fault), half of them with grace 0. It returns how many.
func (w *workload) deleteSome(ctx context.Context, fraction float64) int {
	n := 0
	for _, p := range w.h.snapshot() {
		if p.owner != "" || p.node == "" || p.deleting || w.float() >= fraction {
			continue
		}
		opts := metav1.DeleteOptions{}
		if w.intn(2) == 0 {
			opts.GracePeriodSeconds = ptr.To[int64](0)
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := w.c.client.CoreV1().Pods(p.ns).Delete(cctx, p.name, opts); err == nil {
			n++
		}
		cancel()
	}
	return n
}

// jobs keeps a few Jobs running: each a user's, 2-4 completions, pods that
// kwok completes after 1-3 s; finished Jobs (and ones stuck for 2
// minutes), gang Jobs too, are deleted with their pods.
func (w *workload) jobs(ctx context.Context) {
	w.every(ctx, 2*time.Second, func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		active := 0
		ok := w.eachJob(cctx, func(j *batchv1.Job) bool {
			done := false
			for _, c := range j.Status.Conditions {
				if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == v1.ConditionTrue {
					done = true
				}
			}
			if done || time.Since(j.CreationTimestamp.Time) > 2*time.Minute {
				return false
			}
			if !strings.HasPrefix(j.Name, gangPrefix) { // gangJobs keeps its own count
				active++
			}
			return true
		})
		if !ok {
			return
		}
		if active >= 6 {
			return
		}
		u := w.pickUser()
		queue := w.queueFor(u)
		meta, spec := w.podTemplate(u, queue)
		w.treeLabels(meta.Labels)
		meta.Annotations[annRun] = fmt.Sprintf("%dms", 500+w.intn(1500))
		completions := int32(2 + w.intn(3))
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%s-%07d", u.name, w.seq.Add(1)), Namespace: podNamespaces[w.intn(len(podNamespaces))]},
			Spec: batchv1.JobSpec{
				Parallelism:  ptr.To(int32(1 + w.intn(2))),
				Completions:  &completions,
				BackoffLimit: ptr.To(int32(2)),
				Template:     v1.PodTemplateSpec{ObjectMeta: meta, Spec: spec},
			},
		}
		if _, err := w.c.client.BatchV1().Jobs(job.Namespace).Create(cctx, job, metav1.CreateOptions{}); err == nil {
			w.jobsMade.Add(1)
		}
	})
}

// eachJob calls keep with every Job of the soak's namespaces and deletes
// (with its pods) each it returns false for; false when a list failed.
func (w *workload) eachJob(ctx context.Context, keep func(*batchv1.Job) bool) bool {
	for _, ns := range podNamespaces {
		list, err := w.c.client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for i := range list.Items {
			if j := &list.Items[i]; !keep(j) {
				_ = w.c.client.BatchV1().Jobs(ns).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
			}
		}
	}
	return true
}

// deployments runs a few Deployments (long-running pods) and scales them
// or rolls them out now and then.
func (w *workload) deployments(ctx context.Context) {
	const count = 4
	create := func(cctx context.Context, ns, name string, tmpl v1.PodTemplateSpec) error {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(1 + w.intn(3))),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: tmpl,
			},
		}
		_, err := w.c.client.AppsV1().Deployments(ns).Create(cctx, d, metav1.CreateOptions{})
		return err
	}
	w.controllers(ctx, 3*time.Second, "dep", count, 5, 3, create, func(cctx context.Context) {
		i := w.intn(count)
		ns, name := podNamespaces[i%len(podNamespaces)], fmt.Sprintf("dep-%d", i)
		d, err := w.c.client.AppsV1().Deployments(ns).Get(cctx, name, metav1.GetOptions{})
		if err != nil {
			return
		}
		if w.intn(10) < 7 {
			d.Spec.Replicas = ptr.To(int32(w.intn(4)))
			if _, err := w.c.client.AppsV1().Deployments(ns).Update(cctx, d, metav1.UpdateOptions{}); err == nil {
				w.scales.Add(1)
			}
			return
		}
		if d.Spec.Template.Annotations == nil {
			d.Spec.Template.Annotations = map[string]string{}
		}
		d.Spec.Template.Annotations["soak.userquota.io/rev"] = fmt.Sprint(w.seq.Add(1))
		if _, err := w.c.client.AppsV1().Deployments(ns).Update(cctx, d, metav1.UpdateOptions{}); err == nil {
			w.rollouts.Add(1)
		}
	})
}

// controllers runs count controllers of one kind, named <prefix>-<i>, each
// of one user (users[(i*stride+offset) % len]) in their home queue, pods
// running until deleted: every period, the first turn creates them and
// every later one runs step.
func (w *workload) controllers(ctx context.Context, period time.Duration, prefix string, count, stride, offset int,
	create func(ctx context.Context, ns, name string, tmpl v1.PodTemplateSpec) error, step func(ctx context.Context)) {
	created := false
	w.every(ctx, period, func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if created {
			step(cctx)
			return
		}
		for i := 0; i < count; i++ {
			u := w.users[(i*stride+offset)%len(w.users)]
			name := fmt.Sprintf("%s-%d", prefix, i)
			meta, spec := w.podTemplate(u, u.home)
			w.treeLabels(meta.Labels)
			meta.Labels["app"] = name
			spec.RestartPolicy = v1.RestartPolicyAlways
			err := create(cctx, podNamespaces[i%len(podNamespaces)], name, v1.PodTemplateSpec{ObjectMeta: meta, Spec: spec})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return
			}
		}
		created = true
	})
}

// statefulSets runs two StatefulSets and deletes one of their bound pods
// now and then (half with grace 0): the controller creates it again under
// the same name, so a relist across the two sees one pod replaced by
// another of its name (the plugin must release the old one).
func (w *workload) statefulSets(ctx context.Context) {
	const count = 2
	create := func(cctx context.Context, ns, name string, tmpl v1.PodTemplateSpec) error {
		ss := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appsv1.StatefulSetSpec{
				Replicas:            ptr.To(int32(3)),
				PodManagementPolicy: appsv1.ParallelPodManagement,
				Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template:            tmpl,
			},
		}
		_, err := w.c.client.AppsV1().StatefulSets(ns).Create(cctx, ss, metav1.CreateOptions{})
		return err
	}
	w.controllers(ctx, 2*time.Second, "sts", count, 7, 5, create, func(cctx context.Context) {
		i := w.intn(count)
		ns := podNamespaces[i%len(podNamespaces)]
		name := fmt.Sprintf("sts-%d-%d", i, w.intn(3))
		pod, err := w.c.client.CoreV1().Pods(ns).Get(cctx, name, metav1.GetOptions{})
		if err != nil || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
			return
		}
		opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}
		if w.intn(2) == 0 {
			opts.GracePeriodSeconds = ptr.To(int64(0))
		}
		if err := w.c.client.CoreV1().Pods(ns).Delete(cctx, name, opts); err == nil {
			w.stsDeletes.Add(1)
		}
	})
}
