package queueconfig

import (
	"strings"
	"testing"
)

// rule is one validation case: a config and the error it must give, or ""
// when it must load.
type rule struct {
	name, text, want string
}

func runRules(t *testing.T, cases []rule) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.want == "" {
				mustParse(t, c.text)
				return
			}
			mustFail(t, c.text, c.want)
		})
	}
}

// children puts queue lines (indented by 10) under root.
func children(lines string) string {
	return underRoot("        queues:\n" + lines)
}

func TestQueueNames(t *testing.T) {
	runRules(t, []rule{
		{"letters digits and symbols", children("          - name: Team_a-1:x#y/z@w\n"), ""},
		{"64 characters", children("          - name: " + strings.Repeat("a", 64) + "\n"), ""},
		{"65 characters", children("          - name: " + strings.Repeat("a", 65) + "\n"), `invalid queue name "` + strings.Repeat("a", 60) + `...": use 1 to 64`},
		{"space", children("          - name: a b\n"), `line 6: partitions[0].queues[0].queues[0].name: invalid queue name "a b": use 1 to 64 letters, digits, or _ - : # / @`},
		{"bang", children("          - name: a!\n"), `invalid queue name "a!"`},
		{"dot", children("          - name: a.b\n"), `invalid queue name "a.b": a dot separates the levels of a queue path`},
		{"missing", children("          - parent: true\n"), `line 6: partitions[0].queues[0].queues[0]: queue name is missing`},
		{"null queue", children("          -\n"), `queue name is missing`},
		{"top level under implicit root", "partitions:\n  - queues:\n      - name: a.b\n      - name: c\n", `invalid queue name "a.b"`},
		{"siblings differ", children("          - name: dev\n          - name: prod\n"), ""},
		{"same name at different levels", children("          - name: a\n            queues: [{name: a}]\n"), ""},
		{"duplicate siblings", children("          - name: dev\n          - name: Dev\n"), `line 7: partitions[0].queues[0].queues[1]: duplicate queue name "dev" under root (first at line 6); queue names ignore case`},
	})
}

func TestPartitions(t *testing.T) {
	runRules(t, []rule{
		{"duplicate names", "partitions:\n  - name: Default\n    queues: [{name: root}]\n  - queues: [{name: root}]\n", `line 4: partitions[1]: duplicate partition name "default" (first at line 2)`},
		{"no queues", "partitions:\n  - name: default\n", `line 2: partitions[0]: partition "default" has no queues list`},
		{"null partition", "partitions:\n  -\n", `partition "default" has no queues list`},
	})
}

func TestQueueResources(t *testing.T) {
	runRules(t, []rule{
		{"max on root", underRoot("        resources:\n          max: {memory: 1G}\n"), `line 5: partitions[0].queues[0].resources: root queue must not have resources`},
		{"guaranteed on root", underRoot("        resources: {guaranteed: {memory: 1G}}\n"), `root queue must not have resources`},
		{"empty max on root", underRoot("        resources: {max: {}}\n"), `root queue must not have resources`},
		{"null resources on root", underRoot("        resources: {max: }\n"), ""},
		{"guaranteed above max", children("          - name: a\n            resources: {guaranteed: {memory: 2G}, max: {memory: 1G}}\n"),
			`resources.guaranteed: guaranteed memory 2G of root.a is above its max 1G`},
		{"guaranteed of a resource max does not name", children("          - name: a\n            resources: {guaranteed: {cpu: 2}, max: {memory: 1G}}\n"), ""},
		{"child max above parent", children("          - name: a\n            resources: {max: {memory: 4G}}\n            queues:\n              - name: b\n                resources: {max: {memory: 8G}}\n"),
			`line 10: partitions[0].queues[0].queues[0].queues[0].resources.max: max memory 8G of root.a.b is above the max 4G that applies to its parent root.a`},
		{"child max above grandparent", children("          - name: a\n            resources: {max: {memory: 4G}}\n            queues:\n              - name: b\n                queues:\n                  - name: c\n                    resources: {max: {memory: 5G}}\n"),
			`max memory 5G of root.a.b.c is above the max 4G that applies to its parent root.a.b`},
		{"child max of another resource", children("          - name: a\n            resources: {max: {memory: 4G}}\n            queues:\n              - name: b\n                resources: {max: {cpu: 8}}\n"), ""},
		{"children's guaranteed above parent's", children("          - name: a\n            resources: {guaranteed: {memory: 4G}, max: {memory: 100G}}\n            queues:\n              - {name: b, resources: {guaranteed: {memory: 3G}}}\n              - {name: c, resources: {guaranteed: {memory: 3G}}}\n"),
			`the children of root.a have guaranteed memory 6000000000 in sum, above its own guaranteed 4G`},
		{"children's guaranteed above parent's max", children("          - name: a\n            resources: {max: {memory: 4G}}\n            queues:\n              - {name: b, resources: {guaranteed: {memory: 3G}}}\n              - {name: c, resources: {guaranteed: {memory: 3G}}}\n"),
			`the children of root.a have guaranteed memory 6000000000 in sum, above the max 4G that applies to it`},
		{"grandchildren's guaranteed count for their parent", children("          - name: a\n            resources: {guaranteed: {memory: 4G}}\n            queues:\n              - name: b\n                queues:\n                  - {name: c, resources: {guaranteed: {memory: 3G}}}\n                  - {name: d, resources: {guaranteed: {memory: 3G}}}\n"),
			`the children of root.a have guaranteed memory 6000000000 in sum, above its own guaranteed 4G`},
		{"guaranteed of a resource the parent does not name", children("          - name: a\n            resources: {guaranteed: {memory: 100}, max: {memory: 100, vcores: 100}}\n            queues:\n              - {name: b, resources: {guaranteed: {memory: 50, vcores: 50}}}\n              - {name: c, resources: {guaranteed: {memory: 50, vcores: 50}}}\n"), ""},
	})
}

