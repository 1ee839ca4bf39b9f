package integration

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
)

// Issue 20, point 2: no skipping the scheduler (docs/security.md, "No
// skipping the scheduler"). A pod of ours that names its node at creation
// never meets the scheduler's quota check; the webhook refuses it.

// bobConfig limits bob to 1 cpu in root.default.
var bobConfig = queueconfigtest.Root(`
queues:
- name: default
  limits:
  - limit: bob
    users: [bob]
    maxresources: {vcore: 1}
`)

// noskipCluster is a cluster with the users of webhookTokens, the webhook
// registered from manifests/webhook-config.yaml, bobConfig and the
// scheduler.
func noskipCluster(t *testing.T) *cluster {
	t.Helper()
	c := webhookCluster(t, 2)
	c.setQueueConfig(bobConfig)
	c.startScheduler()
	return c
}

// TestNoSkipNodeName: bob, at his limit of 1 cpu, creates a pod of ours
// with spec.nodeName set. Before the fix it was created, ran on that node
// without the scheduler and was charged anyway: bob at 2 cpu over his 1.
// Now the webhook refuses it, naming the pod and why, and bob stays at 1.
func TestNoSkipNodeName(t *testing.T) {
	c := noskipCluster(t)
	bob := c.clientAs("bob-token")

	c.createAs(bob, podSpec{name: "bob-1", cpu: "1"})
	c.waitBound("bob-1", bindTimeout)

	p := c.makePod(podSpec{name: "bob-2", cpu: "1"})
	p.Spec.NodeName = "node-0"
	_, err := bob.CoreV1().Pods(c.ns).Create(c.ctx, p, metav1.CreateOptions{})
	if err == nil {
		// Give the scheduler the moment it needs to charge it, to show it.
		c.eventually("bob-2 charged", bindTimeout, func() (bool, error) {
			u := c.sched.userRoot("bob")
			return u != nil && u.ResourceUsage.Get(resources.Intern("cpu")) > 1000, nil
		})
		t.Fatalf("bob's pod naming node-0 was created and charged: bob uses %d millicpu, over his limit of 1 cpu",
			c.sched.userRoot("bob").ResourceUsage.Get(resources.Intern("cpu")))
	}
	t.Logf("refused: %v", err)
	for _, want := range []string{"Pod quota-test/bob-2", `spec.nodeName is set (to "node-0")`, "would skip userquota-scheduler and its quota check"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err.Error(), want)
		}
	}
	if _, err := c.client.CoreV1().Pods(c.ns).Get(c.ctx, "bob-2", metav1.GetOptions{}); err == nil {
		t.Error("bob-2 exists")
	}
	if got := c.sched.userRoot("bob").ResourceUsage.Get(resources.Intern("cpu")); got != 1000 {
		t.Errorf("bob is charged %d millicpu, want 1000", got)
	}

	// A trusted requester (the test's admin, as the controllers) may.
	p = c.makePod(podSpec{name: "admin-1", user: "bob", groups: []string{"ops"}, cpu: "1"})
	p.Spec.NodeName = "node-1"
	if _, err := c.client.CoreV1().Pods(c.ns).Create(c.ctx, p, metav1.CreateOptions{}); err != nil {
		t.Errorf("trusted requester's pod naming a node: %v", err)
	}
}
