package queueconfig

import (
	"reflect"
	"testing"
	"time"

	"github.com/userquota/userquota/pkg/resources"
)

func TestFairnessSettings(t *testing.T) {
	cfg := mustParse(t, underRoot(`        submitacl: '*'
        queues:
          - name: batch
            resources:
              max: {vcore: 10, memory: 0, nvidia.com/gpu: 4}
            properties:
              userquota.fairness: " User "
              userquota.fairness.halflife: 24h
              userquota.fairness.weights: "alice=2, bob=0.5,*=1.5"
            queues:
              - name: small
              - name: own
                resources: {guaranteed: {vcore: 2}}
                properties: {userquota.fairness: GROUP}
              - name: none
                properties: {userquota.fairness: "off"}
          - name: plain
          - name: tmpl
            parent: true
            childtemplate:
              resources: {max: {memory: 8Gi}}
              properties: {userquota.fairness: group, userquota.fairness.halflife: 90m}
`))
	p := cfg.Partition("default")
	// The keys are ours: no notice names them. (guaranteed outside an
	// elastic subtree is still not enforced as a share.)
	wantNotices := []string{"partitions[0].queues[0].queues[0].queues[1].resources.guaranteed: " + noticeGuaranteed}
	if !reflect.DeepEqual(cfg.Notices, wantNotices) {
		t.Errorf("notices %q, want %q", cfg.Notices, wantNotices)
	}
	cpu, mem, gpu := resources.Intern("cpu"), resources.Intern("memory"), resources.Intern("nvidia.com/gpu")
	var base resources.Vector
	base.Set(cpu, 10000)
	base.Set(gpu, 4)
	want := Fairness{Mode: FairnessUser, HalfLife: 24 * time.Hour, Weights: map[string]float64{"alice": 2, "bob": 0.5, "*": 1.5}, Base: base}
	if got := p.Queue("root.batch").Fairness; !reflect.DeepEqual(got, want) {
		t.Errorf("root.batch: %+v, want %+v (memory 0 is no base)", got, want)
	}
	for _, tc := range []struct {
		leaf, queue, mode string
		halfLife          time.Duration
	}{
		{"root.batch.small", "root.batch", FairnessUser, 24 * time.Hour},
		{"root.batch", "root.batch", FairnessUser, 24 * time.Hour},
		{"root.batch.own", "root.batch.own", FairnessGroup, 0},
		{"root.batch.none", "", "", 0},
		{"root.plain", "", "", 0},
		{"root.tmpl.dyn", "root.tmpl.dyn", FairnessGroup, 90 * time.Minute},
		{"root.nosuch", "", "", 0},
	} {
		queue, f := FairnessFor(p, tc.leaf)
		mode, hl := "", time.Duration(0)
		if f != nil {
			mode, hl = f.Mode, f.HalfLife
		}
		if queue != tc.queue || mode != tc.mode || hl != tc.halfLife {
			t.Errorf("FairnessFor(%s) = %q %q %v, want %q %q %v", tc.leaf, queue, mode, hl, tc.queue, tc.mode, tc.halfLife)
		}
	}
	if _, f := FairnessFor(p, "root.tmpl.dyn"); f == nil || f.Base.Get(mem) != 8<<30 {
		t.Errorf("the template's fairness is measured against its max: %+v", f)
	}
	if _, f := FairnessFor(p, "root.batch.own"); f == nil || f.Base.Get(cpu) != 2000 {
		t.Errorf("without a max, against guaranteed: %+v", f)
	}
	f := p.Queue("root.batch").Fairness
	for name, w := range map[string]float64{"alice": 2, "bob": 0.5, "carol": 1.5} {
		if got := f.Weight(name); got != w {
			t.Errorf("Weight(%s) = %v, want %v", name, got, w)
		}
	}
	if got := (&Fairness{Mode: FairnessUser}).Weight("x"); got != 1 {
		t.Errorf("default weight %v, want 1", got)
	}
	if q, f := FairnessFor(nil, "root.a"); q != "" || f != nil {
		t.Errorf("without a partition: %q %v", q, f)
	}
}

