package cli

import (
	"bytes"
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes/fake"
	k8srest "k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/userquota/userquota/pkg/rest"
	"github.com/userquota/userquota/pkg/rest/dao"
	"github.com/userquota/userquota/pkg/ugm"
)

// whyNow is the tests' clock.
var whyNow = time.Date(2026, 11, 26, 10, 7, 0, 0, time.UTC)

// whyPods are the pods the fake Kubernetes API serves.
func whyPods() []runtime.Object {
	pod := func(ns, name, scheduler, node string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1.PodSpec{SchedulerName: scheduler, NodeName: node}}
	}
	return []runtime.Object{
		pod("ns1", "sue-3", defaultSchedulerName, ""),
		pod("ns1", "sue-1", defaultSchedulerName, "node-1"),
		pod("ns1", "web", "default-scheduler", "node-1"),
		pod("secret", "x", defaultSchedulerName, ""),
	}
}

// sue3 is the explanation of sue's held pod.
var sue3 = dao.PodExplanation{Pod: "ns1/sue-3", State: dao.StateHeld, User: "sue", Queue: "root.sandbox", Application: "ns1/train",
	Request: map[string]int64{"cpu": 1000, "memory": 2 << 30, "pods": 1},
	Message: `Held by quota: user "sue" would exceed maxresources in root.sandbox: cpu 4+1 > 4`,
	Held: &dao.HeldExplanation{Kind: "User", Reason: `user "sue" would exceed maxresources in root.sandbox: cpu 4+1 > 4`,
		Limit: &dao.Limit{Who: "user", Name: "sue", Queue: "root.sandbox", Limit: "resources", Resource: "cpu", Usage: 4000, Request: 1000, Max: 4000},
		Since: whyNow.Add(-3 * time.Minute), Position: 2, QueueHeld: 3,
		LetIn: &dao.LetIn{Resource: "cpu", Own: 1000, Ahead: 2000, AheadPods: 1, Holders: []dao.Holder{
			{Pod: "ns1/sue-1", User: "sue", Pods: 1, Amount: 2000}, {Pod: dao.Hidden, Pods: 2, Amount: 2000}}},
		Estimate: dao.Estimate{Known: true, At: whyNow, WaitSeconds: 180, Freed: 3000, Completions: 3, SpanSeconds: 180,
			Accuracy: dao.Accuracy{Scope: "simulator", Compared: 1112, P50Seconds: 98, P90Seconds: 543, Reference: "testdata/estimates/churn.jsonl"}}}}

// sue1 is the explanation of sue's running pod, borrowing.
var sue1 = dao.PodExplanation{Pod: "ns1/sue-1", State: dao.StateRunning, User: "sue", Queue: "root.shared.a", Application: "ns1/train",
	Request: map[string]int64{"cpu": 2000, "pods": 1}, Message: `Running on node-1, charged to user "sue" in queue root.shared.a.`,
	Charged: &dao.ChargeExplanation{User: "sue", Group: "dev", Queue: "root.shared.a", Application: "ns1/train",
		Resources: map[string]int64{"cpu": 2000, "pods": 1}, Preemptible: true, Elastic: true, Reclaimable: true,
		Borrowing: []dao.Borrow{{Queue: "root.shared.a", Resource: "cpu", Usage: 6000, Guaranteed: 4000, Share: 5000, OverShare: true}}}}

// whyServer is the REST API over a fake plugin: sue owns sue-3 and sue-1;
// t-sue, t-bob and t-admin are tokens, and only admin has RBAC.
func whyServer(t *testing.T) *httptest.Server {
	t.Helper()
	why := func(ns, name string, v rest.Viewer) (*dao.PodExplanation, error) {
		all := map[string]*dao.PodExplanation{"ns1/sue-3": &sue3, "ns1/sue-1": &sue1}
		e, ok := all[ns+"/"+name]
		if !ok || !v.All && e.User != v.User {
			return nil, rest.ErrNoPod
		}
		return e, nil
	}
	held := func(queue string, offset, limit int) dao.HeldPods {
		return dao.HeldPods{Queue: queue, Total: 3, Offset: offset, Limit: limit, Pods: []dao.HeldPod{
			{Position: 2, Pod: "ns1/sue-3", User: "sue", Application: "ns1/train", Since: whyNow.Add(-3 * time.Minute), Kind: "User",
				Reason: sue3.Held.Reason, Request: map[string]int64{"cpu": 1000, "pods": 1}}}}
	}
	auth := callers(map[string]*user.DefaultInfo{"t-sue": {Name: "sue"}, "t-bob": {Name: "bob"}, "t-admin": {Name: "admin"}})
	auth.Authorizer = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetUser().GetName() == "admin" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "no RBAC rule allows it", nil
	})
	srv := httptest.NewServer(rest.NewHandler(rest.Options{Partition: "default", Usage: ugm.New(), Why: why, Held: held, Auth: auth}))
	t.Cleanup(srv.Close)
	return srv
}

