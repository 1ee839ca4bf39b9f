package integration

import (
	"net"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/webhook"
)

// freeAddress is a loopback address with a port free a moment ago.
func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// resizeCPU resizes the pod's container c to cpu through pods/resize, as
// client.
func (c *cluster) resizeCPU(client kubernetes.Interface, name, cpu string) error {
	p := c.getPod(name)
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	_, err := client.CoreV1().Pods(c.ns).UpdateResize(c.ctx, name, p, metav1.UpdateOptions{})
	return err
}

// TestNoSkipResize (issue 20, point 2): bob's running pod of 500m cpu,
// under his limit of 1 cpu, resized in place (pods/resize) to 2 cpu. The
// scheduler cannot refuse a running pod and charges a resize anyway; before
// the fix the resize was accepted and bob charged 2000 millicpu. Now the
// webhook (resize.userquota.io of manifests/webhook-config.yaml) asks the
// scheduler's REST API and refuses it with the scheduler's reason; a
// resize to 1 cpu, which fits, goes through; with the scheduler down a
// resize is refused (fail closed).
func TestNoSkipResize(t *testing.T) {
	c := tokenCluster(t, 2)
	restAddr := freeAddress(t)
	cfg := webhookConfig(t, c.ns)
	check, err := webhook.SchedulerResizeChecker("http://"+restAddr, "default", "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ResizeCheck = check
	url, caPEM := c.serveWebhook(cfg)
	c.registerWebhooks(url, caPEM)
	c.setQueueConfig(bobConfig)
	c.startSchedulerWith(map[string]any{"restAddress": restAddr, "restAuth": false})
	bob := c.clientAs("bob-token")
	cpu := func() int64 { return c.sched.userRoot("bob").ResourceUsage.Get(resources.Intern("cpu")) }

	c.createAs(bob, podSpec{name: "bob-1", cpu: "500m"})
	c.waitBound("bob-1", bindTimeout)

	// Over the limit: refused with the scheduler's reason.
	var refusal error
	c.eventually("the resize to 2 cpu answered by the scheduler", bindTimeout, func() (bool, error) {
		refusal = c.resizeCPU(bob, "bob-1", "2")
		// The REST API starts with the scheduler: until it serves, the
		// webhook refuses as "did not answer".
		return refusal == nil || !strings.Contains(refusal.Error(), "did not answer"), nil
	})
	if refusal == nil {
		c.eventually("the resize charged", bindTimeout, func() (bool, error) { return cpu() > 1000, nil })
		t.Fatalf("bob's resize of bob-1 to 2 cpu was accepted and charged: bob uses %d millicpu, over his limit of 1 cpu", cpu())
	}
	t.Logf("refused: %v", refusal)
	for _, want := range []string{`admission webhook "resize.userquota.io" denied the request`, "Pod quota-test/bob-1: this resize would take it over its quota", "bob"} {
		if !strings.Contains(refusal.Error(), want) {
			t.Errorf("refusal %q lacks %q", refusal, want)
		}
	}
	if got := c.getPod("bob-1").Spec.Containers[0].Resources.Requests.Cpu().MilliValue(); got != 500 {
		t.Errorf("bob-1 requests %d millicpu after the refusal, want 500", got)
	}

	// Within the limit: allowed, and charged.
	if err := c.resizeCPU(bob, "bob-1", "1"); err != nil {
		t.Fatalf("resize to 1 cpu (bob's limit): %v", err)
	}
	c.eventually("the resize to 1 cpu charged", bindTimeout, func() (bool, error) { return cpu() == 1000, nil })

	// The scheduler down: refused, not let through.
	c.sched.stop()
	err = c.resizeCPU(bob, "bob-1", "2")
	if err == nil || !strings.Contains(err.Error(), "the scheduler did not answer") {
		t.Fatalf("resize with the scheduler down: err = %v, want refused (fail closed)", err)
	}
	t.Logf("scheduler down: %v", err)
}
