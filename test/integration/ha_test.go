package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// haConfig limits alice to 2 cpu and the group dev to 4 cpu in root.team.
var haConfig = queueconfigtest.Root(`
queues:
- name: default
- name: team
  limits:
  - limit: alice
    users: [alice]
    maxresources: {vcore: 2}
  - limit: dev
    groups: [dev]
    maxresources: {vcore: 4}
`)

// haLeaderElection shortens leader election for the test: a killed leader's
// Lease expires after 2 s (the production config keeps the defaults, 15 s).
var haLeaderElection = map[string]any{
	"leaseDuration": "2s",
	"renewDeadline": "1s",
	"retryPeriod":   "250ms",
}

// TestLeaderFailover runs two scheduler processes with leader election, as
// the Deployment's two replicas, with the manifests' RBAC and config. With
// pods running, the leader is killed (SIGKILL: it cannot release the
// Lease); the other takes the Lease and schedules with the same usage, which
// it tracked from its informers as a follower: a user and a group at their
// limits before the kill stay refused after it, a pod within the limits is
// bound, and a release admits exactly one waiting pod.
func TestLeaderFailover(t *testing.T) {
	c := newCluster(t, 2, rbacAPIServer)
	m := c.installManifests()
	c.setQueueConfigIn(systemNamespace, haConfig)
	config := m.schedulerConfigFor(t, haLeaderElection)
	a := c.startSchedulerProcess("a", config, m.kubeconfig)
	b := c.startSchedulerProcess("b", config, m.kubeconfig)

	leader, follower := c.waitLeader(a, b)
	oldHolder := c.leaseHolder()
	t.Logf("leader %s (%s), follower %s", leader.Name, oldHolder, follower.Name)
	// The follower's informers and handlers have synced: it is tracking usage.
	c.eventually("follower ready", 30*time.Second, func() (bool, error) {
		code, _, err := follower.request("/readyz", "")
		return err == nil && code == http.StatusOK, nil
	})

	for _, ps := range []podSpec{
		{name: "a1", user: "alice", groups: []string{"dev"}, queue: "root.team", cpu: "1"},
		{name: "a2", user: "alice", groups: []string{"dev"}, queue: "root.team", cpu: "1"},
		{name: "b1", user: "bob", groups: []string{"dev"}, queue: "root.team", cpu: "1"},
	} {
		c.createPod(ps)
		c.waitBound(ps.name, bindTimeout)
		c.setRunning(ps.name)
	}
	c.createPod(podSpec{name: "a3", user: "alice", groups: []string{"dev"}, queue: "root.team", cpu: "1"})
	c.waitRefused("a3", `user "alice" would exceed maxresources in root.team: cpu 2+1 > 2`)
	usageBefore := c.restUsage(leader, m, "")
	if usageBefore != nil {
		// Both replicas run on one host, so both see their host in the
		// Lease's holder: the follower knows it follows from its own
		// leader elector. It answers 503, and its own usage on ?local=true.
		if code, body := c.restGet(follower, m, "/ws/v1/partition/default/usage/users"); code != http.StatusServiceUnavailable ||
			!strings.Contains(string(body), "this replica's leader elector") {
			t.Fatalf("the follower's usage: %d %.300s, want 503 saying its leader elector does not hold the Lease; its log:\n%s", code, body, follower.LogTail(40))
		}
		c.eventually("the follower's own usage (?local=true) equals the leader's", 15*time.Second, func() (bool, error) {
			return fmt.Sprint(c.restUsage(follower, m, "?local=true")) == fmt.Sprint(usageBefore), nil
		})
		t.Logf("the follower answers 503, and its own usage (REST, ?local=true) equals the leader's before the kill")
	}

	start := time.Now()
	leader.Kill()
	c.eventually("the follower takes the Lease", 30*time.Second, func() (bool, error) {
		if !follower.Running() {
			return false, fmt.Errorf("the follower exited:\n%s", follower.LogTail(30))
		}
		h := c.leaseHolder()
		return h != "" && h != oldHolder && follower.acquiredLease(), nil
	})
	t.Logf("failover: the follower holds the Lease %.1fs after the leader was killed", time.Since(start).Seconds())

	if usageBefore != nil {
		var usageAfter map[string]string
		c.eventually("the new leader's REST usage equals the old leader's", 15*time.Second, func() (bool, error) {
			usageAfter = c.restUsage(follower, m, "")
			return fmt.Sprint(usageAfter) == fmt.Sprint(usageBefore), nil
		})
		t.Logf("the new leader's usage (REST) equals the old leader's")
	}

	// The usage of the pods bound before the kill holds on the new leader.
	c.createPod(podSpec{name: "a4", user: "alice", groups: []string{"dev"}, queue: "root.team", cpu: "1"})
	c.waitRefused("a4", `user "alice" would exceed maxresources in root.team: cpu 2+1 > 2`)
	c.createPod(podSpec{name: "c1", user: "carol", groups: []string{"dev"}, queue: "root.team", cpu: "1"})
	c.waitBound("c1", bindTimeout)
	c.createPod(podSpec{name: "c2", user: "carol", groups: []string{"dev"}, queue: "root.team", cpu: "1"})
	c.waitRefused("c2", `group "dev" would exceed maxresources in root.team: cpu 4+1 > 4`)
	c.stillPending("a3", time.Second)

	// A release on the new leader admits exactly one of the waiting pods
	// (alice's a3 or a4 within her 2 cpu, or carol's c2 within dev's 4).
	c.finishPod("a1")
	var nowBound []string
	c.eventually("one waiting pod bound after a1 finished", bindTimeout, func() (bool, error) {
		nowBound = c.boundOf("a3", "a4", "c2")
		return len(nowBound) > 0, nil
	})
	time.Sleep(time.Second)
	if got := c.boundOf("a3", "a4", "c2"); len(got) != 1 {
		t.Fatalf("bound after a1 finished: %v, want exactly one of a3, a4, c2", got)
	}
	t.Logf("after a1 finished: %v bound", nowBound)
	follower.requireNoForbidden(t)
	leader.requireNoForbidden(t)
}