func TestQueueMaxApplications(t *testing.T) {
	runRules(t, []rule{
		{"child within parent", children("          - name: a\n            maxapplications: 10\n            queues: [{name: b, maxapplications: 10}]\n"), ""},
		{"parent unlimited", children("          - name: a\n            queues: [{name: b, maxapplications: 10}]\n"), ""},
		{"child above parent", children("          - name: a\n            maxapplications: 5\n            queues:\n              - name: b\n                maxapplications: 100\n"),
			`line 10: partitions[0].queues[0].queues[0].queues[0].maxapplications: maxapplications 100 of root.a.b is above 5 of its parent root.a`},
		{"child unset", children("          - name: a\n            maxapplications: 5\n            queues: [{name: b}]\n"),
			`maxapplications of root.a.b is not set, but its parent root.a sets 5`},
	})
}

func TestACLs(t *testing.T) {
	runRules(t, []rule{
		{"users and groups", children("          - name: a\n            submitacl: sue,bob dev,test\n            adminacl: \" admins\"\n"), ""},
		{"wildcard", children("          - name: a\n            submitacl: '*'\n"), ""},
		{"empty denies", children("          - name: a\n            submitacl: ''\n"), ""},
		{"three parts", children("          - name: a\n            adminacl: sue bob dev\n"), `line 7: partitions[0].queues[0].queues[0].adminacl: invalid adminacl "sue bob dev"`},
		{"wildcard with spaces", children("          - name: a\n            submitacl: ' * '\n"), ""},
		// Issue 20, point 6: an entry after a second space never matched
		// (" ops" is no group name); YuniKorn refuses such an ACL.
		{"a space after a comma in the groups", children("          - name: a\n            submitacl: \" dev, ops\"\n"),
			`partitions[0].queues[0].queues[0].submitacl: invalid submitacl " dev, ops" on root.a: it holds more than one space`},
		{"two spaces between users and groups", children("          - name: a\n            adminacl: \"sue  dev\"\n"),
			`invalid adminacl "sue  dev" on root.a: it holds more than one space`},
		{"a trailing space after groups", children("          - name: a\n            submitacl: \"sue dev \"\n"),
			`invalid submitacl "sue dev " on root.a: it holds more than one space`},
	})
}

// limits puts limit lines (indented by 14) on root.a, which has a max and
// maxapplications.
func limits(lines string) string {
	return children("          - name: a\n            maxapplications: 100\n            resources: {max: {memory: 100G, vcore: 100}}\n            limits:\n" + lines)
}

