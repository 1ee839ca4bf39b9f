package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/userquota/userquota/pkg/cli"
	"github.com/userquota/userquota/pkg/rest/dao"
	"github.com/userquota/userquota/test/internal/controlplane"
)

// whyConfig: each user may run 2 cpu in root.team; root.shared holds 3
// cpu for everyone.
const whyConfig = `
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: team
            limits:
              - limit: each user
                users: ["*"]
                maxresources: {vcore: 2}
          - name: shared
            resources:
              max: {vcore: 3}
`

// TestWhyPending (issue 22): behind the real API server with RBAC on and
// the scheduler's REST API authenticating (restAuth: true), the owner of
// a held pod, a ServiceAccount with no RBAC on the API, reads its
// explanation (what holds it, its place, who holds the room, when) with
// `kubectl userquota why`, which reads the pod as them first; another
// user who may read the pod gets the answer a pod that does not exist
// gets, from the CLI and from the REST API; a namespace the owner may not
// read is refused by the API server; the queue's line needs the reader
// role, which an admin has.
func TestWhyPending(t *testing.T) {
	c := newCluster(t, 1, rbacAPIServer)
	c.setQueueConfig(whyConfig)
	restAddr := freeAddress(t)
	c.startSchedulerWith(map[string]any{"restAddress": restAddr, "restAuth": true, "leaderElectionLease": ""})
	server := "https://" + restAddr

	annToken, ann := c.plainServiceAccount("ann")
	bobToken, bob := c.plainServiceAccount("bob")
	adminToken, admin := c.plainServiceAccount("admin")
	// ann and bob may read pods in the test's namespace; admin has the
	// REST API's reader role (docs/api.md, "Access control").
	c.grant(rbacv1.Subject{Kind: "ServiceAccount", Name: "ann", Namespace: c.ns}, rbacv1.Subject{Kind: "ServiceAccount", Name: "bob", Namespace: c.ns})
	c.grantReader(admin)

	// Three of ann's pods ran and ended: completions the estimate reads.
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("ann-done-%d", i)
		c.createPod(podSpec{name: name, user: ann, queue: "root.team", cpu: "500m"})
		c.waitBound(name, bindTimeout)
		c.deletePod(name)
		c.eventually(name+" released", bindTimeout, func() (bool, error) {
			q := c.sched.userRoot(ann)
			return q == nil || q.ResourceUsage.Map()["cpu"] == 0, nil
		})
	}
	c.createPod(podSpec{name: "ann-1", user: ann, queue: "root.team", cpu: "2"})
	c.waitBound("ann-1", bindTimeout)
	c.createPod(podSpec{name: "ann-2", user: ann, queue: "root.team", cpu: "1"})
	c.waitRefused("ann-2", "would exceed maxresources in root.team")
	// In root.shared bob's pod holds the room ann's waits for.
	c.createPod(podSpec{name: "bob-1", user: bob, queue: "root.shared", app: "bob-secret-project", cpu: "2"})
	c.waitBound("bob-1", bindTimeout)
	c.createPod(podSpec{name: "ann-3", user: ann, queue: "root.shared", cpu: "2"})
	c.waitRefused("ann-3", "queue root.shared would exceed max")

	why := func(token string, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		kubeconfig := c.kubeconfigFor(token)
		code := cli.Main(cli.Plugin, append(append([]string{"why"}, args...), "--kubeconfig", kubeconfig, "--server", server,
			"--insecure-skip-tls-verify"), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	// The owner: the explanation. The REST API may not serve yet.
	var out, errOut string
	c.eventually("ann's explanation", 15*time.Second, func() (bool, error) {
		var code int
		code, out, errOut = why(annToken, "ann-2", "-n", c.ns)
		if code != 0 && !strings.Contains(errOut, "connection refused") {
			return false, fmt.Errorf("exit %d: %s", code, errOut)
		}
		return code == 0, nil
	})
	if errOut != "" {
		t.Errorf("stderr: %s", errOut)
	}
	t.Logf("kubectl userquota why ann-2 -n %s, as %s:\n%s", c.ns, ann, out)
	for _, want := range []string{
		"Pod:        " + c.ns + "/ann-2",
		"State:      Held by quota (UserLimit)",
		fmt.Sprintf("Held by:    user %q would exceed maxresources in root.team: cpu 2+1 > 2", ann),
		"Place:      1 of 1 held in root.team",
		"Let in:     once 1 cpu is released on this limit",
		"Holding it: " + c.ns + "/ann-1 (" + ann + "): 2 cpu",
		"When:       in about ",
		"from 1500m cpu freed by 3 completion(s) on this limit",
		"Accuracy:   half of such estimates were off by at most",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("ann's explanation lacks %q", want)
		}
	}

	// Held by the queue's max: bob's pod holds the room, counted, not
	// named; her running pod: what it is charged to.
	for _, tc := range []struct {
		pod  string
		want []string
	}{
		{"ann-3", []string{"Held by:    queue root.shared would exceed max: cpu 2+2 > 3", "Limit:      queue root.shared, cpu: 2 used + 2 asked > 3 max",
			"Holding it: 1 pod(s) of other users: 2 cpu",
			"When:       cannot be estimated: too few completions seen on this limit"}},
		{"ann-1", []string{"State:      Running on node-0", fmt.Sprintf("Charged to: user %s, queue root.team, application %s/", ann, c.ns),
			"Borrows:    no: no queue on its path has elastic quota", "Reclaim:    no: it uses no lent capacity"}},
	} {
		code, out, errOut := why(annToken, tc.pod)
		t.Logf("kubectl userquota why %s, as %s:\n%s", tc.pod, ann, out)
		if code != 0 {
			t.Errorf("why %s: exit %d: %s", tc.pod, code, errOut)
		}
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("why %s lacks %q", tc.pod, want)
			}
		}
		if strings.Contains(out, "bob") {
			t.Errorf("why %s names bob or his pod to ann", tc.pod)
		}
	}

	// Bad input: one line, exit 1, nothing on stdout.
	for _, tc := range []struct {
		name, token string
		args        []string
		stderr      string
	}{
		{"another user's pod", bobToken, []string{"ann-2", "-n", c.ns},
			fmt.Sprintf("kubectl userquota: no pod %s/ann-2 of yours is known to this scheduler\n", c.ns)},
		{"a pod that does not exist", annToken, []string{"nope", "-n", c.ns},
			fmt.Sprintf("kubectl userquota: pod \"nope\" not found in namespace %q\n", c.ns)},
		{"a namespace the caller may not read", annToken, []string{"ann-2", "-n", "kube-system"},
			"kubectl userquota: you may not read pods in namespace \"kube-system\"\n"},
	} {
		code, out, errOut := why(tc.token, tc.args...)
		t.Logf("%s: exit %d: %s", tc.name, code, errOut)
		if code != 1 || out != "" || errOut != tc.stderr {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1, nothing, %q", tc.name, code, out, errOut, tc.stderr)
		}
	}

	// The REST API tells another user nothing of ann's pod: the same
	// answer as for a pod that does not exist.
	const whyPath = "/ws/v1/partition/default/why/"
	get := func(path, token string) (int, string) {
		code, body, err := controlplane.Get(c.ctx, server+path, token)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return code, string(body)
	}
	codeOther, bodyOther := get(whyPath+c.ns+"/ann-2", bobToken)
	codeNone, bodyNone := get(whyPath+c.ns+"/ann-3", bobToken)
	if codeOther != http.StatusNotFound || strings.ReplaceAll(bodyOther, "ann-2", "ann-3") != bodyNone || strings.Contains(bodyOther, "ann\"") {
		t.Errorf("bob on ann's pod: %d %s; on a pod that does not exist: %d %s; want the same 404", codeOther, bodyOther, codeNone, bodyNone)
	}
	// The admin sees ann's pod, and the queue's line.
	if code, body := get(whyPath+c.ns+"/ann-3", adminToken); code != http.StatusOK || !strings.Contains(body, `"state":"Held"`) ||
		!strings.Contains(body, c.ns+"/bob-1") {
		t.Errorf("the admin on ann's pod: %d %s, want 200 naming bob's pod", code, body)
	} else {
		t.Logf("GET %s%s/ann-3 as %s: %s", whyPath, c.ns, admin, body)
	}
	const heldPath = "/ws/v1/partition/default/queue/root.team/held"
	code, body := get(heldPath, adminToken)
	var held dao.HeldPods
	if err := json.Unmarshal([]byte(body), &held); code != http.StatusOK || err != nil || held.Total != 1 || len(held.Pods) != 1 || held.Pods[0].Pod != c.ns+"/ann-2" || held.Pods[0].Position != 1 {
		t.Errorf("the admin on root.team's line: %d %s, want ann-2 first of 1", code, body)
	}
	if code, body := get(heldPath, annToken); code != http.StatusForbidden {
		t.Errorf("ann on root.team's line: %d %s, want 403 (the cluster-wide right)", code, body)
	}
	var stdout, stderr bytes.Buffer
	if code := cli.Main(cli.Ctl, []string{"held", "root.team", "--kubeconfig", c.kubeconfigFor(adminToken), "--server", server, "--insecure-skip-tls-verify"}, &stdout, &stderr); code != 0 {
		t.Errorf("userquotactl held root.team as the admin: exit %d: %s", code, stderr.String())
	}
	t.Logf("userquotactl held root.team, as %s:\n%s", admin, stdout.String())
}