// waitLeader waits until one of the processes holds the Lease and returns
// it and the other.
func (c *cluster) waitLeader(a, b *schedulerProcess) (leader, follower *schedulerProcess) {
	c.t.Helper()
	c.eventually("a leader", 30*time.Second, func() (bool, error) {
		if c.leaseHolder() == "" {
			return false, nil
		}
		switch {
		case a.acquiredLease() && b.acquiredLease():
			return false, fmt.Errorf("both processes say they acquired the Lease")
		case a.acquiredLease():
			leader, follower = a, b
		case b.acquiredLease():
			leader, follower = b, a
		default:
			return false, nil
		}
		return true, nil
	})
	return leader, follower
}

// setRunning sets the pod's phase to Running, as its kubelet would.
func (c *cluster) setRunning(name string) {
	c.t.Helper()
	p := c.getPod(name)
	p.Status.Phase = v1.PodRunning
	if _, err := c.client.CoreV1().Pods(c.ns).UpdateStatus(c.ctx, p, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// boundOf returns which of the named pods are bound.
func (c *cluster) boundOf(names ...string) []string {
	var out []string
	for _, n := range names {
		if c.getPod(n).Spec.NodeName != "" {
			out = append(out, n)
		}
	}
	return out
}

// restUsage reads users, groups and queues from a scheduler's usage REST
// API (pkg/rest, served by the UserQuota plugin on args.restAddress) as a
// user allowed to would, with query appended. It returns nil when the
// scheduler serves no REST API, or answers that it is not the leader; then
// the test compares usage through behaviour only.
func (c *cluster) restUsage(p *schedulerProcess, m *installed, query string) map[string]string {
	c.t.Helper()
	out := map[string]string{}
	for _, kind := range []string{"users", "groups", "queues"} {
		path := fmt.Sprintf("/ws/v1/partition/default/usage/%s", kind)
		code, body := c.restGet(p, m, path+query)
		switch code {
		case 0:
			c.t.Logf("scheduler %s serves no REST API on %d: usage compared through behaviour only", p.Name, p.restPort)
			return nil
		case http.StatusServiceUnavailable:
			c.t.Logf("scheduler %s REST %s: %.200s", p.Name, path, body)
			return nil
		case http.StatusOK:
		default:
			c.t.Fatalf("scheduler %s REST %s: status %d: %.300s", p.Name, path, code, body)
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			c.t.Fatalf("scheduler %s REST %s: %v", p.Name, path, err)
		}
		canonical, _ := json.Marshal(v)
		out[kind] = string(canonical)
	}
	return out
}

// restGet GETs path from a scheduler's REST API (HTTPS, else HTTP) with
// the usage reader's token; code 0 means nothing serves the port.
func (c *cluster) restGet(p *schedulerProcess, m *installed, path string) (int, []byte) {
	c.t.Helper()
	if m.restToken == "" {
		m.restToken = c.readerToken("usage-reader", "/", "/ws/v1/*")
	}
	return c.restGetAs(p, path, m.restToken)
}