func TestLimitEntries(t *testing.T) {
	runRules(t, []rule{
		{"no users or groups", limits("              - limit: nobody\n                maxapplications: 1\n"), `line 10: partitions[0].queues[0].queues[0].limits[0]: limit "nobody" on root.a names no users and no groups`},
		{"null limit", limits("              -\n"), `limit on root.a names no users and no groups`},
		{"user names", limits("              - users: [user.lastname, user@domain, system:serviceaccount:ns:sa, _x$, \"*\"]\n                maxapplications: 1\n"), ""},
		{"invalid user", limits("              - users: [\"bad user\"]\n                maxapplications: 1\n"), `limits[0].users[0]: invalid user name "bad user"`},
		{"user starting with a digit", limits("              - users: [\"1sue\"]\n                maxapplications: 1\n"), `invalid user name "1sue"`},
		{"invalid group", limits("              - groups: [bad@group]\n                maxapplications: 1\n"), `limits[0].groups[0]: invalid group name "bad@group"`},
		{"service account group", limits("              - groups: [system:serviceaccounts:ns]\n                maxapplications: 1\n"), ""},
		{"neither", limits("              - limit: nothing\n                users: [sue]\n"), `limit "nothing" on root.a sets neither maxresources nor maxapplications, so it limits nothing`},
		{"empty maxresources", limits("              - users: [sue]\n                maxresources: {}\n"), `sets neither maxresources nor maxapplications`},
		{"zero maxapplications", limits("              - users: [sue]\n                maxapplications: 0\n"), `sets neither maxresources nor maxapplications`},
		{"all zero", limits("              - users: [sue]\n                maxapplications: 1\n                maxresources: {memory: 0, vcore: 0}\n"),
			`limits[0].maxresources: limit on root.a: every maxresources value is 0, which blocks everything`},
		{"some zero", limits("              - users: [sue]\n                maxresources: {memory: 1G, nvidia.com/gpu: 0}\n"), ""},
		{"bad quantity is not also 'neither'", limits("              - users: [sue]\n                maxresources: {memory: lots}\n"), `invalid quantity "lots"`},
		{"resources only", limits("              - users: [sue]\n                maxresources: {memory: 1G}\n"), ""},
		{"above queue max", limits("              - limit: big\n                users: [sue]\n                maxresources: {memory: 200G}\n"),
			`line 12: partitions[0].queues[0].queues[0].limits[0].maxresources: limit "big" on root.a: maxresources memory 200G is above the queue's max memory 100G`},
		{"vcore above queue max cpu", limits("              - users: [sue]\n                maxresources: {cpu: 101}\n"), `maxresources cpu 101 is above the queue's max cpu 100`},
		{"resource the queue does not bound", limits("              - users: [sue]\n                maxresources: {nvidia.com/gpu: 8}\n"), ""},
		{"above queue maxapplications", limits("              - users: [sue]\n                maxapplications: 101\n"),
			`line 11: partitions[0].queues[0].queues[0].limits[0].maxapplications: limit on root.a: maxapplications 101 is above the queue's maxapplications 100`},
		{"equal to queue", limits("              - users: [sue]\n                maxapplications: 100\n                maxresources: {memory: 100G}\n"), ""},
	})
}

func TestLimitDuplicates(t *testing.T) {
	runRules(t, []rule{
		{"user in one list", limits("              - users: [sue, bob, sue]\n                maxapplications: 1\n"),
			`limits[0].users[2]: user "sue" is listed twice in the limits of root.a (first at partitions[0].queues[0].queues[0].limits[0].users[0])`},
		{"user across limits", limits("              - users: [sue]\n                maxapplications: 1\n              - users: [sue]\n                maxapplications: 2\n"),
			`line 12: partitions[0].queues[0].queues[0].limits[1].users[0]: user "sue" is listed twice in the limits of root.a (first at line 10)`},
		{"group across limits", limits("              - groups: [dev]\n                maxapplications: 1\n              - groups: [dev]\n                maxapplications: 2\n"),
			`group "dev" is listed twice in the limits of root.a`},
		{"user and group of one name", limits("              - users: [dev]\n                groups: [dev]\n                maxapplications: 1\n"), ""},
		{"same user on different queues", children("          - name: a\n            limits: [{users: [sue], maxapplications: 1}]\n          - name: b\n            limits: [{users: [sue], maxapplications: 9}]\n"), ""},
	})
}

