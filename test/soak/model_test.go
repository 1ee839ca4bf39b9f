package main

// Tests of the harness's oracle: the model it compares the scheduler with
// must itself follow docs/design.md and docs/api.md, and its checks must
// fire. hack/soak.sh runs them before every soak.

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

func testConfig(t *testing.T) *qconfig {
	t.Helper()
	c := newConfig(rand.New(rand.NewSource(1)), 1, 24, 6, vipUsers())
	if err := c.validate(); err != nil {
		t.Fatalf("%v\n%s", err, c.yaml)
	}
	return c
}

func TestGeneratedConfigsAreValid(t *testing.T) {
	for _, size := range []struct{ users, groups int }{{4, 2}, {24, 6}, {32, 6}, {60, 6}, {200, 20}} {
		rng := rand.New(rand.NewSource(int64(size.users)))
		bad := 0
		for v := 0; v < 200; v++ {
			if err := newConfig(rng, v, size.users, size.groups, vipUsers()).validate(); err != nil {
				bad++
			}
		}
		// The harness redraws an invalid one; most must be valid.
		if bad > 0 {
			t.Errorf("%d users, %d groups: %d of 200 configs invalid", size.users, size.groups, bad)
		}
	}
}

func TestResolveGroup(t *testing.T) {
	c := testConfig(t)
	for _, tc := range []struct {
		leaf   string
		groups []string
		want   string
	}{
		{"root.alpha.a1", []string{"g3"}, "g3"},                    // named at root
		{"root.alpha.a1", []string{"g3", "g0"}, "g0"},              // root's earliest entry wins
		{"root.beta.b1", []string{"g0", "g1"}, "g1"},               // named at the leaf beats root's order
		{"root.beta.b2", []string{"g0"}, "*"},                      // "*" at b2 hides g0 at root
		{"root.beta.b2", []string{"g0", "g2"}, "g2"},               // named at b2
		{"root.alpha.a2", []string{unnamedGroup}, "*"},             // named nowhere: root's "*"
		{"root.default", nil, ""},                                  // no groups: no group tracking
		{"root.default", []string{"g4", unnamedGroup}, "g4"},       // a named one before "*"
		{"root.beta.b2", []string{unnamedGroup, "g5", "g2"}, "g2"}, // order of the user's groups does not matter
	} {
		if got := c.resolveGroup(tc.leaf, tc.groups); got != tc.want {
			t.Errorf("resolveGroup(%s, %v) = %q, want %q", tc.leaf, tc.groups, got, tc.want)
		}
	}
}

func TestLimitLookup(t *testing.T) {
	c := testConfig(t)
	root := c.byPath["root"]
	vip := root.userLimit("u001")
	other := root.userLimit("u010")
	if vip == nil || other == nil || vip.max[resPods] == other.max[resPods] || other.max[resCPU] == 0 || vip.max[resCPU] != 0 {
		t.Fatalf("root user limits: vip %+v, other %+v", vip, other)
	}
	if l := c.byPath["root.beta.b2"].groupLimit("g0"); l == nil || l.max[resPods] != c.byPath["root.beta.b2"].groupLimit("*").max[resPods] {
		t.Errorf("b2: a group it does not name gets the \"*\" entry, got %+v", l)
	}
	if l := c.byPath["root.beta.b1"].groupLimit("g0"); l != nil {
		t.Errorf("b1 names only g1 and has no \"*\": g0 unlimited there, got %+v", l)
	}
	if l := c.limitFor(who{kind: "queue"}, "root.alpha.a1"); l == nil || l.maxApps == 0 {
		t.Errorf("a1 has maxapplications, got %+v", l)
	}
}

