package queueconfig

import (
	"reflect"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/resources"
)

func TestUnknownKeyHasLineAndPath(t *testing.T) {
	errs := mustFail(t, `partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: a
            maxapps: 3
`)
	want := Error{Line: 7, Path: "partitions[0].queues[0].queues[0].maxapps",
		Msg: `unknown key "maxapps" in a queue (known keys: name, parent, resources, maxapplications, properties, adminacl, submitacl, childtemplate, queues, limits)`}
	if !reflect.DeepEqual(errs.List, []Error{want}) {
		t.Fatalf("got %#v\nwant %#v", errs.List, want)
	}
	if got := errs.Error(); !strings.HasPrefix(got, "line 7: partitions[0].queues[0].queues[0].maxapps: unknown key") {
		t.Errorf("Error() = %q", got)
	}
}

func TestStrictKeys(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"top level", "partitions: []\nqueues: []\n", `line 2: queues: unknown key "queues" in the queue config`},
		{"partition", "partitions:\n  - name: default\n    statedumpfilepath: /tmp/x\n    queues: [{name: root}]\n",
			`line 3: partitions[0].statedumpfilepath: unknown key "statedumpfilepath" in a partition`},
		{"limit", underRoot("        limits:\n          - users: [sue]\n            maxapps: 1\n"),
			`line 7: partitions[0].queues[0].limits[0].maxapps: unknown key "maxapps" in a limit`},
		{"resources", underRoot("        queues:\n          - name: a\n            resources: {min: {memory: 1}}\n"),
			`line 7: partitions[0].queues[0].queues[0].resources.min: unknown key "min" in queue resources`},
		{"case matters", underRoot("        Queues: []\n"), `unknown key "Queues"`},
		{"rule", "partitions:\n  - queues: [{name: root}]\n    placementrules:\n      - name: fixed\n        vaule: root.a\n",
			`line 5: partitions[0].placementrules[0].vaule: unknown key "vaule" in a placement rule`},
		{"filter", "partitions:\n  - queues: [{name: root}]\n    placementrules:\n      - name: user\n        filter: {kind: allow}\n",
			`partitions[0].placementrules[0].filter.kind: unknown key "kind" in a placement rule filter`},
		{"preemption", "partitions:\n  - queues: [{name: root}]\n    preemption: {policy: fence}\n",
			`partitions[0].preemption.policy: unknown key "policy" in preemption`},
		{"child template", underRoot("        childtemplate: {maxapps: 3}\n"),
			`partitions[0].queues[0].childtemplate.maxapps: unknown key "maxapps" in a child template`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { mustFail(t, c.text, c.want) })
	}
}

