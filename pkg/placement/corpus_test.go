package placement

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// corpusDir is the YuniKorn config corpus (see its README).
const corpusDir = "../queueconfig/testdata/yunikorn-configs"

// corpusCase places one example pod under one corpus config, through this
// package and ugm as the plugin does, and says where YuniKorn would put it.
type corpusCase struct {
	file      string
	partition string // "" is default
	pod       Input
	// want is the queue the pod lands in; wantErr a substring of the
	// refusal (from placement or ugm) instead.
	want    string
	wantErr string
	// wantMax and wantApps are the queue's own limits after the pod landed
	// (a dynamic queue's child template); checked when wantMax is set.
	wantMax  string
	wantApps uint64
	// why explains the expectation against YuniKorn's placement code.
	why string
}

// corpusCases covers every VALID file of the corpus but one (16, which
// does not load: see queueconfig's corpus test).
var corpusCases = []corpusCase{
	{file: "01-queue-config-parent-maxapps.yaml", pod: Input{User: "sue", Queue: "root.namespaces.level1"}, want: "root.namespaces.level1",
		why: "no rules: the implicit provided rule (create false) takes the named leaf. No submitacl anywhere: YuniKorn would refuse (fail closed); our checks are off"},
	{file: "01-queue-config-parent-maxapps.yaml", pod: Input{User: "sue", Queue: "level1"}, want: "root.namespaces.level1",
		why: "our extension: a unique leaf by its name (YuniKorn would look for root.level1 and refuse)"},
	{file: "02-queue-config-childtemplate.yaml", pod: Input{User: "sue", Queue: "root.parent.sales"}, want: "root.parent.sales",
		wantMax: "cpu=21,memory=610G", wantApps: 0,
		why: "provided with create: created below root.parent with root.parent's own child template (the doc's example)"},
	{file: "02-queue-config-childtemplate.yaml", pod: Input{User: "sue", Queue: "root.notemplate.sales"}, want: "root.notemplate.sales",
		wantMax: "cpu=20,memory=600G", wantApps: 10,
		why: "root.notemplate has no template: it inherits root's (the doc's example)"},
	{file: "02-queue-config-childtemplate.yaml", pod: Input{User: "sue", Queue: "sales"}, want: "root.sales",
		wantMax: "cpu=20,memory=600G", wantApps: 10,
		why: "an unqualified name is created under root, with root's template; root's submitacl '*' admits everyone"},
	{file: "04-queue-config-limit-example-WRAPPED.yaml", pod: Input{User: "sue"}, wantErr: `queue "root.default" does not exist in the queue config`,
		why: "only root, no rules: YuniKorn has no leaf to place into either and rejects"},
	{file: "05-sorting-app-fifo.yaml", pod: Input{User: "sue", Queue: "sandbox"}, want: "root.sandbox",
		why: "provided (implicit) root.sandbox"},
	{file: "06-sorting-node-resourceweights-WRAPPED.yaml", pod: Input{User: "sue", Queue: "root.x"}, wantErr: `queue "root.x" does not exist in the queue config`,
		why: "only root and no rule that creates: rejected, as in YuniKorn"},
	{file: "07-acls.yaml", pod: Input{User: "bob", Queue: "root.test"}, want: "root.test",
		why: "submitacl '*' on root.test"},
	{file: "07-acls.yaml", pod: Input{User: "bob", Groups: []string{"product"}, Queue: "product"}, want: "root.product",
		why: `groups-only ACL " product": bob is in product`},
	{file: "07-acls.yaml", pod: Input{User: "bob", Queue: "root.product"},
		wantErr: `user "bob" may not submit to queue root.product: no ACL on its path allows it: root.product submitacl " product"`,
		why:     "bob is not in product and root (inserted) has no ACL: fail closed"},
	{file: "08-placement-fixed-user.yaml", pod: Input{User: "john"}, want: "root.production",
		why: "rule 1 fixed root.production; submitacl john,bob lets john in"},
	{file: "08-placement-fixed-user.yaml", pod: Input{User: "sue"},
		wantErr: "2. user (create): user \"sue\" may not submit to queue root.sue: no queue on its path sets an ACL (root.sue, root)",
		why: "rule 1 denied by root.production's ACL; rule 2 gives root.sue, but root has no ACL, so YuniKorn's code refuses too " +
			"(the doc says root.sue: that needs submitacl on root)"},
	{file: "09-placement-rule-chain-WRAPPED.yaml", pod: Input{User: "john", Namespace: "testing"}, want: "root.default",
		why: "rule 1: john has no dev* group; rule 2: its parent rule fixed root.namespaces has create false and the queue does not exist; " +
			"rule 3: root.default (the doc says root.namespaces.testing, which needs root.namespaces to exist)"},
	{file: "09-placement-rule-chain-WRAPPED.yaml", pod: Input{User: "sarah", Groups: []string{"sarah", "test_app", "dev_app"}, Namespace: "newapp"}, want: "root.default",
		why: "rule 1: dev* matches dev_app, but its parent rule tag namespace has create false and root.newapp does not exist; rule 2: only john; " +
			"rule 3 (the doc says root.newapp.sarah)"},
	{file: "09-placement-rule-chain-WRAPPED.yaml", pod: Input{User: "bob", Groups: []string{"bob"}, Namespace: "testapp"}, want: "root.default",
		why: "rule 3, as the doc says"},
	{file: "10-priorities-fence.yaml", pod: Input{User: "sue", Queue: "root.tenants.tenant-a.child-a-1"}, want: "root.tenants.tenant-a.child-a-1",
		why: "provided (implicit), a full path"},
	{file: "11-quota-preemption.yaml", pod: Input{User: "sue", Queue: "prod"}, want: "root.prod", why: "provided (implicit)"},
	{file: "12-resource-quota-mgmt.yaml", pod: Input{User: "sue", Queue: "search"}, want: "root.search", why: "provided (implicit); root submitacl '*'"},
	{file: "13-use-case-placement-tenants.yaml", pod: Input{User: "admin", Groups: []string{"admin"}, Queue: "etl"}, want: "root.system.etl",
		wantMax: "", why: "rule 1: provided under fixed root.system, whose filter allows admin; created (adminacl ' admin' would admit in YuniKorn)"},
	{file: "13-use-case-placement-tenants.yaml", pod: Input{User: "alice", Groups: []string{"group-a"}, Namespace: "dev"}, want: "root.tenants.group-a.alice",
		why: "rule 1: no queue named; rule 2: user rule for group-a under root.tenants.group-a"},
	{file: "13-use-case-placement-tenants.yaml", pod: Input{User: "bob", Groups: []string{"group-b"}, Namespace: "analytics"}, want: "root.tenants.group-b.analytics",
		why: "rule 3: the namespace under root.tenants.group-b for group-b"},
	{file: "13-use-case-placement-tenants.yaml", pod: Input{User: "carol", Namespace: "x"}, wantErr: "no placement rule placed the pod",
		why: "carol is in neither group and names no queue: every rule's filter or input fails"},
	{file: "14-use-case-tenant-quotas.yaml", pod: Input{User: "al", Groups: []string{"group-a"}, Queue: "root.tenants.group-a"}, want: "root.tenants.group-a",
		why: "provided (implicit); only adminacls, so our checks are off (YuniKorn admits al through adminacl ' group-a')"},
	{file: "19-default-helm-values.yaml", pod: Input{User: "anyone", Namespace: "team-a", Queue: "root.ignored"}, want: "root.team-a",
		why: "the stock config: tag namespace with create, root submitacl '*'; the named queue plays no part"},
	{file: "20-core-config-queues.yaml", pod: Input{User: "user1", Groups: []string{"sandbox"}, Queue: "sandbox"}, want: "root.sandbox.user1",
		why: "rule 1: user under provided (create false) root.sandbox, a parent; submitacl ' sandbox' admits the group"},
	{file: "20-core-config-queues.yaml", pod: Input{User: "user2", Queue: "search"},
		wantErr: "2. provided (create): user \"user2\" may not submit to queue root.search",
		why:     "rule 1 filtered (no sandbox group); rule 2 gives root.search, but neither it nor root has an ACL"},
	{file: "20-core-config-queues.yaml", partition: "gpu", pod: Input{User: "sue", Queue: "test"}, want: "root.test",
		why: "partition gpu: no rules; root.test has submitacl '*'"},
	{file: "22-core-test-partition-limits.yaml", pod: Input{User: "user1"}, wantErr: `queue "root.default" does not exist`, why: "only root: rejected"},
	{file: "23-core-test-complex-users.yaml", pod: Input{User: "user.lastname"}, wantErr: `queue "root.default" does not exist`, why: "only root: rejected"},
	{file: "29-core-test-usergroupresolver-ldap.yaml", pod: Input{User: "sue", Namespace: "ns1"}, want: "root.ns1",
		why: "tag namespace with create, as the stock config"},
	{file: "30-shim-preemption-example.yaml", pod: Input{User: "sue", Queue: "root.sandbox.tenants.tenant-high"}, want: "root.sandbox.tenants.tenant-high",
		why: "provided (implicit); submitacl '*' on the leaf"},
	{file: "30-shim-preemption-example.yaml", pod: Input{User: "sue", Queue: "system-low"}, want: "root.sandbox.system.system-low",
		why: "our extension resolves the unique leaf; submitacl '*' on it"},
	{file: "32-derived-named-then-wildcard-same-list.yaml", pod: Input{User: "test-user", Queue: "parent"}, want: "root.parent",
		why: "root.parent has no children: a leaf"},
	{file: "35-derived-limit-some-zero-resources.yaml", pod: Input{User: "sue", Queue: "root.parent"}, want: "root.parent",
		why: "a leaf (test-user's cpu 0 would refuse a cpu request: a limit, not placement)"},
}