func TestWildcards(t *testing.T) {
	runRules(t, []rule{
		{"user wildcard last", limits("              - users: [sue]\n                maxapplications: 2\n              - users: [\"*\"]\n                maxapplications: 1\n"), ""},
		{"named then wildcard in one list", limits("              - users: [sue, \"*\"]\n                maxapplications: 1\n"), ""},
		{"wildcard then named in one list", limits("              - users: [\"*\", sue]\n                maxapplications: 1\n"),
			`limits[0].users[1]: user "sue" comes after the wildcard user "*" in the limits of root.a`},
		{"named user after wildcard entry", limits("              - users: [\"*\"]\n                maxapplications: 1\n              - users: [sue]\n                maxapplications: 2\n"),
			`line 12: partitions[0].queues[0].queues[0].limits[1].users[0]: user "sue" comes after the wildcard user "*"`},
		{"wildcard user alone", limits("              - users: [\"*\"]\n                maxapplications: 1\n"), ""},
		{"group wildcard after named", limits("              - groups: [dev]\n                maxapplications: 2\n              - groups: [\"*\"]\n                maxapplications: 1\n"), ""},
		{"group wildcard after named in one list", limits("              - groups: [dev, \"*\"]\n                maxapplications: 1\n"), ""},
		{"group wildcard alone", limits("              - groups: [\"*\"]\n                maxapplications: 1\n"),
			`limits[0].groups[0]: the wildcard group "*" on root.a needs a named group limit before it`},
		{"group wildcard before named", limits("              - groups: [\"*\"]\n                maxapplications: 1\n              - groups: [dev]\n                maxapplications: 2\n"),
			`the wildcard group "*" on root.a needs a named group limit before it`},
		{"named group after wildcard", limits("              - groups: [dev]\n                maxapplications: 2\n              - groups: [\"*\"]\n                maxapplications: 1\n              - groups: [test]\n                maxapplications: 2\n"),
			`group "test" comes after the wildcard group "*" in the limits of root.a`},
		{"user wildcard does not need a named user", limits("              - users: [\"*\"]\n                groups: [dev]\n                maxapplications: 1\n"), ""},
		{"wildcards per queue", children("          - name: a\n            limits: [{users: [\"*\"], maxapplications: 1}]\n          - name: b\n            limits: [{users: [sue], maxapplications: 1}]\n"), ""},
	})
}