func TestLoosestStrictest(t *testing.T) {
	a := &limit{max: vec{resPods: 3, resCPU: 1000}, maxApps: 2}
	b := &limit{max: vec{resPods: 5}, maxApps: 1}
	l := loosest([]*limit{a, b})
	if l.max[resPods] != 5 || len(l.max) != 1 || l.maxApps != 2 {
		t.Errorf("loosest = %+v", l)
	}
	if loosest([]*limit{a, nil}) != nil {
		t.Error("loosest with an unlimited version must be unlimited")
	}
	s := strictest([]*limit{a, b, nil})
	if s.max[resPods] != 3 || s.max[resCPU] != 1000 || s.maxApps != 1 {
		t.Errorf("strictest = %+v", s)
	}
	if why := a.over(vec{resPods: 4, resCPU: 900}, 1, vec{resPods: 1, resCPU: 100}, false); !strings.Contains(why, "pods 4 > max 3") {
		t.Errorf("over: %q", why)
	}
	if why := a.over(vec{resPods: 3, resCPU: 2000}, 1, vec{resPods: 1}, false); why != "" {
		t.Errorf("a request not asking for cpu is not refused for cpu: %q", why)
	}
	if why := a.over(vec{resPods: 1}, 3, vec{resPods: 1}, true); !strings.Contains(why, "applications 3 > max 2") {
		t.Errorf("over apps: %q", why)
	}
	if why := a.over(vec{resPods: 1}, 3, vec{resPods: 1}, false); why != "" {
		t.Errorf("apps only limit a new application: %q", why)
	}
}

func testPod(name, user string, groups []string, queue, cpu string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "soak-a", UID: types.UID("uid-" + name),
			Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: v1.PodSpec{SchedulerName: schedulerName, Containers: []v1.Container{{Name: "main",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("64Mi")}}}}},
	}
	if user != "" {
		b, _ := json.Marshal(map[string]any{"user": user, "groups": groups})
		p.Annotations[podmeta.AnnotationUserInfo] = string(b)
	}
	if queue != "" {
		p.Labels[podmeta.LabelQueue] = queue
	}
	return p
}

func TestChargeOf(t *testing.T) {
	p := testPod("p", "sue", []string{"g1"}, "root.beta.b1", "500m")
	p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m")}}}}
	c := chargeOf(p)
	if c.user != "sue" || c.queue != "root.beta.b1" || c.app != "soak-a/pod/uid-p" {
		t.Errorf("charge %+v", c)
	}
	if !vecEqual(c.res, vec{resCPU: 1500, resMemory: 64 << 20, resPods: 1}) {
		t.Errorf("request %v: the init container's larger cpu, plus one pod", c.res)
	}
	d := testPod("d", "", nil, "", "1")
	d.Labels["pod-template-hash"] = "abc12"
	d.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-abc12", Controller: ptr.To(true)}}
	c = chargeOf(d)
	if c.user != defaultUser || c.queue != defaultQueue || c.app != "soak-a/Deployment/web" {
		t.Errorf("deployment pod without metadata: %+v", c)
	}
	d.Labels[podmeta.LabelAppID] = "train"
	if c = chargeOf(d); c.app != "soak-a/train" {
		t.Errorf("app-id label: %s", c.app)
	}
}

// The flattening of the REST answers and of the model must agree on the
// example of docs/api.md.
func TestRESTSnapMatchesModel(t *testing.T) {
	c := testConfig(t)
	m := newUsageModel(c)
	p := testPod("b1", "bob", nil, "root.default", "1")
	m.charge(chargeOf(p))
	users := `[{"userName":"bob","groups":{"soak-a/pod/uid-b1":""},"queues":{"queuePath":"root","resourceUsage":{"cpu":1000,"memory":67108864,"pods":1},
	  "runningApplications":["soak-a/pod/uid-b1"],"maxResources":{"cpu":1000},"maxApplications":0,"children":[{"queuePath":"root.default",
	  "resourceUsage":{"cpu":1000,"memory":67108864,"pods":1},"runningApplications":["soak-a/pod/uid-b1"],"maxResources":{},"maxApplications":0,"children":[]}]}}]`
	queues := `{"queuePath":"root","resourceUsage":{"cpu":1000,"memory":67108864,"pods":1},"runningApplications":["soak-a/pod/uid-b1"],"children":[
	  {"queuePath":"root.alpha","resourceUsage":{},"runningApplications":[],"children":[]},
	  {"queuePath":"root.default","resourceUsage":{"cpu":1000,"memory":67108864,"pods":1},"runningApplications":["soak-a/pod/uid-b1"],"children":[]}]}`
	var u []ugm.UserUsage
	var q ugm.QueueUsage
	if err := json.Unmarshal([]byte(users), &u); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(queues), &q); err != nil {
		t.Fatal(err)
	}
	rest := func() snap {
		s := restSnap(u, nil, &q)
		if err := addRESTTrees(s, []byte(noTreeUsage)); err != nil {
			t.Fatal(err)
		}
		return s
	}
	lines, n, _ := diff(rest(), m.snap())
	if n != 0 {
		t.Fatalf("differ:\n%s", strings.Join(lines, "\n"))
	}
	// And a difference is seen, with both sides.
	q.Children[1].ResourceUsage.Set(resources.Intern("pods"), 2)
	lines, n, maxPods := diff(rest(), m.snap())
	if n != 1 || maxPods != 1 || !strings.Contains(lines[0], "scheduler:") || !strings.Contains(lines[0], "recomputed:") {
		t.Fatalf("want one difference of one pod, got %d (%d): %v", n, maxPods, lines)
	}
}

