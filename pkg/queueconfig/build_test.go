package queueconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readCorpusFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// paths lists the queue paths of a partition in Walk order.
func paths(p *Partition) []string {
	var out []string
	p.Walk(func(q *Queue) { out = append(out, q.Path) })
	return out
}

func TestImplicitRoot(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"two top-level queues", "partitions:\n  - name: default\n    queues:\n      - name: test\n      - name: product\n",
			[]string{"root", "root.test", "root.product"}},
		{"one top-level queue that is not root", "partitions:\n  - queues:\n      - name: namespaces\n        queues: [{name: level1}]\n",
			[]string{"root", "root.namespaces", "root.namespaces.level1"}},
		{"root in capitals", "partitions:\n  - queues:\n      - name: ROOT\n        queues: [{name: Sandbox}]\n",
			[]string{"root", "root.sandbox"}},
		{"root beside another queue", "partitions:\n  - queues:\n      - name: root\n      - name: other\n",
			[]string{"root", "root.root", "root.other"}},
		{"no queues at all", "partitions:\n  - queues: []\n", []string{"root"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustParse(t, c.text)
			p := cfg.Partitions[0]
			if got := paths(p); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("queues %v, want %v", got, c.want)
			}
			if p.Root.Parent != nil || !p.Root.IsParent || p.Root.Name != "root" {
				t.Errorf("root: %+v", p.Root)
			}
			for _, path := range c.want {
				q := p.Queue(path)
				if q == nil || q.Path != path {
					t.Fatalf("Queue(%q) = %+v", path, q)
				}
				if q != p.Root && (q.Parent == nil || q.Parent.Path+"."+q.Name != path) {
					t.Errorf("%s: parent %+v", path, q.Parent)
				}
			}
		})
	}
}

func TestTree(t *testing.T) {
	cfg := mustParse(t, string(readCorpusFile(t, "20-core-config-queues.yaml")))
	if len(cfg.Partitions) != 2 || cfg.Partition("default") == nil || cfg.Partition("gpu") == nil || cfg.Partition("none") != nil {
		t.Fatalf("partitions: %+v", cfg.Partitions)
	}
	def := cfg.Partition("default")
	if got, want := paths(def), []string{"root", "root.advertisement", "root.search", "root.sandbox"}; !reflect.DeepEqual(got, want) {
		t.Errorf("default queues %v, want %v", got, want)
	}
	ad := def.Queue("root.advertisement")
	if ad.IsParent || !reflect.DeepEqual(ad.Max.Map(), map[string]int64{"cpu": 80000, "memory": 800e9}) ||
		!reflect.DeepEqual(ad.Guaranteed.Map(), map[string]int64{"cpu": 50000, "memory": 500e9}) {
		t.Errorf("advertisement: parent %v max %s guaranteed %s", ad.IsParent, ad.Max, ad.Guaranteed)
	}
	sandbox := def.Queue("root.sandbox")
	if !sandbox.IsParent || len(sandbox.Children) != 0 || sandbox.SubmitACL != " sandbox" {
		t.Errorf("sandbox (parent: true, no children): %+v", sandbox)
	}
	// Partition limits are root's limits, with their own location.
	if len(def.Root.Limits) != 2 || def.Root.Limits[0].Where != "partitions[0].limits[0]" ||
		!reflect.DeepEqual(def.Root.Limits[0].MaxResources.Map(), map[string]int64{"cpu": 10000, "memory": 10e9}) || def.Root.Limits[1].MaxApplications != 10 ||
		def.Root.Limits[1].MaxResources != nil || def.Root.Limits[1].Groups[0] != "sandbox" {
		t.Errorf("root limits: %+v", def.Root.Limits)
	}
	// Rule names are lower-cased, the filter type defaults to allow.
	rules := def.PlacementRules
	if len(rules) != 2 || rules[0].Name != "user" || rules[0].Parent == nil || rules[0].Parent.Name != "provided" ||
		!rules[0].Create || rules[0].Parent.Create || rules[0].Filter.Type != "allow" || rules[1].Name != "provided" || rules[1].Filter.Type != "allow" {
		t.Errorf("rules: %+v", rules)
	}
	if def.NodeSortPolicy.Type != "binpacking" {
		t.Errorf("node sort policy: %+v", def.NodeSortPolicy)
	}

	gpu := cfg.Partition("gpu")
	if got, want := paths(gpu), []string{"root", "root.production", "root.test"}; !reflect.DeepEqual(got, want) {
		t.Errorf("gpu queues %v, want %v", got, want)
	}
	prod, test := gpu.Queue("root.production"), gpu.Queue("root.test")
	if prod.MaxApplications != 10 || prod.AdminACL != "admin admin" || test.Properties["x"] != "y" {
		t.Errorf("gpu queues: %+v %+v", prod, test)
	}
	if got := test.Limits[0].MaxResources.Map(); !reflect.DeepEqual(got, map[string]int64{"cpu": 10000, "gpu": 50, "memory": 10e9}) || test.Limits[0].Description != "resource limit for user" {
		t.Errorf("gpu limit: %+v %v", test.Limits[0], got)
	}
}