func TestWrongKinds(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"document is a string", "hello\n", `line 1: expected a mapping (the queue config), got the string "hello"`},
		{"partitions not a list", "partitions: {name: default}\n", `line 1: partitions: expected a list (partitions), got a mapping`},
		{"partition is a string", "partitions:\n  - oops\n", `line 2: partitions[0]: expected a mapping (a partition), got the string "oops"`},
		{"queues is a string", "partitions:\n  - name: default\n    queues: root\n", `line 3: partitions[0].queues: expected a list (queues), got the string "root"`},
		{"name is a list", underRoot("        queues:\n          - name: [a]\n"), `line 6: partitions[0].queues[0].queues[0].name: expected a string, got a list`},
		{"maxapplications is text", underRoot("        maxapplications: ten\n"), `line 5: partitions[0].queues[0].maxapplications: expected a whole number from 0 to 18446744073709551615, got the string "ten"`},
		{"maxapplications is negative", underRoot("        maxapplications: -1\n"), `maxapplications: expected a whole number from 0 to 18446744073709551615, got the number -1`},
		{"maxapplications is a fraction", underRoot("        maxapplications: 2.5\n"), `got the number 2.5`},
		{"parent is not a bool", underRoot("        queues:\n          - name: a\n            parent: maybe\n"), `parent: expected true or false, got the string "maybe"`},
		{"users is a string", underRoot("        limits:\n          - users: sue\n            maxapplications: 1\n"), `line 6: partitions[0].queues[0].limits[0].users: expected a list (user names), got the string "sue"`},
		{"max is a list", underRoot("        queues:\n          - name: a\n            resources: {max: [1]}\n"), `resources.max: expected a mapping of resource names to quantities (maximum resources), got a list`},
		{"quantity is a mapping", underRoot("        queues:\n          - name: a\n            resources: {max: {memory: {a: 1}}}\n"), `resources.max.memory: expected a string, got a mapping`},
		{"properties is a list", underRoot("        properties: [a]\n"), `properties: expected a mapping (queue properties), got a list`},
		{"weight is text", "partitions:\n  - queues: [{name: root}]\n    nodesortpolicy: {type: fair, resourceweights: {vcore: high}}\n", `resourceweights.vcore: expected a finite number, got the string "high"`},
		{"limits is a mapping", underRoot("        limits: {users: [sue]}\n"), `limits: expected a list (limits), got a mapping`},
		{"limit is a string", underRoot("        limits: [sue]\n"), `limits[0]: expected a mapping (a limit), got the string "sue"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { mustFail(t, c.text, c.want) })
	}
}

func TestErrorsAreCollectedInDocumentOrder(t *testing.T) {
	errs := mustFail(t, `partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: a
            limits:
              - users: ["*", sue]
                maxapplications: 1
          - name: b
            colour: blue
            resources:
              max: {memory: 12X}
`)
	var lines []int
	for _, e := range errs.List {
		lines = append(lines, e.Line)
	}
	if !reflect.DeepEqual(lines, []int{8, 11, 13}) {
		t.Fatalf("want errors on lines 8, 11, 13 in order, got:\n%v", errs)
	}
	want := `line 13: partitions[0].queues[0].queues[1].resources.max.memory: invalid quantity "12X"`
	if errs.List[2].Error() != want {
		t.Errorf("got %q\nwant %q", errs.List[2].Error(), want)
	}
	if n := len(strings.Split(errs.Error(), "\n")); n != 3 {
		t.Errorf("Error() has %d lines, want one per error", n)
	}
	if got := errs.Strings(); len(got) != 3 || got[2] != want {
		t.Errorf("Strings() = %q", got)
	}
}

func TestNoPartitions(t *testing.T) {
	for name, text := range map[string]string{
		"empty":         "",
		"comments only": "# nothing here\n",
		"empty list":    "partitions: []\n",
		"null":          "partitions:\n",
		"only checksum": "checksum: abc\n",
	} {
		t.Run(name, func(t *testing.T) { mustFail(t, text, "no partitions defined") })
	}
}

func TestYAMLSyntaxError(t *testing.T) {
	errs := mustFail(t, "partitions:\n  - name: default\n    queues: [a\n", "invalid YAML")
	if errs.List[0].Line == 0 {
		t.Errorf("syntax error without a line: %v", errs)
	}
	mustFail(t, "partitions:\n\t- name: x\n", "invalid YAML")
}

func TestDuplicateKey(t *testing.T) {
	mustFail(t, underRoot("        maxapplications: 1\n        maxapplications: 2\n"),
		`line 6: partitions[0].queues[0].maxapplications: key "maxapplications" is given twice (first at line 5)`)
	mustFail(t, underRoot("        queues:\n          - name: a\n            resources: {max: {memory: 1, memory: 2}}\n"),
		`key "memory" is given twice`)
}

func TestSecondDocument(t *testing.T) {
	mustFail(t, underRoot("")+"---\npartitions: []\n", "a second YAML document starts here")
	// A lone trailing separator is not a second document.
	mustParse(t, underRoot("")+"---\n")
}

func TestNullMeansNotSet(t *testing.T) {
	cfg := mustParse(t, `partitions:
  - name:
    placementrules:
    limits:
    preemption:
    nodesortpolicy:
    usergroupresolver:
    queues:
      - name: root
        parent:
        resources:
        maxapplications:
        properties:
        adminacl:
        childtemplate:
        limits:
        queues:
          - name: a
            resources: {max: , guaranteed: }
`)
	p := cfg.Partitions[0]
	if p.Name != "default" || len(p.PlacementRules) != 0 || p.Preemption.Enabled != nil {
		t.Errorf("partition: %+v", p)
	}
	a := p.Queue("root.a")
	if a == nil || a.Max != nil || a.Guaranteed != nil || a.ChildTemplate != nil || p.Root.ChildTemplate != nil {
		t.Errorf("queue a: %+v", a)
	}
	if len(cfg.Notices) != 1 || !strings.HasSuffix(cfg.Notices[0], noticeNoACL) {
		t.Errorf("null keys gave notices (want only the one about submitacl): %q", cfg.Notices)
	}
}

func TestYAMLFeatures(t *testing.T) {
	// Anchors, aliases and merge keys work as in yaml.v3; yes/no are
	// booleans for a boolean key; any scalar is a string for a string key.
	cfg := mustParse(t, `partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: 123
            parent: yes
            maxapplications: 0x10
            resources:
              max: &big {memory: 10Gi, vcore: 10}
            limits:
              - &sue
                limit: sue
                users: [sue]
                maxresources: {memory: 1Gi}
            queues:
              - name: leaf
                maxapplications: 8
                resources:
                  max:
                    <<: *big
                    memory: 5Gi
                limits:
                  - *sue
`)
	q := cfg.Partitions[0].Queue("root.123")
	if q == nil || !q.IsParent || q.MaxApplications != 16 {
		t.Fatalf("queue root.123: %+v", q)
	}
	leaf := cfg.Partitions[0].Queue("root.123.leaf")
	if got := leaf.Max.String(); got != "cpu=10,memory=5Gi" {
		t.Errorf("merged max = %s", got)
	}
	if len(leaf.Limits) != 1 || leaf.Limits[0].Users[0] != "sue" {
		t.Errorf("aliased limit: %+v", leaf.Limits)
	}
}

func TestAliasLoops(t *testing.T) {
	// An alias inside the node it refers to would expand forever.
	mustFail(t, "partitions: &p\n  - name: default\n    queues:\n      - name: root\n        queues: *p\n", "refers to a node that contains it")
	mustFail(t, "a: &a [*a]\n", `unknown key "a"`)
	// Exponential expansion is cut off.
	var b strings.Builder
	b.WriteString("x0: &x0 {name: a}\n")
	for i := 1; i <= 40; i++ {
		n, prev := itoa(int64(i)), itoa(int64(i-1))
		b.WriteString("x" + n + ": &x" + n + " {name: q" + n + ", queues: [*x" + prev + ", *x" + prev + "]}\n")
	}
	b.WriteString("partitions:\n  - queues:\n      - name: root\n        queues: [*x40]\n")
	mustFail(t, b.String(), "too many nodes through aliases")
}

func TestChecksumKey(t *testing.T) {
	text := underRoot("") + "checksum: 0123ABCD\n"
	cfg := mustParse(t, text)
	if len(cfg.Checksum) != 64 || cfg.Checksum == "0123ABCD" {
		t.Errorf("checksum %q: want the sha256 of the text", cfg.Checksum)
	}
	if len(cfg.Notices) != 2 || !strings.HasPrefix(cfg.Notices[0], "checksum: ignored") {
		t.Errorf("notices: %q", cfg.Notices)
	}
}

func TestQuantities(t *testing.T) {
	cfg := mustParse(t, underRoot(`        queues:
          - name: a
            resources:
              max: {vcore: 0.5, memory: 1.5Gi, nvidia.com/gpu: 2, pods: 1e3}
              guaranteed: {cpu: 100m, memory: "1G"}
`))
	a := cfg.Partitions[0].Queue("root.a")
	want := map[string]int64{"cpu": 500, "memory": 1610612736, "nvidia.com/gpu": 2, "pods": 1000}
	if got := a.Max.Map(); !reflect.DeepEqual(got, want) {
		t.Errorf("max = %v, want %v", got, want)
	}
	if got := a.Guaranteed.Get(resources.Intern("cpu")); got != 100 {
		t.Errorf("guaranteed cpu = %d millicores, want 100", got)
	}

	cases := []struct{ name, max, want string }{
		{"invalid", "{memory: 12X}", `resources.max.memory: invalid quantity "12X"`},
		{"negative", "{memory: -1}", `resources.max.memory: negative quantity "-1"`},
		{"overflow", "{memory: 1000E}", `resources.max.memory: quantity "1000E" is too large`},
		{"cpu overflow", "{vcore: 10E}", `resources.max.vcore: quantity "10E" is too large`},
		{"hostile exponent", "{memory: 1e1000000000}", `resources.max.memory: quantity "1e1000000000" is too large`},
		{"hostile negative exponent", "{memory: 1e-1000000000}", `resources.max.memory: invalid quantity "1e-1000000000"`},
		{"percentage", "{memory: 50%}", `resources.max.memory: percentage 50% of root.a needs quota.sharing: elastic`},
		{"empty", `{memory: ""}`, `resources.max.memory: missing quantity`},
		{"null", `{memory: }`, `resources.max.memory: missing quantity`},
		{"vcore and cpu", "{vcore: 1, cpu: 2}", `cpu is given twice (vcore is another name for cpu)`},
		{"empty name", `{"": 1}`, `empty resource name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mustFail(t, underRoot("        queues:\n          - name: a\n            resources:\n              max: "+c.max+"\n"), c.want)
		})
	}
}

