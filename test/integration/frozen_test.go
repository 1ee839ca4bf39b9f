package integration

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// Issue 20, point 3: labels are read once (docs/security.md, "Labels are
// read once"). The webhook behind the real API server with
// manifests/webhook-config.yaml refuses a change of the queue, application
// id or preemptible labels of a bound pod of ours, to its owner and to a
// trusted requester (the test's admin) alike, because a scheduler that
// starts charges the running pods it finds by what they carry.

// frozenConfig limits sue to 2 cpu in root.a; root.other has no limit.
var frozenConfig = queueconfigtest.Root(`
submitacl: "*"
queues:
- name: a
  limits:
  - limit: sue
    users: [sue]
    maxresources: {vcore: 2}
- name: other
`)

// frozenCluster is a cluster with the users of webhookTokens, the webhook
// registered and config in force; the scheduler is not started.
func frozenCluster(t *testing.T, nodes int, config string) *cluster {
	t.Helper()
	c := webhookCluster(t, nodes)
	c.setQueueConfig(config)
	return c
}

// relabel merge-patches the pod's labels as client; nil values remove.
func (c *cluster) relabel(client kubernetes.Interface, name string, labels map[string]any) error {
	b := fmt.Sprintf(`{"metadata":{"labels":%s}}`, labelsJSON(c.t, labels))
	_, err := client.CoreV1().Pods(c.ns).Patch(c.ctx, name, types.MergePatchType, []byte(b), metav1.PatchOptions{})
	return err
}

