package queueconfig

import (
	"reflect"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/resources"
)

const elasticTree = `partitions:
  - name: default
    queues:
      - name: root
        properties:
          quota.sharing: elastic
        queues:
          - name: a
            resources:
              guaranteed: {cpu: "25%", memory: 4Gi}
              max: {cpu: "50.5%"}
            properties:
              quota.weight: cpu=4,memory=8Gi
              quota.lend: "false"
          - name: b
            parent: true
            childtemplate:
              resources:
                max: {cpu: "10%"}
              properties:
                quota.lend: "true"
`

func TestSharingSettings(t *testing.T) {
	cfg := mustParse(t, elasticTree)
	p := cfg.Partition("default")
	cpu, mem := resources.Intern("cpu"), resources.Intern("memory")
	a := p.Queue("root.a")
	want := Sharing{
		Elastic:       true,
		GuaranteedPct: map[resources.ID]int64{cpu: 25 * PercentScale},
		MaxPct:        map[resources.ID]int64{cpu: 50500},
		Weight:        map[resources.ID]int64{cpu: 4000, mem: 8 << 30},
		NoLend:        true,
	}
	if !reflect.DeepEqual(a.Sharing, want) {
		t.Errorf("root.a sharing = %+v, want %+v", a.Sharing, want)
	}
	// Percentages are kept apart from the absolute entries.
	if got := a.Guaranteed.Map(); !reflect.DeepEqual(got, map[string]int64{"memory": 4 << 30}) {
		t.Errorf("root.a guaranteed = %v", got)
	}
	if len(a.Max) != 0 {
		t.Errorf("root.a max = %v, want none (its only entry is a percentage)", a.Max)
	}
	ct := p.Queue("root.b").ChildTemplate
	if !ct.Sharing.Elastic || ct.Sharing.MaxPct[cpu] != 10*PercentScale || ct.Sharing.NoLend {
		t.Errorf("root.b child template sharing = %+v", ct.Sharing)
	}
	if !p.Root.Sharing.Elastic {
		t.Error("root sets quota.sharing but is not elastic")
	}
	for _, n := range cfg.Notices {
		if strings.Contains(n, "guaranteed") || strings.Contains(n, "properties") {
			t.Errorf("elastic config has notice %q", n)
		}
	}

	plain := mustParse(t, underRoot("        submitacl: '*'\n        queues:\n          - name: x\n            resources: {guaranteed: {cpu: 1}}\n"))
	if x := plain.Partition("default").Queue("root.x"); x.Sharing.Elastic {
		t.Error("queue without quota.sharing is elastic")
	}
}

func TestSharingErrors(t *testing.T) {
	q := func(props, res string) string {
		return underRoot("        queues:\n          - name: a\n" +
			"            properties: {" + props + "}\n" +
			"            resources: {" + res + "}\n")
	}
	cases := []struct{ name, text, want string }{
		{"sharing value", q("quota.sharing: on", ""), `quota.sharing "on": the only value is "elastic"`},
		{"lend value", q("quota.lend: maybe", ""), `quota.lend "maybe": give true or false`},
		{"weight syntax", q("quota.weight: cpu", ""), `quota.weight "cpu": give resource=quantity pairs`},
		{"weight quantity", q("quota.weight: cpu=x", ""), `quota.weight "cpu=x": invalid quantity "x" for cpu`},
		{"weight twice", q(`quota.weight: "cpu=1,vcore=2"`, ""), `cpu is given twice`},
		{"percent not elastic", q("", `max: {cpu: "50%"}`), `percentage 50% of root.a needs quota.sharing: elastic`},
		{"percent zero", q("quota.sharing: elastic", `max: {cpu: "0%"}`), `percentage "0%" out of range`},
		{"percent above 100", q("quota.sharing: elastic", `max: {cpu: "100.001%"}`), `percentage "100.001%" out of range`},
		{"percent syntax", q("quota.sharing: elastic", `max: {cpu: "1Gi%"}`), `invalid percentage "1Gi%"`},
		{"percent twice", q("quota.sharing: elastic", `max: {cpu: "5%", vcore: 1}`), `cpu is given twice`},
		{"percent in a user limit", underRoot("        properties: {quota.sharing: elastic}\n        queues:\n          - name: a\n            limits:\n              - users: [sue]\n                maxresources: {cpu: \"10%\"}\n"),
			`a percentage "10%" is not allowed here`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustFail(t, tc.text, tc.want)
		})
	}
}
