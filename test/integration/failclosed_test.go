package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apipod "k8s.io/kubernetes/pkg/api/v1/pod"

	"github.com/userquota/userquota/pkg/plugins/userquota"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// sueTwoCPU limits sue to 2 cpu in root.default; sueThreeCPU to 3.
var (
	sueTwoCPU = queueconfigtest.Root(`
queues:
- name: default
  limits:
  - limit: sue
    users: [sue]
    maxresources: {vcore: 2}
`)
	sueThreeCPU = strings.Replace(sueTwoCPU, "{vcore: 2}", "{vcore: 3}", 1)
	// noDefaultPartition is valid but has only the partition gpu: the
	// scheduler enforces default.
	noDefaultPartition = strings.Replace(sueTwoCPU, "name: default\n  queues:\n  - name: root", "name: gpu\n  queues:\n  - name: root", 1)
)

// waitHeldFor waits until pod name is held by kind (its
// userquota.io/QuotaAdmitted reason is kind+"Limit") with a message that
// has every one of want, and returns the message. It fails at once if
// the pod binds.
func (c *cluster) waitHeldFor(name, kind string, want ...string) string {
	c.t.Helper()
	var msg string
	c.eventually(fmt.Sprintf("pod %s held by %s naming %q", name, kind, want), 30*time.Second, func() (bool, error) {
		p := c.getPod(name)
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("pod %s was bound to %s", name, p.Spec.NodeName)
		}
		_, cond := apipod.GetPodCondition(&p.Status, userquota.ConditionQuotaAdmitted)
		if cond == nil || cond.Status != v1.ConditionFalse || cond.Reason != kind+"Limit" {
			return false, nil
		}
		msg = cond.Message
		for _, w := range want {
			if !strings.Contains(msg, w) {
				return false, nil
			}
		}
		return true, nil
	})
	return msg
}

// TestFailClosedRestartWithInvalidConfig: a scheduler that starts while
// the queue-config ConfigMap exists but does not load (put there while
// the scheduler was down, or with the webhook off) runs no pod of ours
// without limits. It holds every one, sue's over her old limit and bob's
// without any, with a reason naming the ConfigMap, the key and the
// problem; a version without the scheduler's partition changes the
// reason; a valid version lets them in, and its limits apply. A bad
// version after that keeps the valid one in force. On the code before
// this test, sue-2 bound at once: no limits.
func TestFailClosedRestartWithInvalidConfig(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(sueTwoCPU)
	rs := c.startScheduler()
	c.createPod(podSpec{name: "sue-1", user: "sue", queue: "root.default", cpu: "1"})
	c.waitBound("sue-1", bindTimeout)
	rs.stop()

	c.setQueueConfig(badConfig)
	c.startScheduler()
	c.createPod(podSpec{name: "sue-2", user: "sue", queue: "root.default", cpu: "2"})
	c.createPod(podSpec{name: "bob-1", user: "bob", queue: "root.default", cpu: "1"})
	ref := fmt.Sprintf(`ConfigMap %s/%s, key %q: `, c.ns, userquota.DefaultConfigMapName, userquota.DefaultConfigMapKey)
	for _, name := range []string{"sue-2", "bob-1"} {
		msg := c.waitHeldFor(name, "Config", "no valid queue config is in force", ref,
			`line 7: partitions[0].queues[0].queues[0].name: invalid queue name "a b"`)
		t.Logf("%s held: %s", name, msg)
	}
	// The pod's PodScheduled says QuotaHeld, not Unschedulable: no
	// autoscaler buys a node for it.
	if _, cond := apipod.GetPodCondition(&c.getPod("bob-1").Status, v1.PodScheduled); cond == nil || cond.Reason != userquota.ReasonQuotaHeld {
		t.Errorf("bob-1 PodScheduled = %+v, want reason %s", cond, userquota.ReasonQuotaHeld)
	}

	c.setQueueConfig(noDefaultPartition)
	c.waitHeldFor("bob-1", "Config", ref, `no partition "default"`, `the config has "gpu"`)

	c.setQueueConfig(sueThreeCPU)
	c.waitBound("sue-2", bindTimeout)
	c.waitBound("bob-1", bindTimeout)
	c.createPod(podSpec{name: "sue-3", user: "sue", queue: "root.default", cpu: "1"})
	c.waitHeldFor("sue-3", "User", `user "sue" would exceed maxresources in root.default: cpu 3+1 > 3`)

	// Running, a bad version changes nothing: the valid config stays in
	// force (sue-3 held by it, not by the config), and pods are decided.
	c.setQueueConfig(badConfig)
	c.createPod(podSpec{name: "bob-2", user: "bob", queue: "root.default", cpu: "1"})
	c.waitBound("bob-2", bindTimeout)
	c.waitHeldFor("sue-3", "User", `cpu 3+1 > 3`)
}
