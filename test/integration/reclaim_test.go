package integration

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/plugins/userquota"
	"github.com/userquota/userquota/pkg/podmeta"
)

// Reclaim (docs/reclaim.md) on the real control plane: one 32-cpu node,
// pods of 4 cpu, so the node holds 8. Nothing runs pods here: a fake
// kubelet finishes the deletion of pods the scheduler preempts (they are
// deleted with a grace period, so they terminate first), and records what
// they looked like.

// reclaimPodTimeout is how long reclaim may take to bind a pod that fits its
// queue's share once its room is taken back: seconds.
const reclaimPodTimeout = 30 * time.Second

// kubelet completes graceful deletions, as a node's kubelet would, and
// remembers each pod it saw terminating.
type kubelet struct {
	c  *cluster
	mu sync.Mutex
	// gone are the pods it finished, as last seen while terminating.
	gone map[string]*v1.Pod
}

func (c *cluster) startKubelet() *kubelet {
	k := &kubelet{c: c, gone: map[string]*v1.Pod{}}
	go func() {
		for c.ctx.Err() == nil {
			pods, err := c.client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{})
			if err == nil {
				for i := range pods.Items {
					p := &pods.Items[i]
					if p.DeletionTimestamp == nil {
						continue
					}
					k.mu.Lock()
					k.gone[p.Name] = p.DeepCopy()
					k.mu.Unlock()
					_ = c.client.CoreV1().Pods(c.ns).Delete(c.ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return k
}

// preempted returns the names of the pods it finished that the scheduler
// preempted (DisruptionTarget PreemptionByScheduler), sorted.
func (k *kubelet) preempted() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for n, p := range k.gone {
		if disruption(p) != nil {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func (k *kubelet) pod(name string) *v1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.gone[name]
}

// disruption is the pod's DisruptionTarget condition set by preemption.
func disruption(p *v1.Pod) *v1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// reclaimPod is a test pod of 4 cpu with a priority class and labels.
type reclaimPod struct {
	name, user, queue, priority string
	labels                      map[string]string
	nonPreemptible              bool
	cpu                         string
}

func (c *cluster) createReclaimPod(rp reclaimPod) {
	c.t.Helper()
	cpu := rp.cpu
	if cpu == "" {
		cpu = "4"
	}
	p := c.makePod(podSpec{name: rp.name, user: rp.user, queue: rp.queue, cpu: cpu})
	p.Spec.PriorityClassName = rp.priority
	for k, v := range rp.labels {
		p.Labels[k] = v
	}
	if rp.nonPreemptible {
		p.Labels[podmeta.LabelPreemptible] = "false"
	}
	// As a real pod: a kubelet gives it 30 s to stop when it is deleted.
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	c.createPodObject(p)
}

func (c *cluster) createPriorityClasses() {
	c.t.Helper()
	for name, value := range map[string]int32{"low": 10, "high": 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := c.client.SchedulingV1().PriorityClasses().Create(c.ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			c.t.Fatal(err)
		}
	}
}

// boundPods returns the names of the pods bound and not terminating whose
// name starts with prefix, sorted.
func (c *cluster) boundPods(prefix string) []string {
	c.t.Helper()
	pods, err := c.client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, prefix) && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

// watchFloor polls, until stop is called, that at least min pods whose
// name starts with prefix are bound and not terminating; it reports the
// lowest count seen.
func (c *cluster) watchFloor(prefix string, min int) (stop func() int) {
	done := make(chan struct{})
	result := make(chan int, 1)
	go func() {
		lowest := 1 << 30
		for {
			pods, err := c.client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{})
			if err == nil {
				n := 0
				for _, p := range pods.Items {
					if strings.HasPrefix(p.Name, prefix) && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
						n++
					}
				}
				if n < lowest {
					lowest = n
				}
			}
			select {
			case <-done:
				result <- lowest
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() int {
		close(done)
		lowest := <-result
		if lowest < min {
			c.t.Errorf("pods %s*: down to %d bound at some point, want never below %d", prefix, lowest, min)
		}
		return lowest
	}
}

// events returns the notes of the events.k8s.io Events about the named
// object with the reason.
func (c *cluster) events(name, reason string) []string {
	c.t.Helper()
	evs, err := c.client.EventsV1().Events(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e.Type+": "+e.Note)
		}
	}
	return out
}

// counter reads a counter of the process' legacy registry (the in-process
// scheduler's) with the given labels; 0 when absent.
func counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue metric
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// TestReclaimGuaranteedShare: b borrows the whole node; a non-preemptible
// pod may only use b's guaranteed share; a's pods, lower in priority than
// all of b's, arrive for a's guaranteed share and are bound within seconds
// by preempting b's pods: lowest priority first, then youngest, never a
// non-preemptible one, and never taking b below its share. Victims carry
// the DisruptionTarget condition and an event naming the queues; the
// preemptor's event lists its victims; the metrics count them.
func TestReclaimGuaranteedShare(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(elasticConfig)
	c.createPriorityClasses()
	c.startScheduler()
	k := c.startKubelet()
	reclaimedBefore := counter(t, "userquota_preempted_pods_total", map[string]string{"queue": "root.b", "reason": "reclaim"})

	// b: two non-preemptible pods (8 cpu, within its guaranteed 16), then
	// one more would take its non-preemptible pods over it.
	for i := 0; i < 2; i++ {
		n := fmt.Sprintf("b-np-%d", i)
		c.createReclaimPod(reclaimPod{name: n, user: "bob", queue: "root.b", priority: "low", nonPreemptible: true})
		c.waitBound(n, bindTimeout)
	}
	c.createReclaimPod(reclaimPod{name: "b-np-big", user: "bob", queue: "root.b", priority: "low", nonPreemptible: true, cpu: "12"})
	msg := c.waitRefused("b-np-big", "queue root.b has no guaranteed room left for non-preemptible pods: cpu 8+12 > 16")
	t.Logf("non-preemptible refusal as the user sees it: %s", msg)
	c.deletePod("b-np-big")

	// b borrows the rest of the node: three low and three high priority pods.
	for _, n := range []string{"b-low-0", "b-low-1", "b-low-2", "b-high-0", "b-high-1", "b-high-2"} {
		prio := "low"
		if strings.HasPrefix(n, "b-high") {
			prio = "high"
		}
		c.createReclaimPod(reclaimPod{name: n, user: "bob", queue: "root.b", priority: prio})
		c.waitBound(n, bindTimeout)
	}

	// a asks for its guaranteed 16 with pods of the default priority (0).
	floor := c.watchFloor("b-", 4)
	start := time.Now()
	for i := 0; i < 4; i++ {
		c.createReclaimPod(reclaimPod{name: fmt.Sprintf("a-%d", i), user: "ann", queue: "root.a"})
	}
	for i := 0; i < 4; i++ {
		c.waitBound(fmt.Sprintf("a-%d", i), reclaimPodTimeout)
	}
	t.Logf("a bound to its guaranteed share in %s", time.Since(start).Round(100*time.Millisecond))
	c.eventually("b back at its share", bindTimeout, func() (bool, error) {
		return strings.Join(c.boundPods("b-"), ",") == "b-high-0,b-high-1,b-np-0,b-np-1", nil
	})
	time.Sleep(2 * time.Second) // nothing more goes
	if got := c.boundPods("b-"); strings.Join(got, ",") != "b-high-0,b-high-1,b-np-0,b-np-1" {
		t.Errorf("b's pods left: %v", got)
	}
	floor()
	wantVictims := "b-high-2,b-low-0,b-low-1,b-low-2"
	if got := strings.Join(k.preempted(), ","); got != wantVictims {
		t.Errorf("preempted %s, want %s (lowest priority, then youngest; never the non-preemptible ones)", got, wantVictims)
	}

	// What users see.
	v := k.pod("b-low-0")
	if v == nil || disruption(v) == nil {
		t.Fatalf("victim b-low-0 has no DisruptionTarget condition: %+v", v)
	}
	cond := disruption(v).Message
	// The usage is what b keeps, not counting victims already leaving.
	if !regexp.MustCompile(`^userquota-scheduler: queue root.b uses more than its share \(cpu (32|28|24|20) > 16, guaranteed 16\): queue root.a takes back capacity it lent$`).MatchString(cond) {
		t.Errorf("victim condition %q does not say which queue took the room back from which and why", cond)
	}
	t.Logf("a victim's DisruptionTarget condition: %s", cond)
	c.eventually("Preempted events on the victims and Preempting events on a's pods", bindTimeout, func() (bool, error) {
		return len(c.events("b-low-0", userquota.ReasonPreempted)) > 0 && len(c.events("b-high-2", userquota.ReasonPreempted)) > 0, nil
	})
	ev := c.events("b-low-0", userquota.ReasonPreempted)[0]
	if !strings.Contains(ev, "Preempted by pod quota-test/a-") || !strings.Contains(ev, "queue root.b uses more than its share") {
		t.Errorf("victim event %q does not say who took the room and why", ev)
	}
	var preempting []string
	for i := 0; i < 4; i++ {
		preempting = append(preempting, c.events(fmt.Sprintf("a-%d", i), userquota.ReasonPreempting)...)
	}
	all := strings.Join(preempting, "\n")
	for _, n := range strings.Split(wantVictims, ",") {
		if !strings.Contains(all, "quota-test/"+n+" (queue root.b, over its share)") {
			t.Errorf("no preemptor event names victim %s:\n%s", n, all)
		}
	}
	t.Logf("a preemptor's event: %s", preempting[0])
	if got := counter(t, "userquota_preempted_pods_total", map[string]string{"queue": "root.b", "reason": "reclaim"}) - reclaimedBefore; got != 4 {
		t.Errorf("userquota_preempted_pods_total{queue=root.b,reason=reclaim} grew by %v, want 4", got)
	}
	if got := counter(t, "userquota_preemptions_total", map[string]string{"queue": "root.a"}); got < 1 {
		t.Errorf("userquota_preemptions_total{queue=root.a} = %v", got)
	}
}

// pdbConfig: a is guaranteed 16, b only 8.
const pdbConfig = `
partitions:
- name: default
  queues:
  - name: root
    submitacl: "*"
    properties: {quota.sharing: elastic}
    queues:
    - name: a
      resources: {guaranteed: {vcore: 16}, max: {vcore: 40}}
    - name: b
      resources: {guaranteed: {vcore: 8}, max: {vcore: 40}}
`

// TestReclaimRespectsPDB: b's lowest-priority pods are covered by a
// PodDisruptionBudget that allows no disruption. a takes its guaranteed
// back from b's other pods although they have a higher priority; when a
// grows further and only budgeted pods are left over b's share, one is
// preempted and a's event says the budget was violated.
func TestReclaimRespectsPDB(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(pdbConfig)
	c.createPriorityClasses()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(4)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		},
	}
	pdb, err := c.client.PolicyV1().PodDisruptionBudgets(c.ns).Create(c.ctx, pdb, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No disruption controller runs here: its verdict is written by hand.
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0, CurrentHealthy: 4, DesiredHealthy: 4, ExpectedPods: 4}
	if _, err := c.client.PolicyV1().PodDisruptionBudgets(c.ns).UpdateStatus(c.ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.startScheduler()
	k := c.startKubelet()

	for i := 0; i < 4; i++ {
		n := fmt.Sprintf("b-db-%d", i)
		c.createReclaimPod(reclaimPod{name: n, user: "bob", queue: "root.b", priority: "low", labels: map[string]string{"app": "db"}})
		c.waitBound(n, bindTimeout)
	}
	for i := 0; i < 4; i++ {
		n := fmt.Sprintf("b-web-%d", i)
		c.createReclaimPod(reclaimPod{name: n, user: "bob", queue: "root.b", priority: "high", labels: map[string]string{"app": "web"}})
		c.waitBound(n, bindTimeout)
	}

	for i := 0; i < 4; i++ {
		c.createReclaimPod(reclaimPod{name: fmt.Sprintf("a-%d", i), user: "ann", queue: "root.a"})
	}
	for i := 0; i < 4; i++ {
		c.waitBound(fmt.Sprintf("a-%d", i), reclaimPodTimeout)
	}
	if got := strings.Join(k.preempted(), ","); got != "b-web-0,b-web-1,b-web-2,b-web-3" {
		t.Errorf("preempted %s, want b's web pods (the db pods are covered by a PDB)", got)
	}

	// a grows to 20: its share is 20, b's 12, and only db pods are left
	// over it: one goes, against the budget, and a's event says so.
	c.createReclaimPod(reclaimPod{name: "a-4", user: "ann", queue: "root.a"})
	c.waitBound("a-4", reclaimPodTimeout)
	got := k.preempted()
	if len(got) != 5 || !strings.HasPrefix(got[0], "b-db-") {
		t.Fatalf("preempted %v, want one db pod more", got)
	}
	c.eventually("a-4's event", bindTimeout, func() (bool, error) { return len(c.events("a-4", userquota.ReasonPreempting)) > 0, nil })
	ev := c.events("a-4", userquota.ReasonPreempting)[0]
	if !strings.HasPrefix(ev, "Warning: ") || !strings.Contains(ev, "against a PodDisruptionBudget") {
		t.Errorf("a-4's event %q does not warn about the budget", ev)
	}
	if n := len(c.boundPods("b-db-")); n != 3 {
		t.Errorf("%d db pods bound, want 3 (b at its share of 12)", n)
	}
}

// fenceConfig: t is fenced; x is outside it.
const fenceConfig = `
partitions:
- name: default
  queues:
  - name: root
    submitacl: "*"
    properties: {quota.sharing: elastic}
    queues:
    - name: x
      resources: {guaranteed: {vcore: 16}, max: {vcore: 40}}
    - name: t
      resources: {guaranteed: {vcore: 16}, max: {vcore: 40}}
      properties: {preemption.policy: fence}
      queues:
      - name: t1
        resources: {guaranteed: {vcore: 8}, max: {vcore: 40}}
      - name: t2
        resources: {guaranteed: {vcore: 8}, max: {vcore: 40}}
`

// TestReclaimFence: t2 (inside the fence) borrows the whole node. x's pods,
// within x's guaranteed share, take nothing inside the fence and wait; t1's
// pods, inside the fence, take their share back from t2.
func TestReclaimFence(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(fenceConfig)
	c.startScheduler()
	k := c.startKubelet()
	for i := 0; i < 8; i++ {
		n := fmt.Sprintf("t2-%d", i)
		c.createReclaimPod(reclaimPod{name: n, user: "tess", queue: "root.t.t2"})
		c.waitBound(n, bindTimeout)
	}
	for i := 0; i < 2; i++ {
		c.createReclaimPod(reclaimPod{name: fmt.Sprintf("x-%d", i), user: "xavier", queue: "root.x"})
	}
	msg := c.waitRefused("x-0", "preemption: ")
	t.Logf("x-0 as its user sees it: %s", msg)
	c.stillPending("x-0", 3*time.Second)
	c.stillPending("x-1", time.Second)
	if got := k.preempted(); len(got) != 0 {
		t.Fatalf("an outsider preempted %v inside the fence", got)
	}

	for i := 0; i < 2; i++ {
		c.createReclaimPod(reclaimPod{name: fmt.Sprintf("t1-%d", i), user: "tina", queue: "root.t.t1"})
	}
	for i := 0; i < 2; i++ {
		c.waitBound(fmt.Sprintf("t1-%d", i), reclaimPodTimeout)
	}
	if got := strings.Join(k.preempted(), ","); got != "t2-6,t2-7" {
		t.Errorf("preempted %s, want t2's two youngest", got)
	}
	c.stillPending("x-0", 2*time.Second)
}

// TestReclaimConverges: b is a Deployment of 8 pods that would fill the
// node; a's demand goes up and down over several rounds. Each round ends
// with a holding what it asked for (within its guaranteed share) and b the
// rest; b's pods are preempted only when a grows, exactly as many as a
// needs, b is never taken below its share, and once the rounds stop
// nothing more is preempted: no loops.
func TestReclaimConverges(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(elasticConfig)
	c.startScheduler()
	c.startControllers()
	k := c.startKubelet()

	tmpl := c.makePod(podSpec{user: "bob", queue: "root.b", cpu: "4"})
	tmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	tmpl.Labels["app"] = "b"
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "b"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](8),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "b"}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels, Annotations: tmpl.Annotations}, Spec: tmpl.Spec},
		},
	}
	if _, err := c.client.AppsV1().Deployments(c.ns).Create(c.ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.eventually("b's 8 pods bound", 60*time.Second, func() (bool, error) { return len(c.boundPods("b-")) == 8, nil })

	var a []string // a's pods, oldest first
	next, want, prev := 0, 0, 0
	rounds := []int{4, 1, 3, 0, 2, 4, 2, 4, 0, 3, 1, 4, 2, 0, 4, 3}
	for round, n := range rounds {
		floor := c.watchFloor("b-", 8-max(n, prev))
		for len(a) < n {
			name := fmt.Sprintf("a-%d", next)
			next++
			c.createReclaimPod(reclaimPod{name: name, user: "ann", queue: "root.a"})
			a = append(a, name)
		}
		for len(a) > n {
			c.deletePod(a[len(a)-1])
			a = a[:len(a)-1]
		}
		if n > prev {
			want += n - prev
		}
		c.eventually(fmt.Sprintf("round %d: a holds %d pods, b %d", round, n, 8-n), reclaimPodTimeout, func() (bool, error) {
			return len(c.boundPods("a-")) == n && len(c.boundPods("b-")) == 8-n, nil
		})
		floor()
		prev = n
	}
	// Settled: a quiet spell without a preemption, and the counts hold.
	before := len(k.preempted())
	time.Sleep(5 * time.Second)
	if got := len(k.preempted()); got != before {
		t.Errorf("%d pods preempted after the shares settled", got-before)
	}
	last := rounds[len(rounds)-1]
	if na, nb := len(c.boundPods("a-")), len(c.boundPods("b-")); na != last || nb != 8-last {
		t.Errorf("after settling: a %d pods, b %d; want %d and %d", na, nb, last, 8-last)
	}
	for _, v := range k.preempted() {
		if !strings.HasPrefix(v, "b-") {
			t.Errorf("preempted %s, a pod of a (a never used more than its share)", v)
		}
	}
	if got := len(k.preempted()); got != want {
		t.Errorf("%d of b's pods preempted over the rounds, want %d (as many as a grew by)", got, want)
	}
}

