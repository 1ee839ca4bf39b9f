package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/userquota/userquota/pkg/plugins/userquota"
	"github.com/userquota/userquota/test/internal/controlplane"
	"github.com/userquota/userquota/test/internal/etcdtest"
)

// What manifests/ installs, as the tests below rely on it.
const (
	systemNamespace   = "userquota-system"
	serviceAccount    = "userquota-scheduler"
	leaseName         = "userquota-scheduler"
	schedulerConfigCM = "userquota-scheduler-config"
	schedulerConfigFn = "scheduler-config.yaml"
	// exampleRefusal is how the third pod of manifests/examples/job-alice.yaml
	// is refused under manifests/queue-config.yaml (hack/e2e-kind.sh and
	// docs/install.md quote it too).
	exampleRefusal = `user "alice" would exceed maxresources in root.batch: cpu 500m+250m > 500m`
)

// rbacAPIServer turns authorization on in the test API server (it allows
// everything by default), so the manifests' RBAC is what the scheduler has.
const rbacAPIServer = "--authorization-mode=RBAC"

// TestManifests checks each install on a real API server with RBAC on,
// manifests/ and the chart charts/userquota rendered with its defaults
// (TestChartMatchesManifests checks that the two are the same objects):
// every object of the install and of manifests/examples/ passes a
// server-side dry-run apply; then the scheduler binary runs with the
// ServiceAccount's token (not as admin), the install's RBAC and the
// scheduler config of its ConfigMap, and schedules the example workloads:
// two of alice's Job pods bound, the third refused with the plugin's
// reason, bob's Deployment bound. Any request the API server refuses the
// scheduler for lack of a permission fails the test, including those the
// scheduler tolerates (its /metrics authentication config).
func TestManifests(t *testing.T) {
	for _, src := range installSources {
		t.Run(src.name, func(t *testing.T) { testInstall(t, src) })
	}
}

// testInstall is TestManifests for one install.
func testInstall(t *testing.T, src installSource) {
	c := newCluster(t, 2, rbacAPIServer)
	// The PodGroup API served: the scheduler watches PodGroups, under the
	// manifests' RBAC.
	c.installPodGroupCRD()
	m := c.installFrom(src)

	// The generated ConfigMap holds the production config: leader election
	// on our own Lease, client limits above the defaults.
	cfg := loadSchedulerConfig(t, m.schedulerConfig)
	le := cfg.LeaderElection
	if !le.LeaderElect || le.ResourceNamespace != systemNamespace || le.ResourceName != leaseName || le.ResourceLock != "leases" {
		t.Errorf("leaderElection = %+v, want leaderElect on the Lease %s/%s", le, systemNamespace, leaseName)
	}
	if cc := cfg.ClientConnection; cc.QPS <= 50 || cc.Burst <= 100 {
		t.Errorf("clientConnection qps %v burst %d: want them above the defaults 50/100", cc.QPS, cc.Burst)
	}

	// Production leader election as is (the Lease is free: it is taken at once).
	s := c.startSchedulerProcess("scheduler", m.schedulerConfigFor(t, nil), m.kubeconfig)
	c.eventually("the scheduler holds the Lease", 30*time.Second, func() (bool, error) {
		if bad := s.forbiddenLines(); bad != "" {
			return false, fmt.Errorf("refused requests (a permission missing from manifests/rbac.yaml?):\n%s", bad)
		}
		return c.leaseHolder() != "", nil
	})

	// The examples, with the controllers that turn them into pods.
	c.startControllers()
	for _, obj := range m.examples {
		c.apply(obj, false)
	}
	var bound, refused []string
	c.eventually("alice's Job: 2 pods bound, 1 refused; bob's Deployment: 2 pods bound", 60*time.Second, func() (bool, error) {
		bound, refused = nil, nil
		pods, err := c.client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			switch {
			case p.Spec.NodeName != "":
				bound = append(bound, p.Labels["job-name"]+p.Labels["app"])
			case refusal(&p) != "":
				if !strings.Contains(refusal(&p), exampleRefusal) {
					return false, fmt.Errorf("pod %s refused with %q, want %q", p.Name, refusal(&p), exampleRefusal)
				}
				refused = append(refused, p.Labels["job-name"])
			}
		}
		sort.Strings(bound)
		return strings.Join(bound, ",") == "example-alice,example-alice,example-bob,example-bob" &&
			strings.Join(refused, ",") == "example-alice", nil
	})
	c.stillPendingCount("job-name=example-alice", 1, time.Second)

	// The scheduler's events (events.k8s.io) reach the API server: the
	// hold on the pod (through the plugin's own status client, under the
	// manifests' RBAC); a config change on the queue-config ConfigMap in
	// userquota-system. (The event of the config loaded at start is raised
	// before kube-scheduler starts sending events: it is not looked for.)
	for _, o := range objsOfKind(m.objects, "ConfigMap") {
		if o.GetName() == userquota.DefaultConfigMapName {
			o = o.DeepCopy()
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			data[userquota.DefaultConfigMapKey] += "# edited\n"
			_ = unstructured.SetNestedStringMap(o.Object, data, "data")
			c.apply(o, false)
		}
	}
	c.eventually("QuotaHeld and QueueConfigApplied events", 15*time.Second, func() (bool, error) {
		return c.hasEvent(c.ns, userquota.ReasonQuotaHeld) && c.hasEvent(systemNamespace, userquota.ReasonConfigApplied), nil
	})

	// The webhook's resize check, wired as manifests/ wire it.
	c.checkResizeWiring(m, s)

	// /metrics through the scheduler's delegated authentication and
	// authorization (TokenReview, SubjectAccessReview), as a scraper with a
	// token for a ServiceAccount allowed to get /metrics.
	reader := c.readerToken("metrics-reader", "/metrics")
	body := s.get(t, "/metrics", reader, http.StatusOK)
	if !strings.Contains(body, "scheduler_schedule_attempts_total") {
		t.Errorf("/metrics lacks scheduler_schedule_attempts_total")
	}
	s.get(t, "/metrics", "", http.StatusForbidden)

	// The usage REST API, with its delegated authentication (as the
	// scheduler's ServiceAccount asks the API server), when it serves one.
	if u := c.restUsage(s, m, ""); u != nil && !strings.Contains(u["users"], `"alice"`) {
		t.Errorf("REST usage/users lacks alice: %s", u["users"])
	}

	s.requireNoForbidden(t)
}