func labelsJSON(t *testing.T, v map[string]any) string {
	t.Helper()
	var parts []string
	for k, x := range v {
		if x == nil {
			parts = append(parts, fmt.Sprintf("%q:null", k))
		} else {
			parts = append(parts, fmt.Sprintf("%q:%q", k, x))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// chargedQueue is the queue the running scheduler charges the pod to, ""
// when it charges nothing for it.
func (c *cluster) chargedQueue(p *v1.Pod) string {
	ch, ok := c.sched.plugin.Ledger().Get(string(p.UID))
	if !ok {
		return ""
	}
	return ch.Request.Queue
}

// TestFrozenRelabelRestart: sue's pod runs in root.a at her limit of 2
// cpu. Moving it to root.other by any queue key (ours, YuniKorn's, the
// label queue), or changing its application id, is refused, to sue and to
// the admin (trusted); after a scheduler restart it is still charged to
// root.a, so sue's next pod there is held. A pod not bound yet may be
// relabelled, and runs where its new label says. Before the fix, the
// relabel went through and the restarted scheduler charged the pod to
// root.other, letting sue run 4 cpu in root.a.
func TestFrozenRelabelRestart(t *testing.T) {
	c := frozenCluster(t, 1, frozenConfig)
	c.startScheduler()
	sue := c.clientAs("sue-token")
	p := c.createAs(sue, podSpec{name: "sue-a", queue: "root.a", cpu: "2"})
	c.waitBound("sue-a", bindTimeout)
	if q := c.chargedQueue(p); q != "root.a" {
		t.Fatalf("sue-a charged to %q, want root.a", q)
	}

	for _, tc := range []struct {
		who    string
		client kubernetes.Interface
		labels map[string]any
		want   string
	}{
		{"sue", sue, map[string]any{podmeta.LabelQueue: "root.other"}, `label userquota.io/queue from "root.a" to "root.other"`},
		{"admin", c.client, map[string]any{podmeta.LabelQueue: "root.other"}, `label userquota.io/queue from "root.a" to "root.other"`},
		{"sue", sue, map[string]any{podmeta.LabelQueue: nil, podmeta.YuniKornQueue: "root.other"}, `label yunikorn.apache.org/queue from (absent) to "root.other"`},
		{"sue", sue, map[string]any{podmeta.LabelQueue: nil, "queue": "root.other"}, `label queue from (absent) to "root.other"`},
		{"sue", sue, map[string]any{podmeta.LabelAppID: "renamed"}, `label userquota.io/app-id from (absent) to "renamed"`},
	} {
		err := c.relabel(tc.client, "sue-a", tc.labels)
		if err == nil {
			t.Errorf("%s relabelling bound pod sue-a with %v: allowed, want refused", tc.who, tc.labels)
			continue
		}
		t.Logf("%s relabelling %v: %v", tc.who, tc.labels, err)
		for _, w := range []string{"Pod " + c.ns + "/sue-a is bound to node node-0", tc.want, "charged where it was admitted"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s relabelling %v: err = %v, want it to contain %q", tc.who, tc.labels, err, w)
			}
		}
	}
	p = c.getPod("sue-a")
	t.Logf("after the relabels sue-a carries %v", p.Labels)

	// A restart charges the running pod by what it carries now.
	c.sched.stop()
	c.startScheduler()
	c.eventually("sue-a charged again", bindTimeout, func() (bool, error) { return c.chargedQueue(p) != "", nil })
	if q := c.chargedQueue(p); q != "root.a" {
		t.Errorf("after a restart sue-a (labels %v) is charged to %s, want root.a: its usage moved", p.Labels, q)
	}
	c.createAs(sue, podSpec{name: "sue-a2", queue: "root.a", cpu: "1"})
	// Before the fix this bound: sue ran 3 cpu in root.a, over her 2.
	t.Logf("sue's next pod in root.a: %s", c.waitHeldFor("sue-a2", "User", "root.a", "cpu 2+1 > 2"))

	// Not bound yet: the scheduler reads the labels when it admits it.
	if err := c.relabel(sue, "sue-a2", map[string]any{podmeta.LabelQueue: "root.other"}); err != nil {
		t.Fatalf("relabelling the held pod sue-a2: %v, want allowed", err)
	}
	c.waitBound("sue-a2", bindTimeout)
	if q := c.chargedQueue(c.getPod("sue-a2")); q != "root.other" {
		t.Errorf("sue-a2, relabelled before it was bound, charged to %q, want root.other", q)
	}
}

// TestFrozenPreemptibleAfterBorrowing: bob's pods in root.b borrow a's
// guaranteed share of the one node; marking them
// userquota.io/preemptible=false then is refused (to bob and to the
// admin), so sue's pods in root.a take the share back by reclaim. Before
// the fix the label went through, and sue's pods stayed pending: no pod
// of bob's could be a victim.
func TestFrozenPreemptibleAfterBorrowing(t *testing.T) {
	c := frozenCluster(t, 1, elasticConfig) // a and b: guaranteed 16 cpu each; the node has 32
	c.startScheduler()
	c.startKubelet()
	bob := c.clientAs("bob-token")
	for i := 0; i < 8; i++ {
		n := fmt.Sprintf("b-%d", i)
		c.createAs(bob, podSpec{name: n, queue: "root.b", cpu: "4"})
		c.waitBound(n, bindTimeout)
	}
	for i := 0; i < 8; i++ {
		n := fmt.Sprintf("b-%d", i)
		client := bob
		if i%2 == 1 {
			client = c.client
		}
		err := c.relabel(client, n, map[string]any{podmeta.LabelPreemptible: "false"})
		if err == nil {
			t.Errorf("%s marked non-preemptible after borrowing: allowed, want refused", n)
			continue
		}
		for _, w := range []string{"Pod " + c.ns + "/" + n + " is bound", `label userquota.io/preemptible from (absent) to "false"`, "charged where it was admitted"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want it to contain %q", n, err, w)
			}
		}
	}

	sue := c.clientAs("sue-token")
	for i := 0; i < 4; i++ {
		c.createAs(sue, podSpec{name: fmt.Sprintf("a-%d", i), queue: "root.a", cpu: "4"})
	}
	c.eventually("sue's 4 pods in root.a bound by reclaim", reclaimPodTimeout, func() (bool, error) {
		return len(c.boundPods("a-")) == 4, nil
	})
	if got := len(c.boundPods("b-")); got != 4 {
		t.Errorf("bob has %d pods bound, want 4 (his guaranteed 16 cpu)", got)
	}
}
