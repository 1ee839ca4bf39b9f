package userquota

import (
	"testing"
	"time"
)

func TestPolicyFor(t *testing.T) {
	cfg := mustConfig(t, `
partitions:
- name: default
  queues:
  - name: root
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
`).Partition("default")
	for _, tc := range []struct {
		leaf string
		want queuePolicy
	}{
		{"root.plain", queuePolicy{delay: 30 * time.Second, delayFrom: "root"}},
		{"root.off.inherits", queuePolicy{disabledBy: "root.off", delay: 30 * time.Second, delayFrom: "root"}},
		{"root.off.overrides", queuePolicy{delayFrom: "root.off.overrides"}},
		{"root.tenants.t1", queuePolicy{fence: "root.tenants.t1", delay: 10 * time.Second, delayFrom: "root.tenants"}},
		{"root.tenants.t2", queuePolicy{fence: "root.tenants", delay: 10 * time.Second, delayFrom: "root.tenants"}},
		// A dynamic leaf takes its child template's settings.
		{"root.tenants.dyn.sue", queuePolicy{disabledBy: "root.tenants.dyn.sue", fence: "root.tenants", delay: time.Minute, delayFrom: "root.tenants.dyn.sue"}},
	} {
		if got := policyFor(cfg, tc.leaf); got != tc.want {
			t.Errorf("policyFor(%s) = %+v, want %+v", tc.leaf, got, tc.want)
		}
	}
	if got := fenceFor(cfg, "root.tenants.t1"); got != "root.tenants.t1" {
		t.Errorf("fenceFor(t1) = %q", got)
	}
	if got := fenceFor(cfg, "root.plain"); got != "" {
		t.Errorf("fenceFor(plain) = %q", got)
	}
	if got := policyFor(nil, "root.a"); got != (queuePolicy{}) {
		t.Errorf("no config: %+v", got)
	}
}