// objsOfKind returns the objects of one kind.
func objsOfKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// refusal is the message of a pod's PodScheduled=False condition.
func refusal(p *v1.Pod) string {
	for _, cond := range p.Status.Conditions {
		if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse {
			return cond.Message
		}
	}
	return ""
}

// stillPendingCount checks that n pods with the label selector stay unbound
// for d.
func (c *cluster) stillPendingCount(selector string, n int, d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		pods, err := c.client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			c.t.Fatal(err)
		}
		pending := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				pending++
			}
		}
		if pending != n {
			c.t.Fatalf("%d pods of %s unbound, want %d", pending, selector, n)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hasEvent reports whether an events.k8s.io Event with the reason exists in ns.
func (c *cluster) hasEvent(ns, reason string) bool {
	evs, err := c.client.EventsV1().Events(ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

// installed is what installFrom put in the cluster.
type installed struct {
	// source says which install: "manifests/" or the chart.
	source string
	// schedulerConfig is the KubeSchedulerConfiguration of the ConfigMap
	// userquota-scheduler-config (what the Deployment mounts).
	schedulerConfig string
	// kubeconfig authenticates as the ServiceAccount, with a token from the
	// TokenRequest API, as the Deployment's pods do.
	kubeconfig string
	// objects are the install's (kustomize build, helm template); examples
	// are manifests/examples/, in the test namespace.
	objects, examples []*unstructured.Unstructured
	// restToken reads the usage REST API (made on first use).
	restToken string
	// restTLS holds the files of the Secret userquota-scheduler-tls
	// (tls.crt, tls.key, ca.crt): made here for manifests/, which leaves
	// the Secret to the installer; the chart's own for the chart.
	restTLS string
}

// installSource is where an install's objects come from.
type installSource struct {
	name string
	// objects renders the install.
	objects func(t *testing.T) []*unstructured.Unstructured
	// kindDelta is how many objects of a kind it has beyond manifests/
	// (the chart: no Namespace, helm install --create-namespace makes it;
	// the two TLS Secrets it makes).
	kindDelta map[string]int
	// ownsTLS: the install holds the Secret userquota-scheduler-tls.
	ownsTLS bool
}

// manifestsSource is manifests/, built with kustomize in process.
var manifestsSource = installSource{name: "manifests", objects: func(t *testing.T) []*unstructured.Unstructured {
	return kustomizeBuild(t, filepath.Join(repoRoot(t), "manifests"))
}}

// installSources are the installs TestManifests checks.
var installSources = []installSource{manifestsSource, chartSource()}

// installManifests is installFrom(manifestsSource).
func (c *cluster) installManifests() *installed {
	c.t.Helper()
	return c.installFrom(manifestsSource)
}

// installFrom applies an install (manifests/ or the chart) and
// manifests/examples/ with a server-side dry-run, then everything of the
// install for real except the Deployments (nothing here runs its pods;
// tests run the binary themselves) and the webhook configurations, and
// mints a token for the ServiceAccount.
func (c *cluster) installFrom(src installSource) *installed {
	c.t.Helper()
	root := repoRoot(c.t)
	objs := src.objects(c.t)
	examples := readManifests(c.t, filepath.Join(root, "manifests", "examples"))
	for _, o := range examples {
		o.SetNamespace(c.ns)
	}
	if len(examples) < 2 {
		c.t.Fatalf("manifests/examples/ has %d objects, want a Job and a Deployment", len(examples))
	}
	// A namespaced object cannot be dry-run into a namespace that does not
	// exist yet: the namespaces go first, for real (kustomize puts them
	// first; helm install --create-namespace makes the chart's).
	if len(objsOfKind(objs, "Namespace")) == 0 {
		ns := &unstructured.Unstructured{}
		ns.SetAPIVersion("v1")
		ns.SetKind("Namespace")
		ns.SetName(systemNamespace)
		c.apply(ns, false)
	}
	for _, o := range objsOfKind(objs, "Namespace") {
		c.apply(o, true)
		c.apply(o, false)
	}
	for _, o := range append(append([]*unstructured.Unstructured{}, objs...), examples...) {
		c.apply(o, true)
	}
	m := &installed{source: src.name, objects: objs, examples: examples}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		switch o.GetKind() {
		case "Deployment", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			// Dry-run only: no pods run here, and webhook configurations
			// without a running webhook would refuse the examples' pods
			// (TestWebhookIdentity runs the webhook for real).
			continue
		}
		c.apply(o, false)
		if o.GetKind() == "ConfigMap" && o.GetName() == schedulerConfigCM {
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			m.schedulerConfig = data[schedulerConfigFn]
		}
	}
	for kind, n := range map[string]int{"Namespace": 1, "ServiceAccount": 2, "ClusterRole": 2, "ClusterRoleBinding": 4, "Role": 1, "RoleBinding": 2,
		"ConfigMap": 2, "Deployment": 2, "Service": 3, "PodDisruptionBudget": 2,
		"MutatingWebhookConfiguration": 1, "ValidatingWebhookConfiguration": 1, "NetworkPolicy": 2, "Secret": 0} {
		if want := n + src.kindDelta[kind]; kinds[kind] != want {
			c.t.Errorf("%s has %d %s objects, want %d", src.name, kinds[kind], kind, want)
		}
	}
	c.checkWebhookPolicy(m)
	if m.schedulerConfig == "" {
		c.t.Fatalf("%s has no ConfigMap %s with key %s", src.name, schedulerConfigCM, schedulerConfigFn)
	}
	if src.ownsTLS {
		m.restTLS = writeSecretFiles(c.t, objs, schedulerTLSSecret)
	} else {
		m.restTLS = newTestCA(c.t).writeSecret(c.t, m.schedulerRESTHost(c))
	}
	// The API server's RBAC authorizer reads bindings from informers: wait
	// until it has each of the four, so that the scheduler is not refused
	// a request in the first milliseconds (which the test would take for a
	// missing permission).
	c.waitAuthorized("system:serviceaccount:"+systemNamespace+":"+serviceAccount,
		// system:kube-scheduler
		authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "binding", Namespace: c.ns},
		// system:volume-scheduler
		authorizationv1.ResourceAttributes{Verb: "list", Group: "storage.k8s.io", Resource: "storageclasses"},
		// our ClusterRole on PodGroups
		authorizationv1.ResourceAttributes{Verb: "watch", Group: "scheduling.x-k8s.io", Resource: "podgroups"},
		// our Role
		authorizationv1.ResourceAttributes{Verb: "watch", Group: "coordination.k8s.io", Resource: "leases", Namespace: systemNamespace, Name: leaseName},
		// extension-apiserver-authentication-reader
		authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Namespace: "kube-system", Name: "extension-apiserver-authentication"},
	)
	tr, err := c.client.CoreV1().ServiceAccounts(systemNamespace).CreateToken(c.ctx, serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("token for the ServiceAccount: %v", err)
	}
	cfg := rest.AnonymousClientConfig(c.config)
	cfg.BearerToken = tr.Status.Token
	m.kubeconfig = filepath.Join(c.t.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfig(m.kubeconfig, cfg); err != nil {
		c.t.Fatal(err)
	}
	return m
}

// The webhook's NetworkPolicy as docs/install.md ("Network policy")
// documents it: only TCP 8443 to the webhook's pods, only from the
// control plane's range, shipped as the placeholder 192.0.2.0/24 that an
// overlay replaces.
const (
	webhookPolicy    = "userquota-webhook"
	webhookPort      = 8443
	controlPlaneCIDR = "192.0.2.0/24"
)

// checkWebhookPolicy reads the NetworkPolicy userquota-webhook back from
// the API server and checks what it says: it selects the pods of the
// webhook's Deployment (manifests/webhook.yaml) and of no other, for
// ingress alone, and admits TCP 8443, the port that Deployment's
// container serves, from the control plane's range and from nowhere
// else. No CNI runs here: this is what an enforcing one would enforce,
// not enforcement.
func (c *cluster) checkWebhookPolicy(m *installed) {
	c.t.Helper()
	np, err := c.client.NetworkingV1().NetworkPolicies(systemNamespace).Get(c.ctx, webhookPolicy, metav1.GetOptions{})
	if err != nil {
		c.t.Errorf("the webhook's NetworkPolicy %s/%s: %v", systemNamespace, webhookPolicy, err)
		return
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		c.t.Fatalf("NetworkPolicy %s: podSelector: %v", webhookPolicy, err)
	}
	for _, o := range objsOfKind(m.objects, "Deployment") {
		d := m.deployment(c, o.GetName())
		webhook := d.Name == webhookDeployment
		if got := sel.Matches(labels.Set(d.Spec.Template.Labels)); got != webhook {
			c.t.Errorf("NetworkPolicy %s (podSelector %s) selects the pods of Deployment %s: %v, want %v", webhookPolicy, sel, d.Name, got, webhook)
		}
		if webhook && !servesPort(d, webhookPort) {
			c.t.Errorf("Deployment %s serves no container port %d, the one NetworkPolicy %s admits", d.Name, webhookPort, webhookPolicy)
		}
	}
	if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes); diff != "" {
		c.t.Errorf("NetworkPolicy %s policyTypes (-want,+got):\n%s", webhookPolicy, diff)
	}
	want := []networkingv1.NetworkPolicyIngressRule{{
		From:  []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: controlPlaneCIDR}}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(v1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(webhookPort))}},
	}}
	if diff := cmp.Diff(want, np.Spec.Ingress); diff != "" {
		c.t.Errorf("NetworkPolicy %s ingress (-want,+got):\n%s", webhookPolicy, diff)
	}
}

