package userquota

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/userquota/userquota/pkg/metrics"
	"github.com/userquota/userquota/pkg/podmeta"
)

// sueIn is the usage of user sue (no groups) holding cpu millicores and
// pods in root.sandbox, with the given live pods and applications.
func sueIn(cpu, pods int64, apps []string, uids ...string) usage {
	r := map[string]int64{"cpu": cpu, "pods": pods}
	return usage{
		Users:  map[string]map[string]map[string]int64{"sue": {"root": r, "root.sandbox": r}},
		Groups: map[string]map[string]map[string]int64{},
		Queues: map[string]map[string]int64{"root": r, "root.sandbox": r},
		Apps:   map[string][]string{"sue": apps},
		Pods:   uids,
	}
}

func setCPU(q string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse(q)
	}
}

// TestPodInformer drives the plugin's own pod handler through the
// scheduler's shared informer and checks what stays charged.
func TestPodInformer(t *testing.T) {
	p1 := userPod("p1", "sue", "", "sandbox", "1")
	p2 := userPod("p2", "sue", "", "sandbox", "500m")
	running := func(p *v1.Pod) { p.Status.Phase = v1.PodRunning; p.Status.PodIP = "10.0.0.1" }
	tests := []struct {
		name string
		args *Args
		run  func(e *env)
		want usage
	}{
		{
			name: "Reserve, then bind and update events count once",
			run: func(e *env) {
				e.mustSchedule(p1)
				e.bind(p1)
				e.update(p1, running)
				e.update(p1, func(p *v1.Pod) { p.Labels["x"] = "y" })
			},
			want: sueIn(1000, 1, []string{"ns1/pod/uid-p1"}, "uid-p1"),
		},
		{
			name: "a bound pod the informer found is charged once over many events",
			run: func(e *env) {
				e.bind(p1)
				e.update(p1, running)
				e.update(p1, func(p *v1.Pod) { p.Labels["x"] = "y" })
				// A scheduling cycle that meets the pod already charged.
				e.waitFor("p1 to be charged", func() bool { _, ok := e.pl.ledger.Get("uid-p1"); return ok })
				e.mustSchedule(p1)
			},
			want: sueIn(1000, 1, []string{"ns1/pod/uid-p1"}, "uid-p1"),
		},
		{
			name: "Succeeded releases; the later delete does not release again",
			run: func(e *env) {
				e.mustSchedule(p1)
				e.bind(p1)
				e.bind(p2)
				e.update(p1, func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded })
				e.waitFor("p1 to be released", func() bool { _, ok := e.pl.ledger.Get("uid-p1"); return !ok })
				e.update(p1, func(p *v1.Pod) { p.Labels["done"] = "yes" })
				e.delete(p1)
			},
			want: sueIn(500, 1, []string{"ns1/pod/uid-p2"}, "uid-p2"),
		},
		{
			name: "Failed releases; the later delete does not release again",
			run: func(e *env) {
				e.bind(p1)
				e.bind(p2)
				e.update(p1, func(p *v1.Pod) { p.Status.Phase = v1.PodFailed })
				e.delete(p1)
			},
			want: sueIn(500, 1, []string{"ns1/pod/uid-p2"}, "uid-p2"),
		},
		{
			name: "delete releases",
			run: func(e *env) {
				e.mustSchedule(p1)
				e.bind(p1)
				e.bind(p2)
				e.delete(p1)
			},
			want: sueIn(500, 1, []string{"ns1/pod/uid-p2"}, "uid-p2"),
		},
		{
			name: "a terminating pod holds its charge",
			run: func(e *env) {
				e.bind(p1)
				e.update(p1, func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} })
			},
			want: sueIn(1000, 1, []string{"ns1/pod/uid-p1"}, "uid-p1"),
		},
		{
			name: "with releaseOnTerminating a terminating pod is released, once",
			args: &Args{ReleaseOnTerminating: true},
			run: func(e *env) {
				e.bind(p1)
				e.bind(p2)
				e.update(p1, func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} })
				e.waitFor("p1 to be released", func() bool { _, ok := e.pl.ledger.Get("uid-p1"); return !ok })
				e.update(p1, func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded })
				e.delete(p1)
			},
			want: sueIn(500, 1, []string{"ns1/pod/uid-p2"}, "uid-p2"),
		},
		{
			name: "a tombstone releases",
			run: func(e *env) {
				e.mustSchedule(p1)
				e.bind(p2)
				e.barrier()
				// The informer missed the delete and relisted: the
				// handler gets the last state it knew, wrapped.
				e.pl.onPodDelete(klog.FromContext(e.ctx), cache.DeletedFinalStateUnknown{Key: "ns1/p1", Obj: p1})
				e.pl.onPodDelete(klog.FromContext(e.ctx), cache.DeletedFinalStateUnknown{Key: "ns1/p1", Obj: p1})
			},
			want: sueIn(500, 1, []string{"ns1/pod/uid-p2"}, "uid-p2"),
		},
		{
			name: "an in-place resize up then down changes the charge",
			run: func(e *env) {
				e.bind(p1)
				e.update(p1, setCPU("3")) // over sue's 2 cpu: charged anyway
				e.waitFor("the resize up", func() bool { return userUsage(e.pl, "sue")["cpu"] == 3000 })
				e.update(p1, setCPU("250m"))
				e.waitFor("the resize down", func() bool { return userUsage(e.pl, "sue")["cpu"] == 250 })
				e.delete(p1)
				e.bind(p2)
				e.update(p2, setCPU("750m"))
			},
			want: sueIn(750, 1, []string{"ns1/pod/uid-p2"}, "uid-p2"),
		},
		{
			// The charge is the request the cycle read; a resize while the
			// pod waited to bind is not followed until the binding, which
			// sums the request whatever the update before it said.
			name: "a resize before the binding is charged when the pod binds",
			run: func(e *env) {
				e.pending(p1)
				e.mustSchedule(p1)
				e.update(p1, setCPU("750m"))
				e.bind(p1)
				e.waitFor("the binding", func() bool { return userUsage(e.pl, "sue")["cpu"] == 750 })
				e.update(p1, func(p *v1.Pod) {
					p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
				})
			},
			want: sueIn(750, 1, []string{"ns1/pod/uid-p1"}, "uid-p1"),
		},
		{
			name: "pods of another scheduler are not tracked",
			run: func(e *env) {
				other := p1.DeepCopy()
				other.Spec.SchedulerName = "default-scheduler"
				e.bind(other)
				e.update(other, setCPU("2"))
				e.delete(other)
				e.bind(p2)
			},
			want: sueIn(500, 1, []string{"ns1/pod/uid-p2"}, "uid-p2"),
		},
		{
			// A relist after a watch gap hands over one update when a pod
			// was deleted and created again under the same name.
			name: "an update to another pod of the same name releases the old pod",
			run: func(e *env) {
				old := e.bind(p1)
				e.waitFor("p1 to be charged", func() bool { _, ok := e.pl.ledger.Get("uid-p1"); return ok })
				again := old.DeepCopy()
				again.UID = "uid-p1-again"
				again.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("500m")
				e.pl.onPodUpdate(klog.Background(), old, again)
			},
			want: sueIn(500, 1, []string{"ns1/pod/uid-p1-again"}, "uid-p1-again"),
		},
		{
			name: "pending pods are not charged",
			run: func(e *env) {
				e.create(p1)
				e.update(p1, func(p *v1.Pod) { p.Labels["x"] = "y" })
			},
			want: emptyUsage(),
		},
		{
			name: "a pod bound with bad metadata is charged to the defaults",
			run: func(e *env) {
				e.bind(podOf("bad").Annotation(podmeta.AnnotationUserInfo, "sue").Label(podmeta.LabelQueue, "x").Req(cpu("1")).Obj())
			},
			want: usage{
				Users:  map[string]map[string]map[string]int64{"nobody": {"root": {"cpu": 1000, "pods": 1}, "root.default": {"cpu": 1000, "pods": 1}}},
				Groups: map[string]map[string]map[string]int64{},
				Queues: map[string]map[string]int64{"root": {"cpu": 1000, "pods": 1}, "root.default": {"cpu": 1000, "pods": 1}},
				Apps:   map[string][]string{"nobody": {"ns1/pod/uid-bad"}},
				Pods:   []string{"uid-bad"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{config: sandboxConfig, args: tc.args})
			tc.run(e)
			e.barrier()
			if diff := cmp.Diff(tc.want, snapshot(e.pl)); diff != "" {
				t.Errorf("usage (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestRestart: pods already bound when the plugin starts (a restart or a
// leader failover) are charged, forced past any limit, before PreFilter
// decides anything.
func TestRestart(t *testing.T) {
	bound := func(p *v1.Pod, phase v1.PodPhase) *v1.Pod {
		p.Spec.NodeName = testNode
		p.Status.Phase = phase
		return p
	}
	otherScheduler := bound(userPod("other", "sue", "", "sandbox", "5"), v1.PodRunning)
	otherScheduler.Spec.SchedulerName = "default-scheduler"
	objects := []runtime.Object{
		bound(userPod("a", "sue", "", "sandbox", "1500m"), v1.PodRunning),
		bound(userPod("b", "sue", "", "sandbox", "1"), v1.PodPending), // bound, not started yet
		bound(userPod("done", "sue", "", "sandbox", "4"), v1.PodSucceeded),
		otherScheduler,
		userPod("pending", "sue", "", "sandbox", "4"),
	}
	wantUsage := sueIn(2500, 2, []string{"ns1/pod/uid-a", "ns1/pod/uid-b"}, "uid-a", "uid-b")
	wantStatus := statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `user "sue" would exceed maxresources in root.sandbox: cpu 2500m+100m > 2`}
	probe := userPod("new", "sue", "", "sandbox", "100m")

	t.Run("bound pods are charged, forced", func(t *testing.T) {
		e := newEnv(t, envOptions{config: sandboxConfig, objects: objects})
		if diff := cmp.Diff(wantUsage, snapshot(e.pl)); diff != "" {
			t.Errorf("usage after start (-want,+got):\n%s", diff)
		}
		for _, uid := range []string{"uid-a", "uid-b"} {
			if c, _ := e.pl.ledger.Get(uid); !c.Forced {
				t.Errorf("charge of %s = %+v, want a forced charge", uid, c)
			}
		}
		_, s := e.preFilter(probe)
		if diff := cmp.Diff(wantStatus, summary(s)); diff != "" {
			t.Errorf("PreFilter (-want,+got):\n%s", diff)
		}
	})

	t.Run("PreFilter waits for the pod handler to sync", func(t *testing.T) {
		// Hold the pod list: until it returns the plugin has seen no pod.
		release := make(chan struct{})
		var once sync.Once
		unblock := func() { once.Do(func() { close(release) }) }
		t.Cleanup(unblock)
		e := newEnv(t, envOptions{config: sandboxConfig, objects: objects, noStart: true,
			reactors: func(cs *fake.Clientset) {
				cs.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
					<-release
					return false, nil, nil
				})
			}})
		e.informers.Start(e.ctx.Done())
		done := make(chan *fwk.Status, 1)
		go func() {
			_, s := e.preFilter(probe)
			done <- s
		}()
		select {
		case s := <-done:
			t.Fatalf("PreFilter decided (%v) before the running pods were accounted", s)
		case <-time.After(100 * time.Millisecond):
		}
		unblock()
		var s *fwk.Status
		select {
		case s = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("PreFilter did not return after the pod informer synced")
		}
		if diff := cmp.Diff(wantStatus, summary(s)); diff != "" {
			t.Errorf("PreFilter (-want,+got):\n%s", diff)
		}
		if diff := cmp.Diff(wantUsage, snapshot(e.pl)); diff != "" {
			t.Errorf("usage (-want,+got):\n%s", diff)
		}
	})
}

// TestRestartWithAppConflict: a running pod whose application is already
// held by another user is still charged (forced, as its own application),
// so nothing that runs goes uncounted.
func TestRestartWithAppConflict(t *testing.T) {
	a := userPod("a", "sue", "", "sandbox", "1")
	a.Labels[podmeta.LabelAppID] = "shared"
	b := userPod("b", "bob", "", "sandbox", "1")
	b.Labels[podmeta.LabelAppID] = "shared"
	e := newEnv(t, envOptions{config: sandboxConfig})
	e.bind(a)
	e.waitFor("a to be charged", func() bool { _, ok := e.pl.ledger.Get("uid-a"); return ok })
	e.bind(b)
	e.waitFor("b to be charged", func() bool { _, ok := e.pl.ledger.Get("uid-b"); return ok })
	r := map[string]int64{"cpu": 1000, "pods": 1}
	want := usage{
		Users:  map[string]map[string]map[string]int64{"sue": {"root": r, "root.sandbox": r}, "bob": {"root": r, "root.sandbox": r}},
		Groups: map[string]map[string]map[string]int64{},
		Queues: map[string]map[string]int64{"root": {"cpu": 2000, "pods": 2}, "root.sandbox": {"cpu": 2000, "pods": 2}},
		Apps:   map[string][]string{"sue": {"ns1/shared"}, "bob": {"ns1/pod:uid-b"}},
		Pods:   []string{"uid-a", "uid-b"},
	}
	if diff := cmp.Diff(want, snapshot(e.pl)); diff != "" {
		t.Errorf("usage (-want,+got):\n%s", diff)
	}
	e.delete(a)
	e.delete(b)
	e.barrier()
	if diff := cmp.Diff(emptyUsage(), snapshot(e.pl)); diff != "" {
		t.Errorf("usage after both are gone (-want,+got):\n%s", diff)
	}
}

// TestChargedOverLimitCounted: a bound pod the scheduler did not admit
// (found at start, bound by someone else, repaired by the audit) is
// charged whatever the limits say, and counted in
// userquota_charged_over_limit_total by source when the charge took its
// user, group or queue over a limit (sandboxConfig: sue 2 cpu, group dev
// 3 cpu, root.sandbox 4 cpu and 3 applications), by usage: room held for
// pods let in and not bound is no usage. Pods the scheduler admitted are
// not counted: they were checked.
func TestChargedOverLimitCounted(t *testing.T) {
	bound := func(p *v1.Pod) *v1.Pod {
		p.Spec.NodeName, p.Status.Phase = testNode, v1.PodRunning
		return p
	}
	for _, tc := range []struct {
		name string
		// atStart are bound before the plugin starts; scheduled go through
		// the scheduler and are then bound; admitted are let in
		// (PreEnqueue: room held, as a follower holds it for pods it never
		// binds) and stay pending; later are bound by someone else; audit
		// is charged by the audit's repair.
		atStart, scheduled, admitted, later []*v1.Pod
		audit                               *v1.Pod
		want                                map[string]float64 // by source
	}{
		{name: "within every limit",
			atStart: []*v1.Pod{bound(userPod("a", "sue", "", "sandbox", "1")), bound(userPod("b", "sue", "", "sandbox", "1"))}},
		{name: "over the user's limit", want: map[string]float64{metrics.SourceRunning: 1},
			atStart: []*v1.Pod{bound(userPod("a", "sue", "", "sandbox", "1500m")), bound(userPod("b", "sue", "", "sandbox", "1"))}},
		{name: "over the group's limit", want: map[string]float64{metrics.SourceRunning: 1},
			atStart: []*v1.Pod{bound(userPod("a", "ann", "dev", "sandbox", "2")), bound(userPod("b", "bob", "dev", "sandbox", "2"))}},
		{name: "over the queue's max", want: map[string]float64{metrics.SourceRunning: 1},
			atStart: []*v1.Pod{bound(userPod("a", "ann", "", "sandbox", "2")), bound(userPod("b", "bob", "", "sandbox", "2")), bound(userPod("c", "carl", "", "sandbox", "1"))}},
		{name: "over the queue's maxapplications", want: map[string]float64{metrics.SourceRunning: 1},
			atStart: []*v1.Pod{bound(userPod("a", "ann", "", "sandbox", "100m")), bound(userPod("b", "bob", "", "sandbox", "100m")),
				bound(userPod("c", "carl", "", "sandbox", "100m")), bound(userPod("d", "dan", "", "sandbox", "100m"))}},
		{name: "each pod over is counted", want: map[string]float64{metrics.SourceRunning: 2},
			atStart: []*v1.Pod{bound(userPod("a", "sue", "", "sandbox", "2")), bound(userPod("b", "sue", "", "sandbox", "1")), bound(userPod("c", "sue", "", "sandbox", "1"))}},
		{name: "no limit on the queue", atStart: []*v1.Pod{bound(userPod("a", "sue", "", "open", "50"))}},
		{name: "admitted by the scheduler: not counted",
			scheduled: []*v1.Pod{userPod("a", "sue", "", "sandbox", "1"), userPod("b", "sue", "", "sandbox", "1")}},
		{name: "bound by someone else beside admitted pods", want: map[string]float64{metrics.SourceRunning: 1},
			scheduled: []*v1.Pod{userPod("a", "sue", "", "sandbox", "2")},
			later:     []*v1.Pod{userPod("b", "sue", "", "sandbox", "1")}},
		{name: "bound by someone else within the limit",
			later: []*v1.Pod{userPod("a", "sue", "", "sandbox", "2")}},
		{name: "room held for admitted pods is no usage",
			admitted: []*v1.Pod{userPod("a", "sue", "", "sandbox", "1")},
			later:    []*v1.Pod{userPod("b", "sue", "", "sandbox", "2")}},
		{name: "repaired by the audit", want: map[string]float64{metrics.SourceAudit: 1},
			scheduled: []*v1.Pod{userPod("a", "sue", "", "sandbox", "2")},
			audit:     bound(userPod("b", "sue", "", "sandbox", "1"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			for _, p := range tc.atStart {
				objects = append(objects, p)
			}
			before := map[string]float64{}
			for _, s := range []string{metrics.SourceRunning, metrics.SourceAudit} {
				before[s] = chargedOverLimit(t, s)
			}
			e := newEnv(t, envOptions{config: sandboxConfig, objects: objects})
			for _, p := range tc.scheduled {
				e.mustSchedule(p)
				e.bind(p)
			}
			for _, p := range tc.admitted {
				e.pending(p)
				if s := e.pl.PreEnqueue(e.ctx, p); !s.IsSuccess() {
					t.Fatalf("PreEnqueue(%s) = %v, want let in", p.Name, s)
				}
			}
			for _, p := range tc.later {
				e.bind(p)
			}
			e.barrier()
			charged := append(append(append([]*v1.Pod{}, tc.atStart...), tc.scheduled...), tc.later...)
			if tc.audit != nil {
				if !e.pl.chargeRunning(klog.Background(), tc.audit, metrics.SourceAudit) {
					t.Fatalf("the audit's repair did not charge %s", tc.audit.Name)
				}
				charged = append(charged, tc.audit)
			}
			for _, p := range charged {
				if _, ok := e.pl.ledger.Get(string(p.UID)); !ok {
					t.Errorf("pod %s not charged", p.Name)
				}
			}
			got := map[string]float64{}
			for s, n := range before {
				if d := chargedOverLimit(t, s) - n; d != 0 {
					got[s] = d
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("userquota_charged_over_limit_total by source (-want,+got):\n%s", diff)
			}
		})
	}
}

// chargedOverLimit reads userquota_charged_over_limit_total{source}.
func chargedOverLimit(t *testing.T, source string) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "userquota_charged_over_limit_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == source {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