func TestLimitHierarchy(t *testing.T) {
	// tree builds root -> a -> b -> c with the given limits on each
	// (flow-style lists, "" for none).
	tree := func(rootL, aL, bL, cL string) string {
		l := func(s string) string {
			if s == "" {
				return ""
			}
			return "limits: " + s + ", "
		}
		return underRoot("        " + strings.TrimSuffix(l(rootL), ", ") + "\n" +
			"        queues:\n          - {name: a, " + l(aL) + "queues: [{name: b, " + l(bL) + "queues: [{name: c, " + strings.TrimSuffix(l(cL), ", ") + "}]}]}\n")
	}
	runRules(t, []rule{
		{"within parent", tree("", "[{users: [sue], maxapplications: 10, maxresources: {memory: 10G}}]", "[{users: [sue], maxapplications: 5, maxresources: {memory: 5G}}]", ""), ""},
		{"user resources above parent", tree("", "[{users: [sue], maxresources: {memory: 10G}}]", "[{users: [sue], maxresources: {memory: 20G}}]", ""),
			`user "sue": maxresources memory 20G on root.a.b is above the memory 10G set for user "sue" on root.a`},
		{"user resources above grandparent", tree("[{users: [sue], maxresources: {memory: 10G}}]", "", "[{users: [sue], maxresources: {memory: 20G}}]", ""),
			`user "sue": maxresources memory 20G on root.a.b is above the memory 10G set for user "sue" on root`},
		{"tightest ancestor counts", tree("[{users: [sue], maxresources: {memory: 10G}}]", "[{users: [sue], maxresources: {memory: 5G}}]", "", "[{users: [sue], maxresources: {memory: 8G}}]"),
			`user "sue": maxresources memory 8G on root.a.b.c is above the memory 5G set for user "sue" on root.a`},
		{"other resource is free", tree("", "[{users: [sue], maxresources: {memory: 10G}}]", "[{users: [sue], maxresources: {vcore: 4}}]", ""), ""},
		{"user apps above parent", tree("", "[{users: [sue], maxapplications: 5}]", "[{users: [sue], maxapplications: 6}]", ""),
			`user "sue": maxapplications 6 on root.a.b is above the 5 set for user "sue" on root.a`},
		{"user apps unset below a parent's", tree("", "[{users: [sue], maxapplications: 5}]", "[{users: [sue], maxresources: {memory: 1G}}]", ""),
			`user "sue": no maxapplications on root.a.b, but 5 is set for user "sue" on root.a`},
		{"user apps above an ancestor past a resources-only level", tree("[{users: [sue], maxresources: {memory: 10G}}]", "[{users: [sue], maxapplications: 5}]", "", "[{users: [sue], maxapplications: 100}]"),
			`user "sue": maxapplications 100 on root.a.b.c is above the 5 set for user "sue" on root.a`},
		{"group above parent", tree("", "[{groups: [dev], maxapplications: 5}]", "[{groups: [dev], maxapplications: 50}]", ""),
			`group "dev": maxapplications 50 on root.a.b is above the 5 set for group "dev" on root.a`},
		{"user above parent wildcard", tree("", "[{users: [\"*\"], maxresources: {memory: 2G}}]", "[{users: [alice], maxresources: {memory: 10G}}]", ""),
			`user "alice": maxresources memory 10G on root.a.b is above the memory 2G set for the wildcard user "*" on root.a`},
		{"user apps above grandparent wildcard", tree("[{users: [\"*\"], maxapplications: 5}]", "", "", "[{users: [alice], maxapplications: 50}]"),
			`user "alice": maxapplications 50 on root.a.b.c is above the 5 set for the wildcard user "*" on root`},
		{"group above parent wildcard", tree("", "[{groups: [other], maxapplications: 100}, {groups: [\"*\"], maxapplications: 5}]", "[{groups: [infra], maxapplications: 50}]", ""),
			`group "infra": maxapplications 50 on root.a.b is above the 5 set for the wildcard group "*" on root.a`},
		{"wildcard above parent wildcard", tree("", "[{users: [\"*\"], maxapplications: 5}]", "[{users: [\"*\"], maxapplications: 6}]", ""),
			`user "*": maxapplications 6 on root.a.b is above the 5 set for user "*" on root.a`},
		{"named ancestor hides the wildcard", tree("[{users: [sue], maxapplications: 100}, {users: [\"*\"], maxapplications: 10}]", "[{users: [sue], maxapplications: 50}]", "", ""), ""},
		{"wildcard below a named ancestor", tree("", "[{users: [sue], maxapplications: 5}]", "[{users: [\"*\"], maxapplications: 50}]", ""), ""},
		{"siblings are independent", underRoot("        queues:\n          - {name: a, limits: [{users: [sue], maxapplications: 5}]}\n          - {name: b, limits: [{users: [sue], maxapplications: 500}]}\n"), ""},
		{"partition limits are root's", "partitions:\n  - limits: [{users: [sue], maxapplications: 5}]\n    queues:\n      - {name: a, limits: [{users: [sue], maxapplications: 6}]}\n",
			`user "sue": maxapplications 6 on root.a is above the 5 set for user "sue" on root`},
	})
}