// servesPort reports whether a container of d declares the TCP port.
func servesPort(d *appsv1.Deployment, port int32) bool {
	for _, ctr := range d.Spec.Template.Spec.Containers {
		for _, p := range ctr.Ports {
			if p.ContainerPort == port && (p.Protocol == "" || p.Protocol == v1.ProtocolTCP) {
				return true
			}
		}
	}
	return false
}

// waitAuthorized waits until the API server allows user every one of attrs.
func (c *cluster) waitAuthorized(user string, attrs ...authorizationv1.ResourceAttributes) {
	c.t.Helper()
	for _, a := range attrs {
		c.eventually(fmt.Sprintf("%s may %s %s %s/%s", user, a.Verb, a.Resource, a.Namespace, a.Name), 10*time.Second, func() (bool, error) {
			sar, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(c.ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &a}}, metav1.CreateOptions{})
			if err != nil {
				return false, err
			}
			return sar.Status.Allowed, nil
		})
	}
}

// schedulerConfigFor returns the installed scheduler config with what a
// process on this machine needs: the kubeconfig (kube-scheduler reads
// clientConnection.kubeconfig, not --kubeconfig, when given --config), the
// REST API on loopback with the certificate made for it (the Secret's
// files), and the given leaderElection fields.
func (m *installed) schedulerConfigFor(t *testing.T, leaderElection map[string]any) func(kubeconfig, restAddress string) []byte {
	return func(kubeconfig, restAddress string) []byte {
		out, err := controlplane.ProductionSchedulerConfig([]byte(m.schedulerConfig), kubeconfig, leaderElection,
			map[string]any{"restAddress": restAddress,
				"restCertFile": filepath.Join(m.restTLS, "tls.crt"), "restKeyFile": filepath.Join(m.restTLS, "tls.key")})
		if err != nil {
			t.Fatalf("the scheduler config of %s: %v", m.source, err)
		}
		return out
	}
}