// history plumbing: pods as etcd holds them (protobuf).
var encoder = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

func put(t *testing.T, h *history, rev int64, p *v1.Pod) {
	t.Helper()
	p.APIVersion, p.Kind = "v1", "Pod"
	var b bytes.Buffer
	if err := encoder.Encode(p, &b); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.apply(&clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(podPrefix + p.Namespace + "/" + p.Name), Value: b.Bytes(), ModRevision: rev}}, time.Now())
}

func del(h *history, rev int64, p *v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.apply(&clientv3.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte(podPrefix + p.Namespace + "/" + p.Name), ModRevision: rev}}, time.Now())
}

func TestHistoryCatchesABindOverALimit(t *testing.T) {
	c := testConfig(t)
	var got string
	h := newHistory(c, nil)
	h.onViolate = nil
	v := h.addVersion(c)
	v.applied = time.Now()
	limit := c.byPath["root"].userLimit("u010").max[resPods]
	var pods []*v1.Pod
	rev := int64(1)
	for i := int64(0); i < limit; i++ {
		p := testPod("p"+string(rune('a'+i)), "u010", []string{"g0"}, "root.default", "100m")
		pods = append(pods, p)
		put(t, h, rev, p)
		rev++
		p.Spec.NodeName = "n"
		put(t, h, rev, p)
		rev++
	}
	if h.violation != "" {
		t.Fatalf("within the limit: %s", h.violation)
	}
	// One pod finishes, one more binds: still within.
	pods[0].Status.Phase = v1.PodSucceeded
	put(t, h, rev, pods[0])
	rev++
	extra := testPod("extra", "u010", []string{"g0"}, "root.default", "100m")
	put(t, h, rev, extra)
	rev++
	if fp := h.fittingPending(); len(fp) != 1 || fp[0] != "soak-a/extra" {
		t.Errorf("fitting pending pods %v, want soak-a/extra", fp)
	}
	extra.Spec.NodeName = "n"
	put(t, h, rev, extra)
	rev++
	if h.violation != "" {
		t.Fatalf("within the limit after a release: %s", h.violation)
	}
	if h.c.lifecycles != 1 || h.c.bound != int(limit)+1 {
		t.Errorf("lifecycles %d, bound %d", h.c.lifecycles, h.c.bound)
	}
	over := testPod("over", "u010", []string{"g0"}, "root.default", "100m")
	put(t, h, rev, over)
	rev++
	if fp := h.fittingPending(); len(fp) != 0 {
		t.Errorf("at the limit, nothing fits: %v", fp)
	}
	over.Spec.NodeName = "n"
	put(t, h, rev, over)
	got = h.violation
	if !strings.Contains(got, `user "u010" was at its limit in root`) {
		t.Fatalf("violation %q", got)
	}
	del(h, rev+1, over)
	if h.c.deletedBound != 1 {
		t.Errorf("deletedBound %d", h.c.deletedBound)
	}
}

