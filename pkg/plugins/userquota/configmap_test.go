package userquota

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/userquota/userquota/pkg/fairshare"
)

// roomierConfig is sandboxConfig with sue's limit raised to 3 cpu and a
// new leaf queue, newq.
var roomierConfig = strings.NewReplacer(
	"users: [sue]\n        maxresources: {vcore: 2}", "users: [sue]\n        maxresources: {vcore: 3}",
	"    - name: open\n", "    - name: open\n    - name: newq\n",
).Replace(sandboxConfig)

const cmRef = "*v1.ConfigMap " + DefaultConfigMapNamespace + "/" + DefaultConfigMapName

// refusedUnderSandbox sets up the scene the reload tests change: sue holds
// 2 cpu (her limit), sue-waits is refused for it and newq-waits for a
// queue the config does not have.
func refusedUnderSandbox(t *testing.T, e *env) (sueWaits, newqWaits *v1.Pod) {
	t.Helper()
	held := userPod("held", "sue", "", "sandbox", "2")
	e.mustSchedule(held)
	e.bind(held)
	sueWaits = userPod("sue-waits", "sue", "", "sandbox", "1")
	newqWaits = userPod("newq-waits", "bob", "", "newq", "1")
	for p, want := range map[*v1.Pod]string{
		sueWaits:  `user "sue" would exceed maxresources in root.sandbox: cpu 2+1 > 2`,
		newqWaits: `queue "newq" (from label userquota.io/queue) does not exist in the queue config`,
	} {
		e.pending(p)
		if _, s := e.preFilter(p); s.Message() != want {
			t.Fatalf("PreFilter(%s) = %v, want %q", p.Name, s, want)
		}
	}
	e.barrier()
	return sueWaits, newqWaits
}

