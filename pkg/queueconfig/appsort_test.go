package queueconfig

import (
	"reflect"
	"strings"
	"testing"
)

func TestAppSortSettings(t *testing.T) {
	cfg := mustParse(t, `partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            properties: {application.sort.policy: fifo}
          - name: b
            properties: {application.sort.policy: Fair}
          - name: c
            properties: {application.sort.policy: " FIFO "}
          - name: d
            properties: {application.sort.policy: "  fair", preemption.policy: fence, quota.lend: "false"}
          - name: dyn
            parent: true
            childtemplate:
              properties: {application.sort.policy: FAIR}
          - name: plain
`)
	p := cfg.Partition("default")
	for _, tc := range []struct {
		path, want string
	}{
		{"root", ""},
		{"root.a", AppSortFIFO},
		{"root.b", AppSortFair},
		{"root.c", AppSortFIFO},
		{"root.d", AppSortFair},
		{"root.dyn", ""},
		{"root.plain", ""},
	} {
		if got := p.Queue(tc.path).AppSort; got != tc.want {
			t.Errorf("%s: AppSort = %q, want %q", tc.path, got, tc.want)
		}
	}
	if got := p.Queue("root.dyn").ChildTemplate.AppSort; got != AppSortFair {
		t.Errorf("child template: AppSort = %q, want %q", got, AppSortFair)
	}
	// Acted on, so not reported as accepted-but-ignored.
	if len(cfg.Notices) != 0 {
		t.Errorf("notices for acted-on properties: %q", cfg.Notices)
	}
}

func TestAppSortNotices(t *testing.T) {
	for _, tc := range []struct {
		name, queues string
		want         []string
	}{
		{
			name:   "stateaware on a queue",
			queues: "          - name: a\n          - name: b\n            properties: {application.sort.policy: stateaware}\n",
			want:   []string{`partitions[0].queues[0].queues[1].properties["application.sort.policy"]: stateaware is deprecated in YuniKorn and treated as fifo here`},
		},
		{
			name:   "stateaware in any case, twice",
			queues: "          - name: a\n            properties: {application.sort.policy: StateAware}\n          - name: b\n            properties: {application.sort.policy: ' STATEAWARE'}\n",
			want:   []string{`partitions[0].queues[0].queues[0].properties["application.sort.policy"]: stateaware is deprecated in YuniKorn and treated as fifo here (and 1 more)`},
		},
		{
			name:   "stateaware in a child template",
			queues: "          - name: p\n            parent: true\n            childtemplate:\n              properties: {application.sort.policy: stateaware}\n",
			want:   []string{`partitions[0].queues[0].queues[0].childtemplate.properties["application.sort.policy"]: stateaware is deprecated in YuniKorn and treated as fifo here`},
		},
		{
			name:   "another property still reported",
			queues: "          - name: a\n            properties: {application.sort.policy: fair, some.other: x}\n",
			want:   []string{"partitions[0].queues[0].queues[0].properties[\"some.other\"]: some.other on root.a: " + noticeOtherProperty},
		},
		{
			name:   "fifo and fair give none",
			queues: "          - name: a\n            properties: {application.sort.policy: fifo}\n          - name: b\n            properties: {application.sort.policy: fair}\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustParse(t, underRoot("        submitacl: '*'\n        queues:\n"+tc.queues))
			if !reflect.DeepEqual(cfg.Notices, tc.want) {
				t.Errorf("notices:\n%q\nwant\n%q", cfg.Notices, tc.want)
			}
		})
	}
	// stateaware is read as fifo.
	cfg := mustParse(t, underRoot("        queues:\n          - name: a\n            properties: {application.sort.policy: stateaware}\n          - name: p\n            parent: true\n            childtemplate:\n              properties: {application.sort.policy: stateaware}\n"))
	p := cfg.Partition("default")
	if got := p.Queue("root.a").AppSort; got != AppSortFIFO {
		t.Errorf("stateaware queue: AppSort = %q, want %q", got, AppSortFIFO)
	}
	if got := p.Queue("root.p").ChildTemplate.AppSort; got != AppSortFIFO {
		t.Errorf("stateaware child template: AppSort = %q, want %q", got, AppSortFIFO)
	}
}

