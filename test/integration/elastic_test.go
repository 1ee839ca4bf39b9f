package integration

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/userquota/userquota/pkg/resources"
)

// elasticConfig shares the cluster (one 32-cpu node) between root.a and
// root.b, each guaranteed half of it, each allowed more than all of it.
const elasticConfig = `
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
      resources: {guaranteed: {vcore: 16}, max: {vcore: 40}}
`

// TestElasticBorrowAndGiveBack: b borrows the whole cluster while a is
// idle; when a's pods arrive, b's share shrinks to its guaranteed and b's
// new pods are refused with the share in the reason; as b's pods finish,
// a's pods (which do not preempt) are bound up to a's guaranteed.
func TestElasticBorrowAndGiveBack(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(elasticConfig)
	c.startScheduler()

	for i := 0; i < 8; i++ {
		n := fmt.Sprintf("b-%d", i)
		c.createPod(podSpec{name: n, user: "bob", queue: "root.b", cpu: "4"})
	}
	for i := 0; i < 8; i++ {
		c.waitBound(fmt.Sprintf("b-%d", i), bindTimeout)
	}

	// a asks for its guaranteed: the node is full, so a's pods wait for
	// room, and b may not grow further. (They do not preempt here, to see
	// the loan come back as b's pods finish; reclaim_test.go has them
	// take it back.)
	never := v1.PreemptNever
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "no-preemption"}, PreemptionPolicy: &never}
	if _, err := c.client.SchedulingV1().PriorityClasses().Create(c.ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		p := c.makePod(podSpec{name: fmt.Sprintf("a-%d", i), user: "ann", queue: "root.a", cpu: "4"})
		p.Spec.PriorityClassName = pc.Name
		c.createPodObject(p)
	}
	c.createPod(podSpec{name: "b-more", user: "bob", queue: "root.b", cpu: "4"})
	msg := c.waitRefused("b-more", "queue root.b is at its share: cpu 32+4 > 16 (guaranteed 16, nothing lent by other queues)")
	t.Logf("refusal as the user sees it: %s", msg)

	// b's pods finish one by one; each frees room for one of a's.
	for i := 0; i < 4; i++ {
		c.finishPod(fmt.Sprintf("b-%d", i))
	}
	for i := 0; i < 4; i++ {
		c.waitBound(fmt.Sprintf("a-%d", i), bindTimeout)
	}
	// b is back at its guaranteed: b-more still does not fit its share. It
	// was held by it all along: its status says so as written when the
	// share last changed (usage is not rewritten on every release).
	c.waitRefused("b-more", "queue root.b is at its share: cpu 32+4 > 16")
	if got := c.sched.userRoot("bob").ResourceUsage.Get(resources.Intern("cpu")); got != 16000 {
		t.Errorf("bob uses %d millicores, want 16000", got)
	}
	c.stillPending("b-more", 2e9)
}
