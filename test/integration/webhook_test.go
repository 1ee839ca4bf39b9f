package integration

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/plugins/userquota"
	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/webhook"
)

// Users of the identity test, by bearer token (--token-auth-file).
const webhookTokens = `sue-token,sue,uid-sue,"dev,system:authenticated"
bob-token,bob,uid-bob,"ops,system:authenticated"
engine-token,system:serviceaccount:tools:engine,uid-engine,"system:serviceaccounts"
`

// badConfig has three problems, all of which the refusal lists (as
// `userquotactl validate` does).
var badConfig = queueconfigtest.Root(`
maxapplications: -1
queues:
- name: a b
  limits:
  - limit: x
    users: [sue]
    maxresources: {vcore: lots}
`)

// TestWebhookIdentity runs the admission webhook (pkg/webhook, served over
// TLS on loopback with a CA made here) behind the real kube-apiserver, with
// the webhook configurations of manifests/webhook-config.yaml pointed at it,
// and users authenticated by token:
//   - sue's pod and Job carry sue's identity (groups filtered), the Job's
//     pod too (created by the Job controller, trusted);
//   - bob forging sue's annotation is refused; bob changing sue's pod's
//     annotation is refused; a configured submitter may set it, and so may
//     a trusted ServiceAccount (kube-system's job-controller, with a real
//     token), not another one; a Deployment keeps its submitter across
//     another user's update;
//   - in a namespace labelled userquota.io/enforce=true a pod naming no
//     scheduler (default-scheduler) is redirected to ours, one naming
//     another scheduler refused;
//   - an invalid queue config is refused at apply with every error;
//   - quota applies per submitter: sue's third cpu is refused.
//
// The in-process controllers run as the test server's admin (group
// system:masters), not as kube-system service accounts: the test trusts
// that group, as a cluster trusts its controllers' accounts.
func TestWebhookIdentity(t *testing.T) {
	c := webhookCluster(t, 2)

	sue, bob, engine := c.clientAs("sue-token"), c.clientAs("bob-token"), c.clientAs("engine-token")
	const sueInfo = `{"user":"sue","groups":["dev"]}`

	// The queue config passes the validating webhook; an invalid one does
	// not, with every problem listed.
	c.setQueueConfig(sueTwoCPU)
	bad := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "userquota-config"},
		Data: map[string]string{"queues.yaml": badConfig}}
	_, err := c.client.CoreV1().ConfigMaps(c.ns).Update(c.ctx, bad, metav1.UpdateOptions{})
	if err == nil || !strings.Contains(err.Error(), "is not a valid queue config") {
		t.Fatalf("invalid queue config: err = %v, want refused by the webhook", err)
	}
	t.Logf("invalid config refused: %v", err)
	for _, p := range []string{"3 problems",
		"line 5: partitions[0].queues[0].maxapplications",
		`line 7: partitions[0].queues[0].queues[0].name: invalid queue name "a b"`,
		`line 11: partitions[0].queues[0].queues[0].limits[0].maxresources.vcore: invalid quantity "lots"`} {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("refusal lacks %q", p)
		}
	}

	c.startScheduler()

	// sue's pod, no annotation: stamped with sue and her quota groups.
	p1 := c.createAs(sue, podSpec{name: "sue-1", cpu: "1"})
	if got := p1.Annotations[podmeta.AnnotationUserInfo]; got != sueInfo {
		t.Errorf("sue's pod user info = %s, want %s", got, sueInfo)
	}
	c.waitBound("sue-1", bindTimeout)

	// bob claiming to be sue is refused.
	_, err = bob.CoreV1().Pods(c.ns).Create(c.ctx, c.makePod(podSpec{name: "forged", user: "sue", groups: []string{"dev"}, cpu: "1"}), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "you may not set it") {
		t.Fatalf("bob forging sue: err = %v, want refused", err)
	}
	t.Logf("forgery refused: %v", err)
	// bob cannot rewrite sue's pod either.
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, podmeta.AnnotationUserInfo, `{"user":"bob","groups":[]}`))
	if _, err := bob.CoreV1().Pods(c.ns).Patch(c.ctx, "sue-1", types.MergePatchType, patch, metav1.PatchOptions{}); err == nil || !strings.Contains(err.Error(), "cannot be changed") {
		t.Fatalf("bob changing sue's pod: err = %v, want refused", err)
	}

	// A submitter (a workflow engine) submits for bob.
	p2 := c.createAs(engine, podSpec{name: "for-bob", user: "bob", groups: []string{"ops"}, cpu: "1"})
	if got := p2.Annotations[podmeta.AnnotationUserInfo]; got != `{"user":"bob","groups":["ops"]}` {
		t.Errorf("submitter's pod user info = %s, want bob's", got)
	}
	c.waitBound("for-bob", bindTimeout)

	// A trusted ServiceAccount (the default list: kube-system's Job
	// controller), with a real ServiceAccount token, may create a pod
	// carrying someone else's user info; another kube-system account may not.
	jobCtl := c.serviceAccountClient("kube-system", "job-controller")
	c.createAs(jobCtl, podSpec{name: "by-job-controller", user: "bob", groups: []string{"ops"}, cpu: "1"})
	evil := c.serviceAccountClient("kube-system", "evil")
	if _, err := evil.CoreV1().Pods(c.ns).Create(c.ctx, c.makePod(podSpec{name: "by-evil", user: "bob", cpu: "1"}), metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "you may not set it") {
		t.Fatalf("untrusted ServiceAccount setting bob: err = %v, want refused", err)
	}

	// A Deployment keeps its submitter: bob's update that drops the
	// annotation (an apply of the original manifest) gets sue's back, and
	// bob setting himself is refused.
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "sue-web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sue-web"}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "sue-web"}}, Spec: c.makePod(podSpec{name: "x", cpu: "1"}).Spec}},
	}
	if dep, err = sue.AppsV1().Deployments(c.ns).Create(c.ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dep.Spec.Template.Annotations = nil
	if dep, err = bob.AppsV1().Deployments(c.ns).Update(c.ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := dep.Spec.Template.Annotations[podmeta.AnnotationUserInfo]; got != sueInfo {
		t.Errorf("sue's Deployment after bob's update: user info %s, want %s", got, sueInfo)
	}
	dep.Spec.Template.Annotations[podmeta.AnnotationUserInfo] = `{"user":"bob","groups":["ops"]}`
	if _, err := bob.AppsV1().Deployments(c.ns).Update(c.ctx, dep, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "cannot be changed") {
		t.Fatalf("bob taking over sue's Deployment: err = %v, want refused", err)
	}

	// sue's Job: the template is stamped; the Job controller copies it.
	c.startControllers()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "sue-job"},
		Spec:       batchv1.JobSpec{Template: v1.PodTemplateSpec{Spec: c.makePod(podSpec{name: "x", cpu: "1"}).Spec}},
	}
	job.Spec.Template.Spec.RestartPolicy = v1.RestartPolicyNever
	job, err = sue.BatchV1().Jobs(c.ns).Create(c.ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := job.Spec.Template.Annotations[podmeta.AnnotationUserInfo]; got != sueInfo {
		t.Errorf("sue's Job template user info = %s, want %s", got, sueInfo)
	}
	var jobPod v1.Pod
	c.eventually("the Job's pod, bound, carrying sue", bindTimeout, func() (bool, error) {
		pods, err := c.client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{LabelSelector: "job-name=sue-job"})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		jobPod = pods.Items[0]
		return jobPod.Spec.NodeName != "", nil
	})
	if got := jobPod.Annotations[podmeta.AnnotationUserInfo]; got != sueInfo {
		t.Errorf("the Job's pod user info = %s, want %s", got, sueInfo)
	}

	// Quota per submitter: sue has 2 cpu (her pod and her Job's); her
	// third is refused, whoever's annotation she might have wanted.
	c.createAs(sue, podSpec{name: "sue-3", cpu: "1"})
	c.waitRefused("sue-3", `user "sue" would exceed maxresources in root.default: cpu 2+1 > 2`)
	if u := c.sched.userRoot("bob"); u == nil {
		t.Errorf("bob's pod (by the submitter) is not charged to bob")
	}

	// An enforced namespace: no way to the default scheduler.
	enforced := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "enforced", Labels: map[string]string{webhook.LabelEnforce: "true"}}}
	if _, err := c.client.CoreV1().Namespaces().Create(c.ctx, enforced, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	plain := c.makePod(podSpec{name: "plain", cpu: "1"})
	plain.Namespace, plain.Spec.SchedulerName = "enforced", ""
	got, err := sue.CoreV1().Pods("enforced").Create(c.ctx, plain, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod without a scheduler in an enforced namespace: %v", err)
	}
	if got.Spec.SchedulerName != schedulerName || got.Annotations[podmeta.AnnotationUserInfo] != sueInfo {
		t.Errorf("enforced pod: schedulerName %q, user info %s; want %s and sue", got.Spec.SchedulerName, got.Annotations[podmeta.AnnotationUserInfo], schedulerName)
	}
	other := c.makePod(podSpec{name: "other", cpu: "1"})
	other.Namespace, other.Spec.SchedulerName = "enforced", "other-scheduler"
	if _, err := sue.CoreV1().Pods("enforced").Create(c.ctx, other, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "userquota.io/enforce=true") {
		t.Fatalf("pod naming another scheduler in an enforced namespace: err = %v, want refused", err)
	}

	// Pods of other schedulers elsewhere never reach the webhook.
	free := c.makePod(podSpec{name: "free", user: "anyone", cpu: "1"})
	free.Spec.SchedulerName = "default-scheduler"
	if got, err := bob.CoreV1().Pods(c.ns).Create(c.ctx, free, metav1.CreateOptions{}); err != nil || got.Annotations[podmeta.AnnotationUserInfo] != free.Annotations[podmeta.AnnotationUserInfo] {
		t.Fatalf("pod of the default scheduler: err = %v, annotations %v; want untouched", err, got.Annotations)
	}
}

