package userquota

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
)

// elasticConfig shares the cluster between root.a and root.b, each
// guaranteed 2 cpu; sue may use 1 cpu in root.a.
var elasticConfig = queueconfigtest.Root(`
properties: {quota.sharing: elastic}
queues:
- name: a
  resources: {guaranteed: {vcore: 2}, max: {vcore: 10}}
  limits:
  - limit: sue
    users: [sue]
    maxresources: {vcore: 1}
- name: b
  resources: {guaranteed: {vcore: 2}, max: {vcore: 10}}
`)

func readyNode(name, cpuQty string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: v1.NodeStatus{
			Allocatable: rl("cpu", cpuQty, "pods", "110"),
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
}

// runtimeCPU is the cpu runtime share of queue in the table in force, or -1.
func runtimeCPU(pl *Plugin, queue string) int64 {
	s := pl.ugm.Shares().Get(queue)
	if s == nil {
		return -1
	}
	x, ok := s.Runtime.Get(resources.Intern("cpu"))
	if !ok {
		return -1
	}
	return x
}

// TestSharesFollowDemandAndCapacity: a queue borrows what an idle queue
// does not use, only up to its pending demand; the loan shrinks when the
// owner's pods arrive; a pod over its queue's share is refused with the
// reason and retried when the share grows; capacity follows nodes and
// other schedulers' pods.
func TestSharesFollowDemandAndCapacity(t *testing.T) {
	e := newEnv(t, envOptions{config: elasticConfig, objects: []runtime.Object{readyNode(testNode, "4")}})
	e.waitFor("the first share table", func() bool { return e.pl.ugm.Shares() != nil })

	// b holds its guaranteed 2 and asks for 1 more while a is idle.
	e.bind(userPod("b-run", "bob", "", "root.b", "2"))
	more := userPod("b-more", "bob", "", "root.b", "1")
	e.create(more)
	e.waitFor("b to borrow 1 cpu", func() bool { return runtimeCPU(e.pl, "root.b") == 3000 })
	state, s := e.preFilter(more)
	if !s.IsSuccess() {
		t.Fatalf("pod within b's share refused: %v", s)
	}
	if s := e.reserve(state, more); !s.IsSuccess() {
		t.Fatalf("reserve: %v", s)
	}

	// a's pods arrive: its demand takes its guaranteed back; b's next pod
	// no longer fits b's share.
	e.create(userPod("a-1", "ann", "", "root.a", "2"))
	e.waitFor("b's share to shrink to its guaranteed", func() bool { return runtimeCPU(e.pl, "root.b") == 2000 })
	next := userPod("b-next", "bob", "", "root.b", "1")
	e.create(next)
	_, s = e.preFilter(next)
	if s.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(s.Message(), "queue root.b is at its share: cpu 3+1 > 2 (guaranteed 2, nothing lent by other queues)") {
		t.Fatalf("pod over b's share: %v", s)
	}

	// a's pod goes away: b may borrow again and its refused pod is retried.
	e.activator.reset()
	e.delete(userPod("a-1", "ann", "", "root.a", "2"))
	e.waitFor("b-next to be activated", func() bool {
		for _, k := range e.activator.activated() {
			if k == "ns1/b-next" {
				return true
			}
		}
		return false
	})
	if got := runtimeCPU(e.pl, "root.b"); got != 4000 {
		t.Errorf("b's share with a idle = %d, want 4000", got)
	}
	// b-more is reserved (usage), not also pending: demand 3 + b-next 1.
	if got := e.pl.ugm.Shares().Get("root.b").Demand.Get(resources.Intern("cpu")); got != 4000 {
		t.Errorf("b's demand = %d, want 4000", got)
	}

	// A pod of another scheduler takes 1 cpu of the node: capacity 3,
	// below the guaranteed 4 in sum, so they are scaled, once, with an event.
	foreign := podOf("system").SchedulerName("default-scheduler").Req(cpu("1")).Obj()
	e.bind(foreign)
	e.waitFor("capacity to drop", func() bool { return len(e.pl.ugm.Shares().Scaled) == 1 })
	e.waitFor("the scaling event", func() bool { return len(e.recorder.list(ReasonSharesScaled)) == 1 })
	if ev := e.recorder.list(ReasonSharesScaled)[0]; !strings.Contains(ev.Note, "children of root add up to cpu 4000, above its share 3000") {
		t.Errorf("scaling event %q", ev.Note)
	}
}

// TestUserBoundPodsAreNotDemand: a pending pod over its user's limit does
// not count as demand; another pending pod of the same queue does.
func TestUserBoundPodsAreNotDemand(t *testing.T) {
	e := newEnv(t, envOptions{config: elasticConfig, objects: []runtime.Object{readyNode(testNode, "8")}})
	e.waitFor("the first share table", func() bool { return e.pl.ugm.Shares() != nil })
	big := userPod("sue-big", "sue", "", "root.a", "3")
	e.create(big)
	e.waitFor("sue's pod to count as demand", func() bool { return runtimeCPU(e.pl, "root.a") == 3000 })
	if _, s := e.preFilter(big); s.IsSuccess() || !strings.Contains(s.Message(), `user "sue"`) {
		t.Fatalf("sue's pod over her limit: %v", s)
	}
	e.waitFor("sue's pod to leave the demand", func() bool { return runtimeCPU(e.pl, "root.a") == 0 })
	e.create(userPod("ann-1", "ann", "", "root.a", "1"))
	e.waitFor("ann's pod to count", func() bool { return runtimeCPU(e.pl, "root.a") == 1000 })

	// A scheduling-gated pod is not demand until its gates are removed.
	gated := userPod("ann-gated", "ann", "", "root.a", "2")
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
	e.create(gated)
	e.create(userPod("ann-2", "ann", "", "root.a", "1"))
	e.waitFor("ann-2 to count", func() bool { return runtimeCPU(e.pl, "root.a") == 2000 })
	e.update(gated, func(p *v1.Pod) { p.Spec.SchedulingGates = nil })
	e.waitFor("the ungated pod to count", func() bool { return runtimeCPU(e.pl, "root.a") == 4000 })
}

// TestSharesOffWithoutElasticQueues: a config without quota.sharing keeps
// no table, so guaranteed never refuses a pod.
func TestSharesOffWithoutElasticQueues(t *testing.T) {
	e := newEnv(t, envOptions{config: strings.Replace(elasticConfig, "properties: {quota.sharing: elastic}", "submitacl: '*'", 1),
		objects: []runtime.Object{readyNode(testNode, "1")}})
	pod := userPod("b-big", "bob", "", "root.b", "5")
	e.create(pod)
	e.mustSchedule(pod)
	if e.pl.ugm.Shares() != nil {
		t.Error("share table in force without elastic queues")
	}
}

// TestForeignPodReplacedUnderItsName: an update whose sides are two pods of
// one name (deleted and created again across a relist) frees the old pod's
// room on the node; only the new pod's requests are taken off the capacity.
func TestForeignPodReplacedUnderItsName(t *testing.T) {
	e := newEnv(t, envOptions{config: elasticConfig, objects: []runtime.Object{readyNode(testNode, "8")}})
	capacityCPU := func() int64 {
		v, _ := e.pl.elastic.capacity.total().Get(resources.Intern("cpu"))
		return v
	}
	old := e.bind(podOf("system").SchedulerName("default-scheduler").Req(cpu("1")).Obj())
	e.waitFor("the foreign pod to take 1 cpu", func() bool { return capacityCPU() == 7000 })
	again := old.DeepCopy()
	again.UID = "uid-system-again"
	again.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("2")
	e.pl.onPodUpdate(klog.Background(), old, again)
	if got := capacityCPU(); got != 6000 {
		t.Errorf("capacity cpu = %d, want 6000 (8 minus the new pod's 2)", got)
	}
}
