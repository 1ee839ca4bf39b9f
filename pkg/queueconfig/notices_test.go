package queueconfig

import (
	"reflect"
	"strings"
	"testing"
)

// TestNoticesNameKeys: every key that loads and is not acted on gives a
// notice naming the key and where it is (issue 20, point 6). Before, the
// placement rule keys, child template properties and guaranteed, and
// quota.* properties loaded silently, and the others gave one notice per
// section that named no key.
func TestNoticesNameKeys(t *testing.T) {
	queues := func(lines string) string { return underRoot("        submitacl: '*'\n        queues:\n" + lines) }
	rules := func(lines string) string {
		return queues("          - {name: default}\n          - {name: users, parent: true}\n") + "    placementrules:\n" + lines
	}
	for _, tc := range []struct {
		name, cfg string
		want      []string
	}{
		{
			name: "priority properties",
			cfg:  queues("          - name: a\n            properties: {priority.offset: \"10\", priority.policy: fence}\n          - name: b\n            properties: {priority.offset: \"-5\"}\n"),
			want: []string{
				`partitions[0].queues[0].queues[0].properties["priority.offset"]: priority.offset on root.a: ` + noticePriority + ` (and 1 more)`,
				`partitions[0].queues[0].queues[0].properties["priority.policy"]: priority.policy on root.a: ` + noticePriority,
			},
		},
		{
			name: "quota preemption delay (corpus 11)",
			cfg:  queues("          - name: a\n            properties: {quota.preemption.delay: 15m}\n"),
			want: []string{`partitions[0].queues[0].queues[0].properties["quota.preemption.delay"]: quota.preemption.delay on root.a: ` + noticeQuotaPreemption},
		},
		{
			name: "a typo of one of ours",
			cfg:  queues("          - name: a\n            properties: {quota.sharng: elastic}\n"),
			want: []string{`partitions[0].queues[0].queues[0].properties["quota.sharng"]: quota.sharng on root.a: ` + noticeUnknownProperty},
		},
		{
			name: "any other property",
			cfg:  queues("          - name: a\n            properties: {sample: value2}\n"),
			want: []string{`partitions[0].queues[0].queues[0].properties.sample: sample on root.a: ` + noticeOtherProperty},
		},
		{
			name: "child template properties and guaranteed",
			cfg:  queues("          - name: p\n            parent: true\n            childtemplate:\n              properties: {priority.offset: \"5\"}\n              resources: {guaranteed: {vcore: 1}}\n"),
			want: []string{
				`partitions[0].queues[0].queues[0].childtemplate.properties["priority.offset"]: priority.offset on the child template of root.p: ` + noticePriority,
				`partitions[0].queues[0].queues[0].childtemplate.resources.guaranteed: guaranteed on the child template of root.p: ` + noticeGuaranteed,
			},
		},
		{
			name: "partition sections name their keys",
			cfg: underRoot("        submitacl: '*'\n") + "    preemption: {enabled: false, quotapreemptionenabled: true}\n" +
				"    nodesortpolicy: {type: binpacking}\n    usergroupresolver: {type: ldap}\n",
			want: []string{
				"partitions[0].preemption.enabled: " + noticePreemptionEnabled,
				"partitions[0].preemption.quotapreemptionenabled: " + noticeQuotaPreemption,
				"partitions[0].nodesortpolicy: " + noticeNodeSort,
				`partitions[0].usergroupresolver.type: the "ldap" resolver is not consulted: ` + noticeResolver,
			},
		},
		{
			name: "an empty preemption section sets nothing",
			cfg:  underRoot("        submitacl: '*'\n") + "    preemption: {}\n",
		},
		{
			name: "a value on a rule that takes none",
			cfg:  rules("      - {name: user, value: root.users, create: true}\n      - {name: provided, value: x, parent: {name: primaryGroup, value: y, create: true}}\n"),
			want: []string{
				`partitions[0].placementrules[0].value: ignored: the user rule takes no value (and 2 more)`,
			},
		},
		{
			name: "create on secondaryGroup",
			cfg:  rules("      - {name: secondaryGroup, create: true, parent: {name: fixed, value: root.users}}\n"),
			want: []string{`partitions[0].placementrules[0].create: ` + noticeSecondaryCreate},
		},
		{
			name: "a space after a comma in the users",
			cfg:  queues("          - name: a\n            submitacl: \"sue, bob\"\n"),
			want: []string{`partitions[0].queues[0].queues[0].submitacl: submitacl "sue, bob" on root.a: the space ends the user list, so bob is read as a group list (as YuniKorn reads it); write "sue,bob" for two users`},
		},
		{
			name: "acted-on keys give none",
			cfg: queues("          - name: a\n            properties: {quota.sharing: elastic, quota.weight: \"cpu=1\", quota.lend: \"false\", preemption.policy: fence, preemption.delay: 30s, application.sort.policy: fair}\n" +
				"            resources: {guaranteed: {vcore: 1}}\n          - name: p\n            parent: true\n            properties: {quota.sharing: elastic}\n            childtemplate:\n              resources: {guaranteed: {vcore: 1}}\n"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustParse(t, tc.cfg)
			if !reflect.DeepEqual(cfg.Notices, tc.want) {
				t.Errorf("notices:\n%s\nwant\n%s", strings.Join(cfg.Notices, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
