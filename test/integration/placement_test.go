package integration

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// TestStockConfigDynamicQueues: with YuniKorn's stock config, pods in two
// namespaces land in two queues created on first use, the wildcard user
// limit on root binds across both, and the queues go once their pods have.
func TestStockConfigDynamicQueues(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(queueconfigtest.StockWithUserLimit(t))
	rs := c.startScheduler()
	for _, ns := range []string{"team-a", "team-b"} {
		c.createNamespace(ns)
	}

	c.createPodIn("team-a", podSpec{name: "a1", user: "alice", cpu: "1"})
	c.waitBoundIn("team-a", "a1", bindTimeout)
	c.createPodIn("team-b", podSpec{name: "b1", user: "alice", cpu: "1"})
	c.waitBoundIn("team-b", "b1", bindTimeout)
	// A queue label does not override the rule: bob lands in root.team-a.
	c.createPodIn("team-a", podSpec{name: "bob1", user: "bob", queue: "root.elsewhere", cpu: "1"})
	c.waitBoundIn("team-a", "bob1", bindTimeout)

	c.eventually("root.team-a and root.team-b in the queue snapshot", 5*time.Second, func() (bool, error) {
		return strings.Join(dynamicQueues(rs), ",") == "root.team-a,root.team-b", nil
	})
	for ns, pods := range map[string][]string{"team-a": {"a1", "bob1"}, "team-b": {"b1"}} {
		for _, name := range pods {
			ch, ok := rs.plugin.Ledger().Get(string(c.podIn(ns, name).UID))
			if !ok || ch.Request.Queue != "root."+ns {
				t.Errorf("%s/%s charged to %+v (live %v), want root.%s", ns, name, ch.Request, ok, ns)
			}
		}
	}

	// alice holds 1 cpu in each queue: the root limit refuses a third.
	c.createPodIn("team-b", podSpec{name: "b2", user: "alice", cpu: "1"})
	msg := c.waitRefusedIn("team-b", "b2", `user "alice" would exceed maxresources in root: cpu 2+1 > 2`)
	t.Logf("refusal as the user sees it: %s", msg)

	c.deletePodIn("team-b", "b2")
	for ns, pods := range map[string][]string{"team-a": {"a1", "bob1"}, "team-b": {"b1"}} {
		for _, name := range pods {
			c.deletePodIn(ns, name)
		}
	}
	c.eventually("the dynamic queues to disappear", 15*time.Second, func() (bool, error) {
		return len(dynamicQueues(rs)) == 0, nil
	})
}

// dynamicQueues lists the queues below root the running plugin holds: with
// the stock config every one of them was created by the placement rule.
func dynamicQueues(rs *runningScheduler) []string {
	var out []string
	for _, q := range rs.plugin.Ledger().Manager().Queues().Children {
		out = append(out, q.QueuePath)
	}
	sort.Strings(out)
	return out
}

// createNamespace creates a namespace for the test's pods.
func (c *cluster) createNamespace(name string) {
	c.t.Helper()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.client.CoreV1().Namespaces().Create(c.ctx, ns, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// createPodIn is createPod in namespace ns.
func (c *cluster) createPodIn(ns string, ps podSpec) *v1.Pod {
	c.t.Helper()
	pod := c.makePod(ps)
	pod.Namespace = ns
	p, err := c.client.CoreV1().Pods(ns).Create(c.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

func (c *cluster) podIn(ns, name string) *v1.Pod {
	c.t.Helper()
	p, err := c.client.CoreV1().Pods(ns).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

// waitBoundIn is waitBound in namespace ns.
func (c *cluster) waitBoundIn(ns, name string, timeout time.Duration) {
	c.t.Helper()
	c.eventually("pod "+ns+"/"+name+" bound", timeout, func() (bool, error) {
		return c.podIn(ns, name).Spec.NodeName != "", nil
	})
}

// waitRefusedIn is waitRefused in namespace ns.
func (c *cluster) waitRefusedIn(ns, name, want string) string {
	c.t.Helper()
	var msg string
	c.eventually(fmt.Sprintf("pod %s/%s refused with %q", ns, name, want), 30*time.Second, func() (bool, error) {
		p := c.podIn(ns, name)
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("pod %s/%s was bound to %s", ns, name, p.Spec.NodeName)
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse {
				msg = cond.Message
				return strings.Contains(msg, want), nil
			}
		}
		return false, nil
	})
	return msg
}

// deletePodIn is deletePod in namespace ns.
func (c *cluster) deletePodIn(ns, name string) {
	c.t.Helper()
	zero := int64(0)
	if err := c.client.CoreV1().Pods(ns).Delete(c.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		c.t.Fatal(err)
	}
}