func TestAppSortPropertyErrors(t *testing.T) {
	for _, tc := range []struct {
		name, queues, want string
	}{
		{
			name:   "unknown policy",
			queues: "          - name: a\n          - name: b\n            properties: {application.sort.policy: lifo}\n",
			want:   `line 8: partitions[0].queues[0].queues[1].properties["application.sort.policy"]: application.sort.policy "lifo": give fifo, fair or stateaware`,
		},
		{
			name:   "empty",
			queues: "          - name: a\n            properties:\n              application.sort.policy: \"\"\n",
			want:   `line 7: partitions[0].queues[0].queues[0].properties["application.sort.policy"]: application.sort.policy "": give fifo, fair or stateaware`,
		},
		{
			name:   "YuniKorn's internal name for stateaware",
			queues: "          - name: a\n            properties: {application.sort.policy: status}\n",
			want:   `line 7: partitions[0].queues[0].queues[0].properties["application.sort.policy"]: application.sort.policy "status": give fifo, fair or stateaware`,
		},
		{
			// At the childtemplate key's line, as preemption.* in a template.
			name:   "in a child template",
			queues: "          - name: p\n            parent: true\n            childtemplate:\n              properties: {application.sort.policy: fare}\n",
			want:   `line 8: partitions[0].queues[0].queues[0].childtemplate.properties["application.sort.policy"]: application.sort.policy "fare": give fifo, fair or stateaware`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := mustFail(t, underRoot("        queues:\n"+tc.queues), tc.want)
			if got := errs.Strings(); len(got) != 1 || got[0] != tc.want {
				t.Errorf("errors:\n%q\nwant exactly\n%q", got, tc.want)
			}
		})
	}
	// Collected with the others: one config, every problem.
	errs := mustFail(t, underRoot(`        queues:
          - name: a
            properties: {application.sort.policy: lifo, preemption.policy: never}
          - name: p
            parent: true
            childtemplate:
              properties: {application.sort.policy: random}
`),
		`line 7: partitions[0].queues[0].queues[0].properties["preemption.policy"]: preemption.policy "never": give default, fence or disabled`,
		`line 7: partitions[0].queues[0].queues[0].properties["application.sort.policy"]: application.sort.policy "lifo": give fifo, fair or stateaware`,
		`line 10: partitions[0].queues[0].queues[1].childtemplate.properties["application.sort.policy"]: application.sort.policy "random": give fifo, fair or stateaware`)
	if errs.Len() != 3 {
		t.Errorf("want 3 errors, got %d:\n%v", errs.Len(), errs)
	}
}

func TestAppSortPolicy(t *testing.T) {
	cfg := mustParse(t, `partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: fairdept
            properties: {application.sort.policy: fair}
            queues:
              - name: inherits
              - name: own
                properties: {application.sort.policy: fifo}
              - name: tmpl
                parent: true
                childtemplate:
                  properties: {application.sort.policy: fifo}
              - name: bare
                parent: true
                childtemplate:
                  maxapplications: 5
          - name: users
            parent: true
            childtemplate:
              properties: {application.sort.policy: fair}
            queues:
              - name: team
                parent: true
          - name: plain
`)
	p := cfg.Partition("default")
	for _, tc := range []struct {
		name, leaf, want string
	}{
		{"set on the leaf", "root.fairdept.own", AppSortFIFO},
		{"set on the parent", "root.fairdept.inherits", AppSortFair},
		{"set on the queue itself", "root.fairdept", AppSortFair},
		{"dynamic leaf takes its parent's child template", "root.fairdept.tmpl.alice", AppSortFIFO},
		{"dynamic leaf, template without it: the ancestors' setting", "root.fairdept.bare.alice", AppSortFair},
		{"dynamic leaf under a configured queue without a template: the nearest template above", "root.users.team.bob", AppSortFair},
		{"dynamic leaf two levels down: the dynamic parent sets nothing", "root.users.dyn.bob", AppSortFair},
		{"dynamic leaf under a queue without any template", "root.plain.x", AppSortFIFO},
		{"nothing set: default fifo", "root.plain", AppSortFIFO},
		{"root", "root", AppSortFIFO},
		{"unknown path", "other.x", AppSortFIFO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AppSortPolicy(p, tc.leaf); got != tc.want {
				t.Errorf("AppSortPolicy(%q) = %q, want %q", tc.leaf, got, tc.want)
			}
		})
	}
	if got := AppSortPolicy(nil, "root.a"); got != AppSortFIFO {
		t.Errorf("nil partition: %q, want %q", got, AppSortFIFO)
	}
}

// The corpus files that set application.sort.policy (all to fifo) load with
// it read and no notice about it.
func TestAppSortCorpus(t *testing.T) {
	for _, file := range []string{
		"02-queue-config-childtemplate.yaml",
		"05-sorting-app-fifo.yaml",
		"29-core-test-usergroupresolver-ldap.yaml",
	} {
		t.Run(file, func(t *testing.T) {
			cfg := mustParse(t, string(readCorpusFile(t, file)))
			n := 0
			for _, part := range cfg.Partitions {
				part.Walk(func(q *Queue) {
					got := []string{q.AppSort}
					if q.ChildTemplate != nil {
						got = append(got, q.ChildTemplate.AppSort)
					}
					for _, s := range got {
						if s != "" {
							n++
						}
						if s != "" && s != AppSortFIFO {
							t.Errorf("%s: AppSort %q, the corpus sets fifo", q.Path, s)
						}
					}
				})
			}
			if n == 0 {
				t.Errorf("no queue or template has AppSort set")
			}
			for _, s := range cfg.Notices {
				if strings.Contains(s, PropAppSortPolicy) {
					t.Errorf("notice about %s: %s", PropAppSortPolicy, s)
				}
			}
		})
	}
}