// TestFairnessErrors: bad input is a config error naming the queue and
// the key (issue 21).
func TestFairnessErrors(t *testing.T) {
	for _, tc := range []struct {
		name, queues, want string
	}{
		{
			name:   "unknown mode",
			queues: "          - name: a\n            resources: {max: {vcore: 4}}\n            properties: {userquota.fairness: users}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].properties["userquota.fairness"]: userquota.fairness "users" on root.a: give user, group or off`,
		},
		{
			name:   "zero half-life",
			queues: "          - name: a\n            resources: {max: {vcore: 4}}\n            properties: {userquota.fairness: user, userquota.fairness.halflife: 0s}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].properties["userquota.fairness.halflife"]: userquota.fairness.halflife "0s" on root.a: a half-life must be above 0 (leave the key out for no decay)`,
		},
		{
			name:   "negative half-life",
			queues: "          - name: a\n            resources: {max: {vcore: 4}}\n            properties: {userquota.fairness: user, userquota.fairness.halflife: -1h}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].properties["userquota.fairness.halflife"]: userquota.fairness.halflife "-1h" on root.a: a half-life must be above 0 (leave the key out for no decay)`,
		},
		{
			name:   "half-life without a unit",
			queues: "          - name: a\n            resources: {max: {vcore: 4}}\n            properties: {userquota.fairness: user, userquota.fairness.halflife: \"24\"}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].properties["userquota.fairness.halflife"]: userquota.fairness.halflife "24" on root.a: give a duration with a unit, such as 24h or 90m`,
		},
		{
			name:   "half-life over a year",
			queues: "          - name: a\n            resources: {max: {vcore: 4}}\n            properties: {userquota.fairness: user, userquota.fairness.halflife: 9000h}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].properties["userquota.fairness.halflife"]: userquota.fairness.halflife "9000h" on root.a: at most 8760h (a year)`,
		},
		{
			name:   "zero weight",
			queues: "          - name: a\n            resources: {max: {vcore: 4}}\n            properties: {userquota.fairness: group, userquota.fairness.weights: \"dev=0\"}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].properties["userquota.fairness.weights"]: userquota.fairness.weights "dev=0" on root.a: weight "0" of "dev" must be above 0`,
		},
		{
			name:   "negative weight",
			queues: "          - name: a\n            resources: {max: {vcore: 4}}\n            properties: {userquota.fairness: user, userquota.fairness.weights: \"sue=1,bob=-2\"}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].properties["userquota.fairness.weights"]: userquota.fairness.weights "sue=1,bob=-2" on root.a: weight "-2" of "bob" must be above 0`,
		},
		{
			name:   "weight not a number",
			queues: "          - name: a\n            resources: {max: {vcore: 4}}\n            properties: {userquota.fairness: user, userquota.fairness.weights: \"sue=NaN\"}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].properties["userquota.fairness.weights"]: userquota.fairness.weights "sue=NaN" on root.a: weight "NaN" of "sue" is not a number`,
		},
		{
			name:   "weights not pairs",
			queues: "          - name: a\n            resources: {max: {vcore: 4}}\n            properties: {userquota.fairness: user, userquota.fairness.weights: \"sue\"}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].properties["userquota.fairness.weights"]: userquota.fairness.weights "sue" on root.a: give name=weight pairs separated by commas, such as alice=2,bob=0.5`,
		},
		{
			name:   "a name twice",
			queues: "          - name: a\n            resources: {max: {vcore: 4}}\n            properties: {userquota.fairness: user, userquota.fairness.weights: \"sue=1,sue=2\"}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].properties["userquota.fairness.weights"]: userquota.fairness.weights "sue=1,sue=2" on root.a: "sue" is given twice`,
		},
		{
			name:   "half-life without fairness",
			queues: "          - name: a\n            resources: {max: {vcore: 4}}\n            properties: {userquota.fairness.halflife: 24h}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].properties["userquota.fairness.halflife"]: userquota.fairness.halflife on root.a: set it beside userquota.fairness: user or group on the same queue`,
		},
		{
			name:   "weights beside off",
			queues: "          - name: a\n            properties: {userquota.fairness: \"off\", userquota.fairness.weights: \"a=1\"}\n",
			want:   `line 7: partitions[0].queues[0].queues[0].properties["userquota.fairness.weights"]: userquota.fairness.weights on root.a: set it beside userquota.fairness: user or group on the same queue`,
		},
		{
			name:   "no max or guaranteed",
			queues: "          - name: a\n            properties: {userquota.fairness: user}\n",
			want:   `line 7: partitions[0].queues[0].queues[0].properties["userquota.fairness"]: userquota.fairness: user on root.a needs resources.max or resources.guaranteed with an amount above 0 to measure each user's share against (percentages are not read here)`,
		},
		{
			name:   "only zeros",
			queues: "          - name: a\n            resources: {max: {vcore: 0}}\n            properties: {userquota.fairness: group}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].properties["userquota.fairness"]: userquota.fairness: group on root.a needs resources.max or resources.guaranteed with an amount above 0 to measure each group's share against (percentages are not read here)`,
		},
		{
			name:   "in a child template without max",
			queues: "          - name: p\n            parent: true\n            childtemplate:\n              properties: {userquota.fairness: user}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].childtemplate.properties["userquota.fairness"]: userquota.fairness: user on root.p child template needs resources.max or resources.guaranteed with an amount above 0 to measure each user's share against (percentages are not read here)`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := mustFail(t, underRoot("        queues:\n"+tc.queues), tc.want)
			if got := errs.Strings(); len(got) != 1 || got[0] != tc.want {
				t.Errorf("errors:\n%q\nwant exactly\n%q", got, tc.want)
			}
		})
	}
	// Root has no resources: fairness there has nothing to measure against.
	mustFail(t, "partitions:\n  - name: default\n    queues:\n      - name: root\n        properties: {userquota.fairness: user}\n",
		`line 5: partitions[0].queues[0].properties["userquota.fairness"]: userquota.fairness: user on root needs resources.max or resources.guaranteed with an amount above 0 to measure each user's share against (percentages are not read here)`)
}

// TestFairnessUnknownKeyNoticed: a misspelt key of ours is named.
func TestFairnessUnknownKeyNoticed(t *testing.T) {
	cfg := mustParse(t, underRoot("        submitacl: '*'\n        queues:\n          - name: a\n            properties: {userquota.fairnes: user}\n"))
	want := []string{`partitions[0].queues[0].queues[0].properties["userquota.fairnes"]: userquota.fairnes on root.a: ` + noticeUnknownProperty}
	if !reflect.DeepEqual(cfg.Notices, want) {
		t.Errorf("notices %q, want %q", cfg.Notices, want)
	}
}
