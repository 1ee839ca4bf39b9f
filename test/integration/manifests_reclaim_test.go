package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestManifestsReclaim: the scheduler binary with only the manifests' RBAC
// and scheduler config (UserQuota's PostFilter in place of
// DefaultPreemption) takes a queue's guaranteed share back: it reads
// PodDisruptionBudgets, adds the DisruptionTarget condition to its victims
// (pods/status) and deletes them, without a request refused.
func TestManifestsReclaim(t *testing.T) {
	c := newCluster(t, 1, rbacAPIServer)
	m := c.installManifests()
	// The manifests' queue-config ConfigMap, with an elastic config.
	c.setQueueConfigIn(systemNamespace, elasticConfig)
	s := c.startSchedulerProcess("scheduler", m.schedulerConfigFor(t, nil), m.kubeconfig)
	c.eventually("the scheduler holds the Lease", 30*time.Second, func() (bool, error) {
		if bad := s.forbiddenLines(); bad != "" {
			return false, fmt.Errorf("refused requests (a permission missing from manifests/rbac.yaml?):\n%s", bad)
		}
		return c.leaseHolder() != "", nil
	})
	k := c.startKubelet()
	for i := 0; i < 8; i++ {
		n := fmt.Sprintf("b-%d", i)
		c.createReclaimPod(reclaimPod{name: n, user: "bob", queue: "root.b"})
		c.waitBound(n, 30*time.Second)
	}
	for i := 0; i < 2; i++ {
		c.createReclaimPod(reclaimPod{name: fmt.Sprintf("a-%d", i), user: "ann", queue: "root.a"})
	}
	for i := 0; i < 2; i++ {
		c.waitBound(fmt.Sprintf("a-%d", i), reclaimPodTimeout)
	}
	if got := strings.Join(k.preempted(), ","); got != "b-6,b-7" {
		t.Errorf("preempted %s, want b's two youngest", got)
	}
	c.eventually("the Preempted events", 15*time.Second, func() (bool, error) { return c.hasEvent(c.ns, "Preempted"), nil })
	s.requireNoForbidden(t)
}