func TestVcoreIsCPU(t *testing.T) {
	cfg := mustParse(t, underRoot(`        limits:
          - users: [sue]
            maxresources: {vcore: 2}
          - users: [bob]
            maxresources: {cpu: 2000m}
`))
	l := cfg.Partitions[0].Root.Limits
	if !reflect.DeepEqual(l[0].MaxResources, l[1].MaxResources) || l[0].MaxResources.String() != "cpu=2" {
		t.Errorf("vcore: 2 = %s, cpu: 2000m = %s", l[0].MaxResources, l[1].MaxResources)
	}
	// A parent's vcore bounds a child's cpu.
	mustFail(t, underRoot(`        queues:
          - name: a
            resources: {max: {vcore: 1}}
            queues:
              - name: b
                resources: {max: {cpu: 1500m}}
`), "max cpu 1500m of root.a.b is above the max 1 that applies to its parent root.a")
}

func TestManyErrorsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("partitions:\n  - queues:\n      - name: root\n        queues:\n")
	for i := 0; i < 300; i++ {
		b.WriteString("          - {name: q" + itoa(int64(i)) + ", colour: red}\n")
	}
	errs := mustFail(t, b.String(), `line 5: partitions[0].queues[0].queues[0].colour: unknown key "colour"`)
	if errs.Len() != maxReported+1 || errs.List[maxReported].Msg != "... and 200 more problems" {
		t.Errorf("got %d errors, last %q", errs.Len(), errs.List[errs.Len()-1])
	}
}