// skippedValid are VALID corpus files no case loads, with the reason.
var skippedValid = map[string]string{
	"16-ugm-design-limits-WRAPPED.yaml": "does not load: a repeated key (see queueconfig's corpusDisagreements)",
}

func TestCorpusPlacement(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range corpusCases {
		covered[tc.file] = true
		t.Run(tc.file+"/"+tc.pod.User, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(corpusDir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := queueconfig.Parse(data)
			if err != nil {
				t.Fatalf("VALID corpus file does not load: %v", err)
			}
			name := tc.partition
			if name == "" {
				name = "default"
			}
			p := cfg.Partition(name)
			m := ugm.New()
			m.SetConfig(p)
			got, err := For(p, "root.default").Place(&tc.pod, m, Options{})
			if err == nil {
				r := resources.FromMap(map[string]int64{"cpu": 1000, "pods": 1})
				err = m.Increase(&ugm.Request{User: tc.pod.User, Groups: tc.pod.Groups, Queue: got.Queue, Create: got.Create,
					App: ugm.AppKey{Namespace: "ns", ID: "app"}, Resources: r})
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("placed in %q (err %v), want a refusal containing %q\nwhy: %s", got.Queue, err, tc.wantErr, tc.why)
				}
				t.Logf("refused as expected: %v", err)
				return
			}
			if err != nil || got.Queue != tc.want {
				t.Fatalf("placed in %q (err %v), want %s\nwhy: %s", got.Queue, err, tc.want, tc.why)
			}
			q := findQueue(m.Queues(), tc.want)
			if q == nil || q.RunningApplications[0] != "ns/app" {
				t.Fatalf("queue %s not in the snapshot with the pod's application: %+v", tc.want, q)
			}
			if tc.wantMax != "" && (q.MaxResources.String() != tc.wantMax || q.MaxApplications != tc.wantApps) {
				t.Errorf("limits of %s: max %s, maxapplications %d; want %s, %d (the child template)", tc.want,
					q.MaxResources.String(), q.MaxApplications, tc.wantMax, tc.wantApps)
			}
		})
	}
	for _, name := range validCorpusFiles(t) {
		if !covered[name] && skippedValid[name] == "" {
			t.Errorf("VALID corpus file %s has no placement case", name)
		}
	}
}

func findQueue(q *ugm.QueueUsage, path string) *ugm.QueueUsage {
	if q == nil || q.QueuePath == path {
		return q
	}
	for _, c := range q.Children {
		if strings.HasPrefix(path, c.QueuePath) {
			if f := findQueue(c, path); f != nil {
				return f
			}
		}
	}
	return nil
}

// validCorpusFiles lists the files the corpus README marks VALID.
func validCorpusFiles(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(corpusDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) != 7 || !strings.HasSuffix(strings.TrimSpace(cells[1]), ".yaml") {
			continue
		}
		if v := strings.TrimSpace(cells[4]); strings.HasPrefix(v, "VALID") {
			out = append(out, strings.TrimSpace(cells[1]))
		}
	}
	if len(out) < 20 {
		t.Fatalf("found %d VALID files in the corpus README, want 22", len(out))
	}
	return out
}