// TestWebhookManifests dry-runs manifests/webhook.yaml and
// manifests/webhook-config.yaml on a real API server, and checks that the
// configurations test registers are those of the manifests.
func TestWebhookManifests(t *testing.T) {
	c := newCluster(t, 0)
	root := repoRoot(t)
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": systemNamespace}}}
	c.apply(ns, false)
	var kinds []string
	for _, f := range []string{"webhook.yaml", "webhook-config.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, "manifests", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range decodeObjects(t, f, b) {
			c.apply(o, true)
			kinds = append(kinds, o.GetKind())
		}
	}
	if got, want := strings.Join(kinds, ","), "ServiceAccount,Deployment,Service,PodDisruptionBudget,ClusterRole,ClusterRoleBinding,MutatingWebhookConfiguration,ValidatingWebhookConfiguration"; got != want {
		t.Errorf("kinds = %s, want %s", got, want)
	}
}

// webhookConfig is the webhook's configuration in the test: the defaults of
// cmd/webhook, the test's ConfigMap, the admin's group trusted (the
// in-process controllers' identity), the engine as a submitter.
func webhookConfig(t *testing.T, ns string) webhook.Config {
	users, err := webhook.CompileList("trusted-users", webhook.DefaultTrustedUsers)
	if err != nil {
		t.Fatal(err)
	}
	groups, _ := webhook.CompileList("trusted-groups", []string{"system:masters"})
	subs, _ := webhook.CompileList("submitters", []string{"system:serviceaccount:tools:engine"})
	return webhook.Config{
		SchedulerName: schedulerName,
		TrustedUsers:  users, TrustedGroups: groups, Submitters: subs,
		QuotaGroups:        regexp.MustCompile(`^(?:[^:]+)$`),
		ConfigMapNamespace: ns, ConfigMapName: userquota.DefaultConfigMapName, ConfigMapKey: userquota.DefaultConfigMapKey,
		Partition: userquota.DefaultPartition,
	}
}