// fakeKube is the Kubernetes API of whyPods for a kubeconfig whose user
// has token: it may read pods in every namespace but "secret".
func fakeKube(token string) kubeLoader {
	return func(f kubeFlags) (*kube, error) {
		cs := fake.NewClientset(whyPods()...)
		cs.PrependReactor("get", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if a.GetNamespace() == "secret" {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, a.(clienttesting.GetAction).GetName(),
					errorString(`User "sue" cannot get resource "pods" in API group "" in the namespace "secret"`))
			}
			return false, nil, nil
		})
		ns := f.namespace
		if ns == "" {
			ns = "ns1"
		}
		return &kube{client: cs, namespace: ns, config: &k8srest.Config{BearerToken: token}}, nil
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// TestWhyCommand: `kubectl userquota why` reads the pod through the
// Kubernetes API as the caller, then the scheduler's explanation; every
// bad input is one line on stderr, nothing on stdout, exit 1.
func TestWhyCommand(t *testing.T) {
	srv := whyServer(t)
	for _, tc := range []struct {
		name   string
		token  string // the kubeconfig's
		args   []string
		code   int
		stdout string // exact
		stderr string // exact
	}{
		{name: "a held pod, to its owner: the kubeconfig's token is sent", token: "t-sue", args: []string{"why", "sue-3"}, stdout: `Pod:        ns1/sue-3
User:       sue
Queue:      root.sandbox
Request:    cpu 1, memory 2Gi, pods 1
State:      Held by quota (UserLimit) since 2026-11-26T10:04:00Z (3m0s ago)
Held by:    user "sue" would exceed maxresources in root.sandbox: cpu 4+1 > 4
Limit:      user sue in root.sandbox, cpu: 4 used + 1 asked > 4 max
Place:      2 of 3 held in root.sandbox, in let-in order (priority, the queue's application order, age)
Let in:     once 3 cpu is released on this limit (this pod alone needs 1 cpu; 1 pod held ahead of it on the limit asks 2 cpu)
Holding it: ns1/sue-1 (sue): 2 cpu
            2 pod(s) of other users: 2 cpu
When:       in about 3m0s (around 10:10 UTC), from 3 cpu freed by 3 completion(s) on this limit over the last 3m0s
Accuracy:   half of such estimates were off by at most 1m38s, nine in ten by at most 9m3s (1112 estimates on the simulator's reference trace testdata/estimates/churn.jsonl, docs/why-pending.md; this scheduler has not compared enough of its own yet)
Why:        Held by quota: user "sue" would exceed maxresources in root.sandbox: cpu 4+1 > 4
`},
		{name: "flags after the pod, and pod/NAME", token: "t-sue", args: []string{"why", "pod/sue-3", "-n", "ns1", "-o", "json"}},
		{name: "a running pod that borrows", token: "t-sue", args: []string{"why", "sue-1"}, stdout: `Pod:        ns1/sue-1
User:       sue
Queue:      root.shared.a
Request:    cpu 2, pods 1
State:      Running on node-1
Charged to: user sue, group dev, queue root.shared.a, application ns1/train
Borrows:    root.shared.a uses 6 cpu, guaranteed 4, share now 5, over its share
Reclaim:    yes: a queue on its path uses more than its share of what it holds, so a pod of a queue within its share that finds no node may preempt it (docs/reclaim.md)
Why:        Running on node-1, charged to user "sue" in queue root.shared.a.
`},
		{name: "a pod that does not exist", token: "t-sue", args: []string{"why", "nope"}, code: 1,
			stderr: "kubectl userquota: pod \"nope\" not found in namespace \"ns1\"\n"},
		{name: "a namespace the caller may not read", token: "t-sue", args: []string{"why", "x", "-n", "secret"}, code: 1,
			stderr: "kubectl userquota: you may not read pods in namespace \"secret\"\n"},
		{name: "a pod that is not ours", token: "t-sue", args: []string{"why", "web"}, code: 1,
			stderr: "kubectl userquota: pod ns1/web is not scheduled by userquota-scheduler (its schedulerName is \"default-scheduler\"): no quota of ours holds it\n"},
		{name: "another user's pod: the scheduler tells nothing of it", token: "t-bob", args: []string{"why", "sue-3"}, code: 1,
			stderr: "kubectl userquota: no pod ns1/sue-3 of yours is known to this scheduler\n"},
		{name: "no credentials the scheduler accepts", token: "", args: []string{"why", "sue-3"}, code: 1,
			stderr: "kubectl userquota: the scheduler's REST API does not accept your credentials: send a bearer token the API server accepts: Authorization: Bearer TOKEN\n"},
		{name: "--token wins over the kubeconfig", token: "t-bob", args: []string{"why", "sue-3", "--token", "t-sue", "-o", "json"}},
		{name: "two pods", token: "t-sue", args: []string{"why", "a", "b"}, code: 2},
		{name: "a bad output", token: "t-sue", args: []string{"why", "sue-3", "-o", "yaml"}, code: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			c := &cli{prog: Plugin, stdout: &stdout, stderr: &stderr, kube: fakeKube(tc.token), now: func() time.Time { return whyNow }}
			code := c.run(append(tc.args, "--server", srv.URL))
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			if tc.code != 0 {
				if stdout.Len() > 0 {
					t.Errorf("stdout %q, want nothing", stdout.String())
				}
				if tc.code == 1 && stderr.String() != tc.stderr {
					t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), tc.stderr)
				}
				return
			}
			if tc.stdout != "" {
				if diff := cmp.Diff(tc.stdout, stdout.String()); diff != "" {
					t.Errorf("stdout (-want,+got):\n%s", diff)
				}
			} else if !strings.Contains(stdout.String(), `"pod": "ns1/sue-3"`) {
				t.Errorf("stdout %s, want the server's JSON", stdout.String())
			}
		})
	}
}