// loadSchedulerConfig loads a KubeSchedulerConfiguration as the binary does.
func loadSchedulerConfig(t *testing.T, text string) *schedconfig.KubeSchedulerConfiguration {
	t.Helper()
	path := filepath.Join(t.TempDir(), schedulerConfigFn)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := options.LoadConfigFromFile(klog.Background(), path)
	if err != nil {
		t.Fatalf("the generated scheduler config: %v", err)
	}
	return cfg
}

func repoRoot(t *testing.T) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// kustomizeBuild is `kubectl kustomize dir`, in process.
func kustomizeBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return decodeObjects(t, dir, out)
}

// readManifests reads every *.yaml file of dir, in name order.
func readManifests(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, decodeObjects(t, f, b)...)
	}
	return objs
}

func decodeObjects(t *testing.T, from string, b []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("%s: %v", from, err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// apply is `kubectl apply --server-side` of one object, with
// --dry-run=server when dryRun.
func (c *cluster) apply(obj *unstructured.Unstructured, dryRun bool) {
	c.t.Helper()
	if c.mapper == nil {
		c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.client.Discovery()))
		c.dynamic = dynamic.NewForConfigOrDie(c.config)
	}
	gvk := obj.GroupVersionKind()
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		c.t.Fatalf("%s %s: %v", gvk.Kind, obj.GetName(), err)
	}
	opts := metav1.ApplyOptions{FieldManager: "userquota-test", Force: true}
	what := "apply"
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
		what = "server-side dry-run apply"
	}
	var ri dynamic.ResourceInterface = c.dynamic.Resource(mapping.Resource)
	if ns := obj.GetNamespace(); ns != "" {
		ri = c.dynamic.Resource(mapping.Resource).Namespace(ns)
	}
	if _, err := ri.Apply(c.ctx, obj.GetName(), obj, opts); err != nil {
		c.t.Fatalf("%s of %s %s/%s: %v", what, gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
}

// leaseHolder is the holder of the scheduler's leader-election Lease ("" if none).
func (c *cluster) leaseHolder() string {
	l, err := c.client.CoordinationV1().Leases(systemNamespace).Get(c.ctx, leaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// readerToken returns a token for a new ServiceAccount allowed to get the
// non-resource URLs: a Prometheus scraper's (/metrics), a dashboard's (the
// REST API).
func (c *cluster) readerToken(name string, urls ...string) string {
	c.t.Helper()
	if _, err := c.client.CoreV1().ServiceAccounts(c.ns).Create(c.ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: urls, Verbs: []string{"get"}}}}
	if _, err := c.client.RbacV1().ClusterRoles().Create(c.ctx, role, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: c.ns, Name: name}}}
	if _, err := c.client.RbacV1().ClusterRoleBindings().Create(c.ctx, binding, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	tr, err := c.client.CoreV1().ServiceAccounts(c.ns).CreateToken(c.ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return tr.Status.Token
}

// ---------------------------------------------------------------------
// The scheduler binary, run as a process of its own: two schedulers with
// leader election cannot share one process (kube-scheduler registers
// process-global state, e.g. configz), and the binary is what ships.

// built is the scheduler binary the tests run, built once per test binary
// (removed by TestMain) unless USERQUOTA_SCHEDULER_BIN names one.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// schedulerBinary returns the path of the userquota-scheduler binary. It is
// built with plain `go build`, so it links the packages this test binary
// was compiled from; `make build` adds only static linking and -trimpath
// (USERQUOTA_SCHEDULER_BIN=bin/userquota-scheduler runs that one).
func schedulerBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if p := os.Getenv("USERQUOTA_SCHEDULER_BIN"); p != "" {
			built.path, built.err = filepath.Abs(p)
			return
		}
		built.dir, built.err = os.MkdirTemp("", "userquota-scheduler-bin")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "userquota-scheduler")
		start := time.Now()
		cmd := exec.Command("go", "build", "-o", built.path, "./cmd/scheduler")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/scheduler: %v\n%s", err, out)
			return
		}
		t.Logf("built the scheduler binary in %.1fs", time.Since(start).Seconds())
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// removeBuiltBinaries removes what schedulerBinary built (from TestMain).
func removeBuiltBinaries() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// schedulerProcess is a userquota-scheduler started by startSchedulerProcess.
type schedulerProcess struct {
	*controlplane.Scheduler
	restPort int
}