// serveWebhook serves the webhook over TLS on loopback with a certificate
// of a CA made here; it returns the base URL and the CA (PEM).
func (c *cluster) serveWebhook(cfg webhook.Config) (string, []byte) {
	c.t.Helper()
	ca := newTestCA(c.t)
	cert := ca.issue(c.t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	srv := &http.Server{Handler: webhook.NewHandler(cfg), ReadHeaderTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	c.t.Cleanup(func() { _ = srv.Close() })
	return "https://" + ln.Addr().String(), ca.pem
}

// registerWebhooks registers the configurations of
// manifests/webhook-config.yaml, pointed at url with the test's CA, and
// waits until the API server calls them.
func (c *cluster) registerWebhooks(url string, caPEM []byte) {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(c.t), "manifests", "webhook-config.yaml"))
	if err != nil {
		c.t.Fatal(err)
	}
	for _, o := range decodeObjects(c.t, "webhook-config.yaml", b) {
		raw, _ := json.Marshal(o.Object)
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			var m admissionregistrationv1.MutatingWebhookConfiguration
			if err := json.Unmarshal(raw, &m); err != nil {
				c.t.Fatal(err)
			}
			for i := range m.Webhooks {
				m.Webhooks[i].ClientConfig = clientConfig(url, m.Webhooks[i].ClientConfig, caPEM)
			}
			if _, err := c.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(c.ctx, &m, metav1.CreateOptions{}); err != nil {
				c.t.Fatal(err)
			}
		case "ValidatingWebhookConfiguration":
			var v admissionregistrationv1.ValidatingWebhookConfiguration
			if err := json.Unmarshal(raw, &v); err != nil {
				c.t.Fatal(err)
			}
			for i := range v.Webhooks {
				v.Webhooks[i].ClientConfig = clientConfig(url, v.Webhooks[i].ClientConfig, caPEM)
				// The test's queue config lives in the test's namespace.
				v.Webhooks[i].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": c.ns}}
			}
			if _, err := c.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(c.ctx, &v, metav1.CreateOptions{}); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	// The API server picks configurations up from an informer: wait until
	// a pod of ours is stamped (a dry run leaves nothing behind).
	probe := c.makePod(podSpec{name: "probe", cpu: "1"})
	c.eventually("the API server calls the webhook", 30*time.Second, func() (bool, error) {
		p, err := c.clientAs("sue-token").CoreV1().Pods(c.ns).Create(c.ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && p.Annotations[podmeta.AnnotationUserInfo] != "", nil
	})
}

// clientConfig points a manifest's service reference at url (same path).
func clientConfig(url string, in admissionregistrationv1.WebhookClientConfig, caPEM []byte) admissionregistrationv1.WebhookClientConfig {
	path := ""
	if in.Service != nil && in.Service.Path != nil {
		path = *in.Service.Path
	}
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url + path), CABundle: caPEM}
}

// serviceAccountClient creates the ServiceAccount ns/name and returns a
// client authenticated by a token of it (TokenRequest).
func (c *cluster) serviceAccountClient(ns, name string) kubernetes.Interface {
	c.t.Helper()
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := c.client.CoreV1().ServiceAccounts(ns).Create(c.ctx, sa, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	tr, err := c.client.CoreV1().ServiceAccounts(ns).CreateToken(c.ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return c.clientAs(tr.Status.Token)
}

// clientAs is a client authenticated by a token of webhookTokens.
func (c *cluster) clientAs(token string) kubernetes.Interface {
	cfg := rest.AnonymousClientConfig(c.config)
	cfg.BearerToken = token
	return kubernetes.NewForConfigOrDie(cfg)
}

// createAs creates a test pod (without user info unless ps names a user)
// with the given client.
func (c *cluster) createAs(client kubernetes.Interface, ps podSpec) *v1.Pod {
	c.t.Helper()
	p, err := client.CoreV1().Pods(c.ns).Create(c.ctx, c.makePod(ps), metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(fmt.Errorf("create pod %s: %w", ps.name, err))
	}
	return p
}