func TestPlacementRules(t *testing.T) {
	part := func(rules string) string {
		return "partitions:\n  - queues:\n      - name: root\n        queues:\n          - {name: default}\n          - {name: users, parent: true}\n          - {name: team, queues: [{name: dev}]}\n    placementrules:\n" + rules
	}
	runRules(t, []rule{
		{"corpus style", part("      - {name: user, create: true, filter: {type: deny, groups: [\"dev*\"]}, parent: {name: fixed, value: root.users}}\n      - {name: fixed, value: root.default}\n"), ""},
		{"capitalised names", part("      - {name: Provided, create: true}\n"), ""},
		{"invalid name", part("      - name: 1fixed\n"), `line 9: partitions[0].placementrules[0].name: invalid placement rule name "1fixed"`},
		{"invalid parent name", part("      - {name: user, parent: {name: \"@fixed\"}}\n"), `invalid placement rule name "@fixed"`},
		{"missing name", part("      - {create: true}\n"), `invalid placement rule name ""`},
		{"filter type", part("      - {name: user, filter: {type: bogus}}\n"), `invalid placement filter type "bogus": use allow or deny`},
		{"filter user", part("      - {name: user, filter: {users: [\"bad user\"]}}\n"), `invalid placement filter users "bad user"`},
		{"filter group", part("      - {name: user, filter: {groups: [\"group name\"]}}\n"), `invalid placement filter groups "group name"`},
		{"filter list is lenient", part("      - {name: user, filter: {users: [\"bad user\", sue]}}\n"), ""},
		{"fixed to a parent", part("      - {name: fixed, value: root.users}\n"), `placement rule #0 (fixed) refers to root.users, which is a parent queue, not a leaf`},
		{"fixed to a queue with children", part("      - {name: fixed, value: team}\n"), `placement rule #0 (fixed) refers to root.team, which is a parent queue`},
		{"fixed to a missing queue", part("      - {name: fixed, value: root.nope}\n"), `placement rule #0 (fixed) refers to root.nope, which does not exist, and create is false`},
		{"fixed to a missing queue it may create", part("      - {name: fixed, value: root.nope, create: true}\n"), ""},
		{"fixed below a leaf", part("      - {name: fixed, value: root.default.x, create: true}\n"), `refers to root.default.x, which cannot be created: root.default is a leaf queue`},
		{"dynamic below a leaf", part("      - {name: tag, value: namespace, create: true, parent: {name: fixed, value: root.default}}\n"),
			`placement rule #0 (fixed->tag) puts queues below root.default, which is a leaf queue`},
		{"dynamic below a parent", part("      - {name: tag, value: namespace, create: true, parent: {name: fixed, value: root.team}}\n"), ""},
		{"two full paths", part("      - {name: fixed, value: root.team.dev, parent: {name: fixed, value: root.team}}\n"),
			`placement rule #0 (fixed->fixed): only the first fixed rule of a chain may give a full path, got "root.team.dev"`},
		{"relative fixed chain", part("      - {name: fixed, value: dev, parent: {name: fixed, value: team}}\n"), ""},
		// Issue 20, point 6: rules that loaded and then did nothing.
		{"group rules", part("      - {name: primaryGroup, create: true, parent: {name: fixed, value: root.users}}\n      - {name: SecondaryGroup, parent: {name: fixed, value: root.team}}\n      - {name: user, create: true, parent: {name: secondarygroup}}\n"), ""},
		{"unknown rule", part("      - {name: usr, create: true}\n"),
			`line 9: partitions[0].placementrules[0].name: unknown placement rule "usr": use provided, user, tag, fixed, primaryGroup or secondaryGroup`},
		{"unknown parent rule", part("      - {name: user, create: true, parent: {name: group}}\n"),
			`partitions[0].placementrules[0].parent.name: unknown placement rule "group"`},
		{"tag without a value", part("      - {name: tag, create: true}\n"),
			`partitions[0].placementrules[0]: a tag rule needs a value: the tag to read (namespace, or a label or annotation name)`},
		{"fixed without a value", part("      - {name: fixed, create: true}\n"),
			`partitions[0].placementrules[0]: a fixed rule needs a value: the queue to place pods in`},
		{"fixed parent without a value", part("      - {name: user, create: true, parent: {name: fixed}}\n"),
			`partitions[0].placementrules[0].parent: a fixed rule needs a value`},
		{"a full fixed path with a parent rule", part("      - {name: fixed, value: root.default, parent: {name: user, create: true}}\n"),
			`partitions[0].placementrules[0]: a fixed rule with a full path (root.default) takes no parent rule: the parent rule would never run`},
	})
}

func TestNodeSortPolicy(t *testing.T) {
	ns := func(s string) string {
		return "partitions:\n  - queues: [{name: root}]\n    nodesortpolicy: " + s + "\n"
	}
	runRules(t, []rule{
		{"fair", ns("{type: fair}"), ""},
		{"binpacking", ns("{type: BinPacking}"), ""},
		{"empty", ns("{resourceweights: {vcore: 2}}"), ""},
		{"unknown", ns("{type: spread}"), `line 3: partitions[0].nodesortpolicy: unknown node sort policy "spread": use fair or binpacking`},
		{"negative weight", ns("{type: fair, resourceweights: {vcore: -1}}"), `partitions[0].nodesortpolicy.resourceweights.vcore: negative resource weight -1 for vcore`},
	})
}