func TestPartitionLimitsCopiedToRoot(t *testing.T) {
	cfg := mustParse(t, string(readCorpusFile(t, "22-core-test-partition-limits.yaml")))
	root := cfg.Partitions[0].Root
	if len(root.Limits) != 3 {
		t.Fatalf("root limits: %+v", root.Limits)
	}
	l := root.Limits[1]
	if !reflect.DeepEqual(l.Users, []string{"user2"}) || !reflect.DeepEqual(l.Groups, []string{"prod"}) || l.MaxApplications != 10 || l.Where != "partitions[0].limits[1]" {
		t.Errorf("mixed limit: %+v", l)
	}

	// Both given and equal: accepted, root's own entries are used.
	limits := "      - limit: a\n        users: [sue]\n        maxresources: {memory: 1G}\n"
	cfg = mustParse(t, "partitions:\n  - limits:\n"+limits+"    queues:\n      - name: root\n        limits:\n"+indent(limits, 4))
	if got := cfg.Partitions[0].Root.Limits; len(got) != 1 || got[0].Where != "partitions[0].queues[0].limits[0]" {
		t.Errorf("equal limits: %+v", got)
	}
	// Both given and different: refused, as YuniKorn does.
	mustFail(t, "partitions:\n  - limits:\n"+limits+"    queues:\n      - name: root\n        limits:\n"+indent(strings.Replace(limits, "1G", "2G", 1), 4),
		"line 2: partitions[0].limits: partition limits and root queue limits are not equivalent")
}

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "")
}

func TestPartitionOptions(t *testing.T) {
	cfg := mustParse(t, `partitions:
  - name: GPU
    preemption: {enabled: false, quotapreemptionenabled: true}
    nodesortpolicy: {type: Fair, resourceweights: {vcore: 4.0, memory: 1}}
    usergroupresolver: {type: ldap}
    queues:
      - name: root
        childtemplate:
          maxapplications: 10
          properties: {application.sort.policy: fifo}
          resources: {guaranteed: {vcore: 1}, max: {vcore: 20, memory: 600G}}
  - queues: [{name: root}]
`)
	p := cfg.Partitions[0]
	if p.Name != "gpu" || cfg.Partitions[1].Name != "default" {
		t.Errorf("names %q %q", p.Name, cfg.Partitions[1].Name)
	}
	if p.Preemption.Enabled == nil || *p.Preemption.Enabled || p.Preemption.QuotaPreemptionEnabled == nil || !*p.Preemption.QuotaPreemptionEnabled {
		t.Errorf("preemption: %+v", p.Preemption)
	}
	if p.NodeSortPolicy.Type != "fair" || !reflect.DeepEqual(p.NodeSortPolicy.ResourceWeights, map[string]float64{"vcore": 4, "memory": 1}) {
		t.Errorf("node sort: %+v", p.NodeSortPolicy)
	}
	if p.UserGroupResolver.Type != "ldap" {
		t.Errorf("resolver: %+v", p.UserGroupResolver)
	}
	ct := p.Root.ChildTemplate
	if ct == nil || ct.MaxApplications != 10 || ct.Properties["application.sort.policy"] != "fifo" ||
		!reflect.DeepEqual(ct.Max.Map(), map[string]int64{"cpu": 20000, "memory": 600e9}) || ct.Guaranteed.String() != "cpu=1" {
		t.Errorf("child template: %+v", ct)
	}
}

func TestChecksumAndNotices(t *testing.T) {
	data := readCorpusFile(t, "13-use-case-placement-tenants.yaml")
	cfg := mustParse(t, string(data))
	sum := sha256.Sum256(data)
	if cfg.Checksum != hex.EncodeToString(sum[:]) {
		t.Errorf("checksum %s", cfg.Checksum)
	}
	// Placement rules and ACLs are acted on; what remains is that no queue
	// sets submitacl, so ACL checks are off.
	want := []string{
		"partitions[0]: " + noticeNoACL,
	}
	if !reflect.DeepEqual(cfg.Notices, want) {
		t.Errorf("notices:\n%q\nwant\n%q", cfg.Notices, want)
	}

	cfg = mustParse(t, string(readCorpusFile(t, "14-use-case-tenant-quotas.yaml")))
	if got := cfg.Notices[1]; got != "partitions[0].queues[0].queues[0].resources.guaranteed: "+noticeGuaranteed+" (and 3 more)" {
		t.Errorf("guaranteed notice: %q", got)
	}
	cfg = mustParse(t, underRoot("        submitacl: '*'\n"))
	if len(cfg.Notices) != 0 {
		t.Errorf("plain config has notices: %q", cfg.Notices)
	}
	cfg = mustParse(t, underRoot(""))
	if want := []string{"partitions[0]: " + noticeNoACL}; !reflect.DeepEqual(cfg.Notices, want) {
		t.Errorf("config without submitacl: notices %q, want %q", cfg.Notices, want)
	}
}