// TestConfigReloadValid: a valid new version is put in force in one step;
// usage is kept, the refused pods are activated, and now fit.
func TestConfigReloadValid(t *testing.T) {
	e := newEnv(t, envOptions{config: sandboxConfig})
	sueWaits, newqWaits := refusedUnderSandbox(t, e)
	before := snapshot(e.pl)
	e.activator.reset()

	e.setConfig(roomierConfig)
	e.waitConfig(roomierConfig)
	e.waitFor("the refused pods to be activated", func() bool { return len(e.activator.activated()) == 2 })
	if diff := cmp.Diff([]string{"ns1/newq-waits", "ns1/sue-waits"}, e.activator.activated()); diff != "" {
		t.Errorf("activated (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(before, snapshot(e.pl)); diff != "" {
		t.Errorf("usage changed by the reload (-before,+after):\n%s", diff)
	}
	applied := e.recorder.list(ReasonConfigApplied)
	if len(applied) != 2 || applied[1].Regarding != cmRef || applied[1].Type != v1.EventTypeNormal {
		t.Errorf("QueueConfigApplied events = %+v, want one at start and one now, Normal, on %s", applied, cmRef)
	}
	for _, p := range []*v1.Pod{sueWaits, newqWaits} {
		if s := e.schedule(p); !s.IsSuccess() {
			t.Errorf("scheduling %s after the reload: %v", p.Name, s)
		}
	}
	if got := userUsage(e.pl, "sue")["cpu"]; got != 3000 {
		t.Errorf("sue's cpu = %d, want 3000", got)
	}
}

// TestConfigReloadUnchanged: a ConfigMap update that leaves the queue
// config as it was (a resync, another key) changes nothing and activates
// nothing.
func TestConfigReloadUnchanged(t *testing.T) {
	e := newEnv(t, envOptions{config: sandboxConfig})
	refusedUnderSandbox(t, e)
	e.activator.reset()
	cm := configMap(sandboxConfig)
	cm.Data["notes"] = "unrelated"
	e.writeConfigMap(cm)
	// Barrier on the ConfigMap informer: an invalid version after it.
	e.setConfig("partitions: [")
	e.waitFor("the InvalidQueueConfig event", func() bool { return len(e.recorder.list(ReasonInvalidConfig)) == 1 })
	if got := e.activator.activated(); len(got) != 0 {
		t.Errorf("activated %v on an unchanged config", got)
	}
	if n := len(e.recorder.list(ReasonConfigApplied)); n != 1 {
		t.Errorf("%d QueueConfigApplied events, want only the one at start", n)
	}
}

// TestConfigReloadInvalid: an invalid version changes nothing and raises a
// Warning event on the ConfigMap saying why.
func TestConfigReloadInvalid(t *testing.T) {
	tests := []struct {
		name string
		cm   func() *v1.ConfigMap
		// wantNote are substrings of the event's note.
		wantNote []string
	}{
		{
			name:     "malformed YAML",
			cm:       func() *v1.ConfigMap { return configMap("partitions: [\n") },
			wantNote: []string{`key "queues.yaml": line 1: invalid YAML`},
		},
		{
			name: "unknown key",
			cm: func() *v1.ConfigMap {
				return configMap(strings.Replace(roomierConfig, "- name: newq", "- name: newq\n      maxapps: 3", 1))
			},
			wantNote: []string{`unknown key "maxapps"`},
		},
		{
			name: "a user limit above the queue max",
			cm: func() *v1.ConfigMap {
				return configMap(strings.Replace(roomierConfig, "maxresources: {vcore: 3}", "maxresources: {vcore: 30}", 1))
			},
			wantNote: []string{`limit "sue" on root.sandbox: maxresources cpu 30 is above the queue's max cpu 4`},
		},
		{
			name: "the key is missing",
			cm: func() *v1.ConfigMap {
				cm := configMap("")
				cm.Data = map[string]string{"queue.yaml": roomierConfig}
				return cm
			},
			wantNote: []string{`key "queues.yaml": no such key (the ConfigMap has "queue.yaml")`},
		},
		{
			name: "the partition is missing",
			cm: func() *v1.ConfigMap {
				return configMap(strings.Replace(roomierConfig, "name: default\n  queues", "name: gpu\n  queues", 1))
			},
			wantNote: []string{`no partition "default"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{config: sandboxConfig})
			sueWaits, newqWaits := refusedUnderSandbox(t, e)
			before := snapshot(e.pl)
			checksum := e.pl.Config().Checksum
			e.activator.reset()

			e.writeConfigMap(tc.cm())
			e.waitFor("the InvalidQueueConfig event", func() bool { return len(e.recorder.list(ReasonInvalidConfig)) > 0 })
			evs := e.recorder.list(ReasonInvalidConfig)
			if len(evs) != 1 || evs[0].Type != v1.EventTypeWarning || evs[0].Regarding != cmRef {
				t.Fatalf("events = %+v, want one Warning InvalidQueueConfig on %s", evs, cmRef)
			}
			for _, s := range tc.wantNote {
				if !strings.Contains(evs[0].Note, s) {
					t.Errorf("event note %q does not say %q", evs[0].Note, s)
				}
			}
			if got := e.pl.Config().Checksum; got != checksum {
				t.Errorf("config in force changed to %s", got)
			}
			// The last good config is in force: pods are decided by it,
			// none is held for the config.
			if err := e.pl.held.configError(); err != nil {
				t.Errorf("pods held for the config while a valid one is in force: %v", err)
			}
			if s := e.pl.PreEnqueue(e.ctx, newqWaits); s.IsSuccess() || strings.Contains(s.Message(), "queue config is in force") {
				t.Errorf("PreEnqueue(%s) = %v, want held by the last good config", newqWaits.Name, s)
			}
			for _, p := range []*v1.Pod{sueWaits, newqWaits} {
				if _, s := e.preFilter(p); s.Code() != fwk.UnschedulableAndUnresolvable {
					t.Errorf("PreFilter(%s) = %v, want still refused", p.Name, s)
				}
			}
			if got := e.activator.activated(); len(got) != 0 {
				t.Errorf("activated %v on an invalid config", got)
			}
			if diff := cmp.Diff(before, snapshot(e.pl)); diff != "" {
				t.Errorf("usage changed (-before,+after):\n%s", diff)
			}
		})
	}
}

// TestConfigDeleted: deleting the ConfigMap keeps the last good config.
func TestConfigDeleted(t *testing.T) {
	tests := []struct {
		name   string
		delete func(e *env)
	}{
		{
			name: "delete event",
			delete: func(e *env) {
				if err := e.cs.CoreV1().ConfigMaps(DefaultConfigMapNamespace).Delete(e.ctx, DefaultConfigMapName, metav1.DeleteOptions{}); err != nil {
					e.t.Fatal(err)
				}
			},
		},
		{
			name: "tombstone",
			delete: func(e *env) {
				e.pl.onConfigMapDelete(klog.FromContext(e.ctx), cache.DeletedFinalStateUnknown{Key: "x", Obj: configMap(sandboxConfig)})
				e.pl.onConfigMapDelete(klog.FromContext(e.ctx), "not a ConfigMap")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{config: sandboxConfig})
			sueWaits, _ := refusedUnderSandbox(t, e)
			checksum := e.pl.Config().Checksum
			tc.delete(e)
			// Barrier on the ConfigMap informer: an invalid version
			// created after the delete.
			e.setConfig("partitions: [")
			e.waitFor("the InvalidQueueConfig event", func() bool { return len(e.recorder.list(ReasonInvalidConfig)) == 1 })
			if c := e.pl.Config(); c == nil || c.Checksum != checksum {
				t.Errorf("config in force = %v, want the last good one", c)
			}
			want := statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `user "sue" would exceed maxresources in root.sandbox: cpu 2+1 > 2`}
			_, s := e.preFilter(sueWaits)
			if diff := cmp.Diff(want, summary(s)); diff != "" {
				t.Errorf("PreFilter after the delete (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestConfigMissingAtStart: without the ConfigMap there are no limits but
// usage is tracked; when it appears its limits apply to new pods and the
// usage so far is kept.
func TestConfigMissingAtStart(t *testing.T) {
	running := userPod("running", "sue", "", "sandbox", "3")
	running.Spec.NodeName = testNode
	e := newEnv(t, envOptions{objects: []runtime.Object{running}})
	if c := e.pl.Config(); c != nil {
		t.Fatalf("config in force = %v, want none", c)
	}
	big := userPod("big", "sue", "", "sandbox", "10")
	e.mustSchedule(big)
	if diff := cmp.Diff(sueIn(13000, 2, []string{"ns1/pod/uid-big", "ns1/pod/uid-running"}, "uid-big", "uid-running"), snapshot(e.pl)); diff != "" {
		t.Errorf("usage without a config (-want,+got):\n%s", diff)
	}

	e.setConfig(sandboxConfig)
	e.waitConfig(sandboxConfig)
	want := statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `user "sue" would exceed maxresources in root.sandbox: cpu 13+100m > 2`}
	_, s := e.preFilter(userPod("small", "sue", "", "sandbox", "100m"))
	if diff := cmp.Diff(want, summary(s)); diff != "" {
		t.Errorf("PreFilter once the config exists (-want,+got):\n%s", diff)
	}
	if got := userUsage(e.pl, "sue")["cpu"]; got != 13000 {
		t.Errorf("sue's cpu = %d, want 13000 (usage kept)", got)
	}
}

// TestDecisionDuringReloadSeesOneConfig decides pods while the config
// flips between two versions that put the pod's leaf queue "x" in
// different places: placement by one version and limits by the other
// would refuse it ("does not exist in the queue config"). Every decision
// must see one version whole.
func TestDecisionDuringReloadSeesOneConfig(t *testing.T) {
	// root.default, and x as a leaf of parent p or of parent q.
	under := func(parent string) string {
		return fmt.Sprintf("partitions: [{name: default, queues: [{name: root, queues: [{name: default}, {name: %s, queues: [{name: x}]}]}]}]", parent)
	}
	underP, underQ := under("p"), under("q")
	e := newEnv(t, envOptions{config: underP})
	e.waitConfig(underP)
	logger := klog.FromContext(e.ctx)
	stop := make(chan struct{})
	flipped := make(chan int)
	go func() {
		n := 0
		defer func() { flipped <- n }()
		for {
			for _, y := range []string{underQ, underP} {
				select {
				case <-stop:
					return
				default:
				}
				cm := configMap(y)
				cm.ResourceVersion = fmt.Sprint(n)
				e.pl.onConfigMap(logger, cm)
				n++
			}
		}
	}()
	pod := userPod("p", "sue", "", "x", "100m")
	for i := 0; i < 3000; i++ {
		if _, s := e.pl.PreFilter(e.ctx, framework.NewCycleState(), pod, nil); !s.IsSuccess() {
			close(stop)
			t.Fatalf("decision %d refused the pod: %v", i, s.Message())
		}
	}
	close(stop)
	if n := <-flipped; n < 10 {
		t.Fatalf("only %d reloads happened during the decisions: the test proves nothing", n)
	}
}

// configRef is how a hold for the config names the plugin's ConfigMap and
// key.
const configRef = `ConfigMap ` + DefaultConfigMapNamespace + "/" + DefaultConfigMapName + `, key "` + DefaultConfigMapKey + `": `

// TestConfigInvalidAtStartHolds: a plugin that starts while the ConfigMap
// exists but does not load puts no config in force and holds every pod of
// ours, with or without limits on its queue (fail closed), with a reason
// naming the ConfigMap, the key and the problem, written to the pod's
// status once; a valid version lets them in.
func TestConfigInvalidAtStartHolds(t *testing.T) {
	tests := []struct {
		name string
		cm   *v1.ConfigMap
		// want is what the reason says of the problem.
		want string
	}{
		{
			name: "malformed YAML",
			cm:   configMap("partitions: [\n"),
			want: "line 1: invalid YAML",
		},
		{
			name: "the partition is missing",
			cm:   configMap(strings.Replace(sandboxConfig, "- name: default\n  queues:", "- name: gpu\n  queues:", 1)),
			want: `partitions: no partition "default", the partition the scheduler enforces (its partition argument); the config has "gpu"`,
		},
		{
			name: "the key is missing",
			cm: func() *v1.ConfigMap {
				cm := configMap("")
				cm.Data = map[string]string{"queue.yaml": sandboxConfig}
				return cm
			}(),
			want: `no such key (the ConfigMap has "queue.yaml")`,
		},
		{
			name: "a user limit above the queue max",
			cm:   configMap(strings.Replace(sandboxConfig, "maxresources: {vcore: 2}", "maxresources: {vcore: 20}", 1)),
			want: `maxresources cpu 20 is above the queue's max cpu 4`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{objects: []runtime.Object{tc.cm}})
			if c := e.pl.Config(); c != nil {
				t.Fatalf("config in force = %v, want none", c)
			}
			// sue's pod is under a limit of the valid config; bob's queue
			// has none: both wait.
			sue := userPod("sue-1", "sue", "", "sandbox", "1")
			bob := userPod("bob-1", "bob", "", "open", "1")
			var message string
			for _, p := range []*v1.Pod{sue, bob} {
				s := e.preEnqueue(p)
				if s.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(s.Message(), configRef) || !strings.Contains(s.Message(), tc.want) {
					t.Fatalf("PreEnqueue(%s) = %v, want held naming %q and %q", p.Name, s, configRef, tc.want)
				}
				message = s.Message()
			}
			if !strings.HasPrefix(message, "no valid queue config is in force") {
				t.Errorf("reason %q does not say that no config is in force", message)
			}
			e.waitFor("bob's status to say he is held for the config", func() bool {
				c := e.condition("bob-1", ConditionQuotaAdmitted)
				return c != nil && c.Status == v1.ConditionFalse && c.Reason == "ConfigLimit" && c.Message == message
			})
			if c := e.condition("bob-1", v1.PodScheduled); c == nil || c.Reason != ReasonQuotaHeld {
				t.Errorf("PodScheduled = %+v, want reason %s", c, ReasonQuotaHeld)
			}
			e.waitFor("one QuotaHeld event", func() bool { return len(e.heldEvents("bob-1")) == 1 })
			if ev := e.heldEvents("bob-1")[0]; len(ev) > 1024 || !strings.Contains(ev, "Config limit") {
				t.Errorf("QuotaHeld event %q: want the Config kind, at most 1 KiB", ev)
			}
			if got := e.pl.held.kinds()["Config"]; got != 2 {
				t.Errorf("%d pods held for the config, want 2", got)
			}

			e.activator.reset()
			e.setConfig(sandboxConfig)
			e.waitConfig(sandboxConfig)
			e.waitFor("both pods activated", func() bool { return len(e.activator.activated()) == 2 })
			for _, p := range []*v1.Pod{sue, bob} {
				if s := e.pl.PreEnqueue(e.ctx, p); !s.IsSuccess() {
					t.Errorf("PreEnqueue(%s) under the valid config = %v, want let in", p.Name, s)
				}
			}
			e.waitFor("bob told he was admitted", func() bool {
				c := e.condition("bob-1", ConditionQuotaAdmitted)
				return c != nil && c.Status == v1.ConditionTrue
			})
			// The valid config's limits are in force.
			want := statusOf{Code: fwk.UnschedulableAndUnresolvable,
				Message: `user "sue" would exceed maxresources in root.sandbox: cpu 1+2 > 2 (1 of it admitted, not running yet)`}
			if diff := cmp.Diff(want, summary(e.pl.PreEnqueue(e.ctx, userPod("sue-2", "sue", "", "sandbox", "2")))); diff != "" {
				t.Errorf("PreEnqueue(sue-2) under the valid config (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestConfigInvalidAgainRetellsHeld: while no config is in force, a second
// invalid version replaces the reason the held pods give (their status
// says the new problem) and lets none in.
func TestConfigInvalidAgainRetellsHeld(t *testing.T) {
	e := newEnv(t, envOptions{objects: []runtime.Object{configMap("partitions: [\n")}})
	pod := userPod("bob-1", "bob", "", "open", "1")
	if s := e.preEnqueue(pod); s.IsSuccess() {
		t.Fatal("PreEnqueue let a pod in without a config")
	}
	e.waitFor("the pod held for the YAML", func() bool {
		c := e.condition("bob-1", ConditionQuotaAdmitted)
		return c != nil && strings.Contains(c.Message, "invalid YAML")
	})
	e.activator.reset()
	e.setConfig(strings.Replace(sandboxConfig, "- name: default\n  queues:", "- name: gpu\n  queues:", 1))
	e.waitFor("the pod's status to name the missing partition", func() bool {
		c := e.condition("bob-1", ConditionQuotaAdmitted)
		return c != nil && c.Reason == "ConfigLimit" && strings.Contains(c.Message, configRef+`partitions: no partition "default"`)
	})
	if got := e.activator.activated(); len(got) != 0 {
		t.Errorf("activated %v on an invalid config", got)
	}
	if e.pl.Config() != nil {
		t.Error("a config is in force")
	}
}

// TestConfigNotHeldWithoutConfigMap: without the ConfigMap (a fresh
// install) nothing is held for the config: there are no limits, usage is
// tracked (docs/design.md, "Config"); a delete of a valid one keeps it
// (TestConfigDeleted).
func TestConfigNotHeldWithoutConfigMap(t *testing.T) {
	e := newEnv(t, envOptions{})
	if s := e.preEnqueue(userPod("bob-1", "bob", "", "open", "1")); !s.IsSuccess() {
		t.Errorf("PreEnqueue without a ConfigMap = %v, want let in", s)
	}
	if err := e.pl.held.configError(); err != nil {
		t.Errorf("held for the config: %v", err)
	}
}

// TestConfigReloadTurnsFairnessOn: without a fair queue the usage history
// records nothing; a reload that makes root.sandbox fair starts it from
// the pods that run (sue's 2 cpu of its 4: key 0.5), and one that takes
// fairness away stops it again.
func TestConfigReloadTurnsFairnessOn(t *testing.T) {
	e := newEnv(t, envOptions{config: sandboxConfig})
	held := userPod("held", "sue", "", "sandbox", "2")
	e.mustSchedule(held)
	e.bind(held)
	e.barrier()
	if e.pl.fair.Recording() || e.pl.fair.Len() != 0 {
		t.Fatalf("no fair queue, yet recording %v with %d histories", e.pl.fair.Recording(), e.pl.fair.Len())
	}
	fair := strings.Replace(sandboxConfig, "      maxapplications: 3\n", "      maxapplications: 3\n      properties: {userquota.fairness: user}\n", 1)
	e.setConfig(fair)
	e.waitConfig(fair)
	sue := fairshare.Key{Queue: "root.sandbox", Name: "sue"}
	if got := e.pl.fair.Key(sue); got != 0.5 {
		t.Errorf("sue's key after fairness came on: %v, want 0.5 (her running 2 cpu of 4)", got)
	}
	e.setConfig(sandboxConfig)
	e.waitConfig(sandboxConfig)
	if e.pl.fair.Recording() || e.pl.fair.Len() != 0 {
		t.Errorf("fairness off again, yet recording %v with %d histories", e.pl.fair.Recording(), e.pl.fair.Len())
	}
}
