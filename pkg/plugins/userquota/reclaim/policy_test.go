package reclaim

import (
	"testing"
	"time"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

func TestPolicyFor(t *testing.T) {
	cfg := queueconfigtest.MustParse(t, queueconfigtest.Root(`
properties: {preemption.delay: 30s}
queues:
- name: off
  properties: {preemption.policy: disabled}
  queues:
  - name: inherits
  - name: overrides
    properties: {preemption.policy: default, preemption.delay: 0s}
- name: tenants
  properties: {preemption.policy: fence, preemption.delay: 10s}
  queues:
  - name: t1
    properties: {preemption.policy: fence}
  - name: t2
  - name: dyn
    parent: true
    childtemplate:
      properties: {preemption.policy: disabled, preemption.delay: 1m}
- name: plain
`)).Partition("default")
	for _, tc := range []struct {
		leaf string
		want Policy
	}{
		{"root.plain", Policy{Delay: 30 * time.Second, DelayFrom: "root"}},
		{"root.off.inherits", Policy{DisabledBy: "root.off", Delay: 30 * time.Second, DelayFrom: "root"}},
		{"root.off.overrides", Policy{DelayFrom: "root.off.overrides"}},
		{"root.tenants.t1", Policy{Fence: "root.tenants.t1", Delay: 10 * time.Second, DelayFrom: "root.tenants"}},
		{"root.tenants.t2", Policy{Fence: "root.tenants", Delay: 10 * time.Second, DelayFrom: "root.tenants"}},
		// A dynamic leaf takes its child template's settings.
		{"root.tenants.dyn.sue", Policy{DisabledBy: "root.tenants.dyn.sue", Fence: "root.tenants", Delay: time.Minute, DelayFrom: "root.tenants.dyn.sue"}},
	} {
		if got := PolicyFor(cfg, tc.leaf); got != tc.want {
			t.Errorf("PolicyFor(%s) = %+v, want %+v", tc.leaf, got, tc.want)
		}
	}
	if got := FenceFor(cfg, "root.tenants.t1"); got != "root.tenants.t1" {
		t.Errorf("FenceFor(t1) = %q", got)
	}
	if got := FenceFor(cfg, "root.plain"); got != "" {
		t.Errorf("FenceFor(plain) = %q", got)
	}
	if got := PolicyFor(nil, "root.a"); got != (Policy{}) {
		t.Errorf("no config: %+v", got)
	}
}