func TestHistoryCatchesAWaitingPod(t *testing.T) {
	c := testConfig(t)
	h := newHistory(c, nil)
	v := h.addVersion(c)
	v.applied = time.Now()
	p := testPod("w", "u011", []string{"g1"}, "root.alpha.a1", "100m")
	put(t, h, 1, p)
	now := time.Now()
	// Never refused: it is in the scheduler's queue, not held by quota.
	h.checkWaits(now, now.Add(-time.Minute), 5*time.Second)
	h.checkWaits(now.Add(20*time.Second), now.Add(-time.Minute), 5*time.Second)
	if h.violation != "" {
		t.Fatalf("never refused: %s", h.violation)
	}
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable", Message: "user u011 is at a limit"}}
	put(t, h, 2, p)
	now = h.pods[podPrefix+p.Namespace+"/"+p.Name].refusedAt
	h.checkWaits(now, now.Add(-time.Minute), 5*time.Second)
	h.checkWaits(now.Add(4*time.Second), now.Add(-time.Minute), 5*time.Second)
	if h.violation != "" {
		t.Fatalf("4s: %s", h.violation)
	}
	// A disturbance (calm later) restarts the clock.
	h.checkWaits(now.Add(6*time.Second), now.Add(3*time.Second), 5*time.Second)
	if h.violation != "" {
		t.Fatalf("3s since calm: %s", h.violation)
	}
	h.checkWaits(now.Add(9*time.Second), now.Add(3*time.Second), 5*time.Second)
	if !strings.Contains(h.violation, "has fitted every limit for 6.0s") {
		t.Fatalf("violation %q", h.violation)
	}
}

// A pod that fits but is kept behind a pod held longer than the starvation
// wait waits by policy while that pod is pending; once it is bound, the
// wait counts.
func TestHistoryPodKeptBehind(t *testing.T) {
	c := testConfig(t)
	h := newHistory(c, nil)
	v := h.addVersion(c)
	v.applied = time.Now()
	big := testPod("big", "u011", []string{"g1"}, "root.alpha.a1", "100m")
	put(t, h, 1, big)
	w := testPod("w", "u011", []string{"g1"}, "root.alpha.a1", "100m")
	w.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "QuotaHeld",
		Message: "held by quota: waiting behind pod " + big.Namespace + "/big, held since 10:00:00 (longer than the starvation wait): the room it needs is kept for it; it was held because ..."}}
	put(t, h, 2, w)
	now := h.pods[podPrefix+w.Namespace+"/"+w.Name].refusedAt
	calm := now.Add(-time.Minute)
	for _, after := range []time.Duration{0, 4 * time.Second, 9 * time.Second, 20 * time.Second} {
		h.checkWaits(now.Add(after), calm, 5*time.Second)
	}
	if h.violation != "" {
		t.Fatalf("kept behind a pending pod: %s", h.violation)
	}
	if h.c.heldBehind != 1 {
		t.Errorf("heldBehind %d, want 1", h.c.heldBehind)
	}
	big.Spec.NodeName = "node-0"
	put(t, h, 3, big)
	h.checkWaits(now.Add(21*time.Second), calm, 5*time.Second)
	h.checkWaits(now.Add(27*time.Second), calm, 5*time.Second)
	if !strings.Contains(h.violation, "has fitted every limit for 6.0s") {
		t.Fatalf("after the pod it waited behind was bound: violation %q", h.violation)
	}
}

