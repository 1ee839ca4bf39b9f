package userquota

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/userquota/userquota/pkg/resources"
)

// TestCheckResize: the REST API's resize check (issue 20, point 2) answers
// for a running pod of sue's (2 cpu in root.sandbox) by the check an
// increase meets, growth only, with the scheduler's refusal text.
func TestCheckResize(t *testing.T) {
	e := newEnv(t, envOptions{config: sandboxConfig})
	p1 := userPod("p1", "sue", "", "sandbox", "1")
	e.bind(p1)
	e.waitFor("p1 charged", func() bool { _, ok := e.pl.ledger.Get("uid-p1"); return ok })
	resized := func(cpu string) *v1.Pod {
		p := p1.DeepCopy()
		p.Spec.NodeName = "node-1"
		p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpu)
		return p
	}
	for _, tc := range []struct {
		name          string
		pod           *v1.Pod
		charged, fits bool
		reason        string
	}{
		{name: "growth within sue's limit", pod: resized("2"), charged: true, fits: true},
		{name: "growth over sue's limit", pod: resized("2500m"), charged: true, reason: `user "sue" would exceed maxresources in root.sandbox: cpu 1+1500m > 2`},
		{name: "shrink", pod: resized("100m"), charged: true, fits: true},
		{name: "a hostile quantity", pod: func() *v1.Pod {
			p := resized("1")
			p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("1e100")
			return p
		}(), charged: true, reason: "out of range"},
		{name: "a pod not charged", pod: userPod("p2", "sue", "", "sandbox", "8"), fits: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.pl.checkResize(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if got.Pod != "ns1/"+tc.pod.Name || got.Charged != tc.charged || got.Fits != tc.fits {
				t.Errorf("answer %+v, want pod ns1/%s charged %v fits %v", got, tc.pod.Name, tc.charged, tc.fits)
			}
			if tc.reason != "" && !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("reason %q lacks %q", got.Reason, tc.reason)
			}
			if tc.fits && got.Reason != "" {
				t.Errorf("reason %q, want none", got.Reason)
			}
		})
	}
	// The check changed nothing.
	if c, _ := e.pl.ledger.Get("uid-p1"); c.Request.Resources.Get(resources.Intern("cpu")) != 1000 {
		t.Errorf("p1 charged %d millicpu after the checks, want 1000", c.Request.Resources.Get(resources.Intern("cpu")))
	}
}