// TestWhyNeedsServer: without --server or $USERQUOTA_SERVER, a command
// line error.
func TestWhyNeedsServer(t *testing.T) {
	t.Setenv(envServer, "")
	var stdout, stderr bytes.Buffer
	c := &cli{prog: Plugin, stdout: &stdout, stderr: &stderr, kube: fakeKube("t-sue")}
	if code := c.run([]string{"why", "sue-3"}); code != 2 || !strings.Contains(stderr.String(), "missing --server (or $USERQUOTA_SERVER)") {
		t.Errorf("exit %d, stderr %s; want 2 and the missing --server", code, stderr.String())
	}
}

// TestHeldCommand: a queue's line, to an admin; refused to a user.
func TestHeldCommand(t *testing.T) {
	srv := whyServer(t)
	var stdout, stderr bytes.Buffer
	c := &cli{prog: Ctl, stdout: &stdout, stderr: &stderr, kube: fakeKube("t-admin"), now: func() time.Time { return whyNow }}
	if code := c.run([]string{"held", "root.sandbox", "--offset", "1", "--limit", "1", "--server", srv.URL}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want := `root.sandbox: 3 held by quota, in let-in order (2-2 shown)
#  POD        USER  PRIORITY  HELD FOR  KIND  REQUEST        REASON
2  ns1/sue-3  sue   0         3m0s      User  cpu 1, pods 1  user "sue" would exceed maxresources in root.sandbox: cpu 4+1 > 4
`
	if diff := cmp.Diff(want, stdout.String()); diff != "" {
		t.Errorf("stdout (-want,+got):\n%s", diff)
	}
	stdout.Reset()
	c.kube = fakeKube("t-sue")
	if code := c.run([]string{"held", "root.sandbox", "--server", srv.URL}); code != 1 || stdout.Len() > 0 ||
		stderr.String() != `userquotactl: forbidden: user "sue" cannot get path "/ws/v1/partition/default/queue/root.sandbox/held"`+"\n" {
		t.Errorf("a user without RBAC: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// TestTLSServerName: through a port-forward the server is 127.0.0.1, and
// its certificate names its Service: --tls-server-name verifies it for
// that name.
func TestTLSServerName(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) }))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(srv.URL)
	for _, tc := range []struct {
		name, serverName string
		ok               bool
	}{
		{"a name the certificate has", "example.com", true},
		{"a name it does not have", "userquota-scheduler-rest.userquota-system.svc", false},
	} {
		c, err := newUsageClient(usageFlags{base: base, caFile: ca, serverName: tc.serverName, timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.get("/x")
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