// beyondConfig: a, b and c are guaranteed 8 each and share the rest.
const beyondConfig = `
partitions:
- name: default
  queues:
  - name: root
    submitacl: "*"
    properties: {quota.sharing: elastic}
    queues:
    - name: a
      resources: {guaranteed: {vcore: 8}, max: {vcore: 40}}
    - name: b
      resources: {guaranteed: {vcore: 8}, max: {vcore: 40}}
    - name: c
      resources: {guaranteed: {vcore: 8}, max: {vcore: 40}}
`

// TestReclaimBeyondGuaranteed: b holds the node; c's pods wait for a node
// they can never have (a node selector), so c's share of 8 is not used,
// and b is 20 over its share of 12. a asks for 24, and its share is 12 (8
// guaranteed and half of what nobody guarantees): its pods beyond its
// guaranteed part do not fit root's share while b holds the node; they are
// refused at PreFilter for root's share only and take the room back all
// the same. The burst takes back what a's share holds and no more,
// although b is over by more: a's pods already nominated count.
func TestReclaimBeyondGuaranteed(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(beyondConfig)
	c.startScheduler()
	k := c.startKubelet()
	for i := 0; i < 8; i++ {
		n := fmt.Sprintf("b-%d", i)
		c.createReclaimPod(reclaimPod{name: n, user: "bob", queue: "root.b"})
		c.waitBound(n, bindTimeout)
	}
	for i := 0; i < 2; i++ {
		p := c.makePod(podSpec{name: fmt.Sprintf("c-%d", i), user: "cy", queue: "root.c", cpu: "4"})
		p.Spec.NodeSelector = map[string]string{"nowhere": "true"}
		if _, err := c.client.CoreV1().Pods(c.ns).Create(c.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.waitRefused("c-0", "node(s) didn't match Pod's node affinity/selector")
	floor := c.watchFloor("b-", 3)
	for i := 0; i < 6; i++ {
		c.createReclaimPod(reclaimPod{name: fmt.Sprintf("a-%d", i), user: "ann", queue: "root.a"})
	}
	c.eventually("a at its share of 12", reclaimPodTimeout, func() (bool, error) {
		return len(c.boundPods("a-")) == 3, nil
	})
	time.Sleep(3 * time.Second)
	floor()
	if na, nb := len(c.boundPods("a-")), len(c.boundPods("b-")); na != 3 || nb != 5 {
		t.Errorf("a %d pods, b %d; want 3 and 5 (nothing preempted that a cannot use)", na, nb)
	}
	if got := strings.Join(k.preempted(), ","); got != "b-5,b-6,b-7" {
		t.Errorf("preempted %s, want b's three youngest", got)
	}
}
