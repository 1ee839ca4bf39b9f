package queueconfig

import (
	"strings"
	"testing"
	"time"
)

func TestPreemptionSettings(t *testing.T) {
	cfg := mustParse(t, `partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: tenants
            properties:
              preemption.policy: Fence
              preemption.delay: 10s
            queues:
              - name: t1
                properties: {preemption.policy: disabled}
              - name: t2
                properties: {preemption.delay: "0s"}
          - name: dyn
            parent: true
            childtemplate:
              properties: {preemption.policy: default, preemption.delay: 1m30s}
          - name: plain
`)
	p := cfg.Partition("default")
	for _, tc := range []struct {
		path string
		want Preemption
	}{
		{"root.tenants", Preemption{Policy: PolicyFence, Delay: 10 * time.Second, DelaySet: true}},
		{"root.tenants.t1", Preemption{Policy: PolicyDisabled}},
		{"root.tenants.t2", Preemption{DelaySet: true}},
		{"root.plain", Preemption{}},
	} {
		if got := p.Queue(tc.path).Preemption; got != tc.want {
			t.Errorf("%s: preemption = %+v, want %+v", tc.path, got, tc.want)
		}
	}
	if got, want := p.Queue("root.dyn").ChildTemplate.Preemption, (Preemption{Policy: PolicyDefault, Delay: 90 * time.Second, DelaySet: true}); got != want {
		t.Errorf("child template preemption = %+v, want %+v", got, want)
	}
	// Acted on, so not reported as accepted-but-ignored.
	for _, n := range cfg.Notices {
		if strings.Contains(n, "properties") {
			t.Errorf("notice for acted-on properties: %s", n)
		}
	}
}

func TestPreemptionPropertyErrors(t *testing.T) {
	for _, tc := range []struct {
		name, props, want string
	}{
		{"unknown policy", `{preemption.policy: never}`, `preemption.policy "never": give default, fence or disabled`},
		{"delay without unit", `{preemption.delay: "30"}`, `preemption.delay "30": give a duration with a unit, such as 30s, 2m or 1h30m`},
		{"negative delay", `{preemption.delay: -5s}`, `preemption.delay "-5s": a delay cannot be negative`},
		{"huge delay", `{preemption.delay: 48h}`, `preemption.delay "48h": at most 24h`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := mustFail(t, underRoot("        queues:\n          - name: a\n            properties: "+tc.props+"\n"), tc.want)
			if !strings.Contains(errs.Error(), "partitions[0].queues[0].queues[0].properties") {
				t.Errorf("error does not name where: %v", errs)
			}
		})
	}
	// In a child template too.
	mustFail(t, underRoot("        queues:\n          - name: p\n            parent: true\n            childtemplate:\n              properties: {preemption.policy: fenced}\n"),
		`preemption.policy "fenced": give default, fence or disabled`)
}