// A pod that fits but may be kept behind a starving pod whose room the
// scheduler keeps (refused, older than the starvation wait, not fitting
// now but able to fit alone, held by a limit the pod counts against)
// waits by policy before its own status says so; behind a younger pod, a
// pod that can never fit, or once that pod is gone, the wait counts.
func TestHistoryPodBehindAStarvingPod(t *testing.T) {
	// testConfig: u011 may run cpu 1625m in root. It runs 1500m; the pod
	// ahead asks for 1000m (or, never fitting, 2000m), the waiting pod
	// for 100m.
	const userLimit = `held by quota: user "u011" would exceed maxresources in root: cpu 1500m+1 > 1625m`
	for _, tc := range []struct {
		name    string
		age     time.Duration // of the pod ahead
		cpu     string        // its request
		message string        // its refusal
		exempt  bool
	}{
		{"starving, same user's limit", 3 * time.Minute, "1", userLimit, true},
		{"starving, a queue on the path", 3 * time.Minute, "1", `held by quota: queue root.alpha would exceed max: cpu 10000m+1 > 10028m`, true},
		{"not starving yet", time.Minute, "1", userLimit, false},
		{"starving, can never fit", 3 * time.Minute, "2", userLimit, false},
		{"starving, another user's limit", 3 * time.Minute, "1", `held by quota: user "u012" would exceed maxresources in root: cpu 1+1 > 1625m`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, big, w := behindSetup(t, tc.cpu, tc.message, tc.age)
			// A quiet check does not wait for a pod that waits by policy.
			if got := slices.Contains(h.fittingPending(), w.Namespace+"/"+w.Name); got == tc.exempt {
				t.Errorf("quiet check waits for the pod: %v, want %v", got, !tc.exempt)
			}
			now := h.pods[podPrefix+w.Namespace+"/"+w.Name].refusedAt
			calm := now.Add(-time.Minute)
			for _, after := range []time.Duration{0, 4 * time.Second, 9 * time.Second, 20 * time.Second} {
				h.checkWaits(now.Add(after), calm, 5*time.Second)
			}
			if got := h.violation == ""; got != tc.exempt {
				t.Fatalf("exempt %v, want %v (violation %q)", got, tc.exempt, h.violation)
			}
			if !tc.exempt {
				return
			}
			if h.c.heldBehind != 1 {
				t.Errorf("heldBehind %d, want 1", h.c.heldBehind)
			}
			del(h, 4, big)
			h.checkWaits(now.Add(21*time.Second), calm, 5*time.Second)
			h.checkWaits(now.Add(27*time.Second), calm, 5*time.Second)
			if !strings.Contains(h.violation, "has fitted every limit for 6.0s") {
				t.Fatalf("after the pod ahead went: violation %q", h.violation)
			}
		})
	}
}

// behindSetup: u011 runs 1500m of its 1625m in root; big (u011, cpu,
// its status saying message) was created age ago and is pending; w
// (u011, 100m) is pending, its status naming u011's limit.
func behindSetup(t *testing.T, cpu, message string, age time.Duration) (h *history, big, w *v1.Pod) {
	t.Helper()
	c := testConfig(t)
	h = newHistory(c, nil)
	v := h.addVersion(c)
	v.applied = time.Now()
	run := testPod("run", "u011", []string{"g1"}, "root.alpha.a1", "1500m")
	run.Spec.NodeName = "node-0"
	put(t, h, 1, run)
	big = testPod("big", "u011", []string{"g1"}, "root.alpha.a1", cpu)
	big.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "QuotaHeld", Message: message}}
	put(t, h, 2, big)
	h.pods[podPrefix+big.Namespace+"/"+big.Name].created = time.Now().Add(-age)
	w = testPod("w", "u011", []string{"g1"}, "root.alpha.a1", "100m")
	w.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "QuotaHeld",
		Message: `held by quota: user "u011" would exceed maxresources in root: cpu 2500m+100m > 1625m`}}
	put(t, h, 3, w)
	return h, big, w
}