// startSchedulerProcess runs the binary with the config that config makes
// for its kubeconfig and REST address, its HTTPS server (health, metrics)
// on a free loopback port, and delegated authentication and authorization
// through kubeconfig (what a pod gets from its ServiceAccount). It waits
// until /healthz answers; the test's cleanup stops it.
func (c *cluster) startSchedulerProcess(name string, config func(kubeconfig, restAddress string) []byte, kubeconfig string) *schedulerProcess {
	c.t.Helper()
	bin := schedulerBinary(c.t)
	dir := c.t.TempDir()
	restPort, err := etcdtest.FreePort()
	if err != nil {
		c.t.Fatal(err)
	}
	s, err := controlplane.NewScheduler(controlplane.SchedulerOptions{
		Name: name, Binary: bin, LogDir: dir, Verbosity: 2,
		Config: config(kubeconfig, fmt.Sprintf("127.0.0.1:%d", restPort)), ConfigFile: filepath.Join(dir, schedulerConfigFn),
		Kubeconfig: kubeconfig,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	p := &schedulerProcess{Scheduler: s, restPort: restPort}
	if err := p.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		p.Stop(10 * time.Second)
		if c.t.Failed() {
			c.t.Logf("last lines of scheduler %s's log:\n%s", p.Name, p.LogTail(40))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if code, _, err := p.request("/healthz", ""); err == nil && code == http.StatusOK {
			return p
		}
		if !p.Running() {
			c.t.Fatalf("scheduler %s exited: %v\n%s", name, p.ExitStatus(), p.LogTail(40))
		}
		// A missing permission can keep it from starting (a ConfigMap or an
		// informer it waits for): say so now rather than at the timeout.
		if bad := p.forbiddenLines(); bad != "" {
			c.t.Fatalf("scheduler %s was refused requests while starting (a permission missing from manifests/rbac.yaml?):\n%s", name, bad)
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("scheduler %s: /healthz not ok after 60s\n%s", name, p.LogTail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// request GETs path from the scheduler's HTTPS server, with a bearer token
// unless token is empty.
func (p *schedulerProcess) request(path, token string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code, body, err := p.Get(ctx, path, token)
	return code, string(body), err
}

// get GETs path and fails the test unless the status is want.
func (p *schedulerProcess) get(t *testing.T, path, token string, want int) string {
	t.Helper()
	code, body, err := p.request(path, token)
	if err != nil {
		t.Fatalf("scheduler %s GET %s: %v", p.Name, path, err)
	}
	if code != want {
		t.Fatalf("scheduler %s GET %s: status %d, want %d: %.300s", p.Name, path, code, want, body)
	}
	return body
}

// acquiredLease reports whether the process has logged that it leads.
func (p *schedulerProcess) acquiredLease() bool {
	// client-go's leaderelection: "Successfully acquired lease" (older
	// versions: "successfully acquired lease").
	return strings.Contains(strings.ToLower(p.Log()), "successfully acquired lease")
}

// forbidden matches the API server's answer to a request RBAC denies, as
// client-go and kube-scheduler log it ("... is forbidden: User ...").
var forbidden = regexp.MustCompile(`(?i)forbidden`)

// requireNoForbidden fails the test if the scheduler was refused anything:
// a permission the manifests' RBAC lacks. Some of those kube-scheduler only
// logs and carries on without (its /metrics authentication config), so the
// log is the place to look.
func (p *schedulerProcess) requireNoForbidden(t *testing.T) {
	t.Helper()
	if bad := p.forbiddenLines(); bad != "" {
		t.Errorf("scheduler %s was refused requests (a permission missing from manifests/rbac.yaml?):\n%s", p.Name, bad)
	}
}

// forbiddenLines returns the log lines about refused requests, if any.
func (p *schedulerProcess) forbiddenLines() string {
	var bad []string
	for _, l := range strings.Split(p.Log(), "\n") {
		if forbidden.MatchString(l) {
			bad = append(bad, l)
		}
	}
	return strings.Join(bad, "\n")
}