// grant lets subjects get and list pods in the test's namespace.
func (c *cluster) grant(subjects ...rbacv1.Subject) {
	c.t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: c.ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}}
	if _, err := c.client.RbacV1().Roles(c.ns).Create(c.ctx, role, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: c.ns}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"}}
	if _, err := c.client.RbacV1().RoleBindings(c.ns).Create(c.ctx, rb, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// grantReader gives the ServiceAccount user the REST API's reader role
// (get on "/" and "/ws/v1/*") and lets it read pods everywhere.
func (c *cluster) grantReader(user string) {
	c.t.Helper()
	parts := strings.Split(user, ":") // system:serviceaccount:NS:NAME
	subject := rbacv1.Subject{Kind: "ServiceAccount", Namespace: parts[2], Name: parts[3]}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "why-test-reader"}, Rules: []rbacv1.PolicyRule{
		{NonResourceURLs: []string{"/", "/ws/v1/*"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
	}}
	if _, err := c.client.RbacV1().ClusterRoles().Create(c.ctx, role, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "why-test-reader"}, Subjects: []rbacv1.Subject{subject},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "why-test-reader"}}
	if _, err := c.client.RbacV1().ClusterRoleBindings().Create(c.ctx, crb, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// kubeconfigFor writes a kubeconfig reaching the test's API server (as
// the test server's own kubeconfig does) with token, its context's
// namespace the test's, and returns its path.
func (c *cluster) kubeconfigFor(token string) string {
	c.t.Helper()
	cfg, err := clientcmd.LoadFromFile(c.kubeconfig)
	if err != nil {
		c.t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	if cur == nil {
		c.t.Fatalf("%s has no current context", c.kubeconfig)
	}
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{"user": {Token: token}}
	cfg.Contexts = map[string]*clientcmdapi.Context{"test": {Cluster: cur.Cluster, AuthInfo: "user", Namespace: c.ns}}
	cfg.CurrentContext = "test"
	path := filepath.Join(c.t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		c.t.Fatal(err)
	}
	return path
}