func TestLimitCounts(t *testing.T) {
	c := podCharge{user: "u1", groups: []string{"g1"}, queue: "root.alpha.a1"}
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{`held by quota: user "u1" would exceed maxresources in root: pods 3+1 > 3`, true},
		{`user "u2" would exceed maxresources in root: pods 3+1 > 3`, false},
		{`held by quota: group "g1" would exceed maxresources in root.alpha: cpu 1+1 > 1`, true},
		// Tracked as g1: the cumulative group "*"'s limit is not its own.
		{`held by quota: group "*" would exceed maxresources in root: pods 8+1 > 8`, false},
		{`held by quota: group "g2" would exceed maxresources in root: pods 8+1 > 8`, false},
		// A user's or group's limit on another queue takes nothing of theirs.
		{`held by quota: user "u1" would exceed maxresources in root.beta: pods 3+1 > 3`, false},
		{`held by quota: user "u1" would exceed maxapplications in root.alpha.a1: 2+1 > 2`, true},
		{`held by quota: group "*" would exceed maxresources in root.beta.b2: pods 4+1 > 4`, false},
		{`held by quota: group "g1" would exceed maxresources in root.alpha.a: cpu 1+1 > 1`, false},
		{`held by quota: gang TaskGroups ns/Job/j waits until its minimum of 2 pods (cpu=1,memory=1Gi,pods=2) fits at once: user "u1" would exceed maxresources in root.beta: pods 2+2 > 3`, false},
		{`held by quota: queue root.alpha would exceed max: cpu 4+1 > 4`, true},
		{`held by quota: queue root.alpha.a1 would exceed max: cpu 4+1 > 4`, true},
		{`held by quota: queue root.alp would exceed max: cpu 4+1 > 4`, false},
		{`held by quota: queue root.beta would exceed max: cpu 4+1 > 4`, false},
		{`held by quota: waiting behind pod soak-a/big, held since 10:00:00`, false},
		{`0/4 nodes are available`, false},
	} {
		if got := limitCounts(tc.msg, c, "g1"); got != tc.want {
			t.Errorf("limitCounts(%q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
	// Tracked as "*", the same pod counts against "*"'s limit and no
	// longer against g1's.
	if !limitCounts(`held by quota: group "*" would exceed maxresources in root: pods 8+1 > 8`, c, "*") ||
		limitCounts(`held by quota: group "g1" would exceed maxresources in root.alpha: cpu 1+1 > 1`, c, "*") {
		t.Error(`limitCounts for a pod tracked as "*" reads the group's limits by its named groups`)
	}
}

// A pod of an application that runs for another user never fits, and its
// binding is a violation.
func TestHistoryApplicationConflict(t *testing.T) {
	c := testConfig(t)
	h := newHistory(c, nil)
	v := h.addVersion(c)
	v.applied = time.Now()
	a := testPod("a", "u012", []string{"g0"}, "root.alpha.a1", "100m")
	a.Labels[podmeta.LabelAppID] = "shared"
	put(t, h, 1, a)
	a.Spec.NodeName = "n"
	put(t, h, 2, a)
	b := testPod("b", "", nil, "root.alpha.a1", "100m")
	b.Labels[podmeta.LabelAppID] = "shared"
	put(t, h, 3, b)
	if fp := h.fittingPending(); len(fp) != 0 {
		t.Errorf("a pod of another user's application fits: %v", fp)
	}
	b.Spec.NodeName = "n"
	put(t, h, 4, b)
	if !strings.Contains(h.violation, "was bound although its application soak-a/shared runs for user \"u012\"") {
		t.Fatalf("violation %q", h.violation)
	}
}

func TestAdjusted(t *testing.T) {
	c := testConfig(t)
	tight := c.adjusted(-1)
	if a, b := c.byPath["root"].userLimit("u010").max[resPods], tight.byPath["root"].userLimit("u010").max[resPods]; b != max(a-1, 1) {
		t.Errorf("adjusted(-1): %d -> %d", a, b)
	}
	if c.byPath["root"].userLimit("u010").max[resPods] == tight.byPath["root"].userLimit("u010").max[resPods] && c.byPath["root"].userLimit("u010").max[resPods] > 1 {
		t.Error("adjusted changed the original")
	}
}

func TestDriftApps(t *testing.T) {
	line := func(pods int64, apps ...string) string { return nodeLine(vec{resPods: pods}, apps) }
	for _, tc := range []struct {
		name         string
		sched, model map[string]string
		want         []string
	}{
		{"equal", map[string]string{"queue root": line(1, "ns/a")}, map[string]string{"queue root": line(1, "ns/a")}, nil},
		{"app on one side", map[string]string{"queue root": line(2, "ns/a", "ns/b")}, map[string]string{"queue root": line(1, "ns/a")}, []string{"ns/b"}},
		{"same apps, other amounts", map[string]string{"queue root": line(3, "ns/a")}, map[string]string{"queue root": line(2, "ns/a")}, []string{"ns/a"}},
		{"entry only in the model", map[string]string{}, map[string]string{"user u root": line(1, "ns/c")}, []string{"ns/c"}},
		{"groups line", map[string]string{"user u groups": "ns/a=g1,ns/d=g2"}, map[string]string{"user u groups": "ns/a=g1"}, []string{"ns/d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := driftApps(snap{lines: tc.sched}, snap{lines: tc.model})
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("driftApps = %v, want %v", got, tc.want)
			}
		})
	}
}
