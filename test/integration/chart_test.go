package integration

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/userquota/userquota/pkg/plugins/userquota"
)

// The chart of issue 22 point 4, and how the tests render it.
const (
	chartDir     = "charts/userquota"
	chartRelease = "userquota"
	// webhookTLSSecret is the Secret the webhook serves from.
	webhookTLSSecret = "userquota-webhook-tls"
)

// chartSource is the chart charts/userquota rendered by helm template into
// userquota-system, with the given helm flags (--set ...) beside its
// defaults.
func chartSource(flags ...string) installSource {
	return installSource{
		name:      "chart",
		objects:   func(t *testing.T) []*unstructured.Unstructured { return helmTemplate(t, systemNamespace, flags...) },
		kindDelta: map[string]int{"Namespace": -1, "Secret": 2},
		ownsTLS:   true,
	}
}

// helmBinary returns the helm that hack/tools.sh builds (HELM_BIN names
// another). make test-integration builds it first; a test run without it
// is skipped, except under CI (CI set), where it fails.
func helmBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("HELM_BIN")
	if bin == "" {
		bin = filepath.Join(repoRoot(t), "_output", "bin", "helm")
	}
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("no helm at %s (%v): build it with hack/tools.sh helm (make test-integration does), or set HELM_BIN", bin, err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// helm runs the helm binary in the repository's root and returns its
// standard output; a failure fails the test with its standard error.
func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Dir = repoRoot(t)
	// No user's helm configuration, repositories or cache.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out
}

// helmTemplate renders the chart into namespace ns.
func helmTemplate(t *testing.T, ns string, flags ...string) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"template", chartRelease, chartDir, "--namespace", ns}, flags...)
	return decodeObjects(t, "helm template", helm(t, args...))
}

// objectKey names an object: kind, namespace, name.
func objectKey(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// findObject returns the object of objs with that kind and name, or fails.
func findObject(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}

// secretData returns the decoded data of a Secret object.
func secretData(t *testing.T, o *unstructured.Unstructured) map[string][]byte {
	t.Helper()
	data, _, _ := unstructured.NestedStringMap(o.Object, "data")
	out := map[string][]byte{}
	for k, v := range data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatalf("Secret %s: data %s: %v", o.GetName(), k, err)
		}
		out[k] = b
	}
	return out
}

// writeSecretFiles writes the data of the Secret name of objs as files in
// a new directory, as a kubelet mounts it, and returns the directory.
func writeSecretFiles(t *testing.T, objs []*unstructured.Unstructured, name string) string {
	t.Helper()
	dir := t.TempDir()
	for k, v := range secretData(t, findObject(t, objs, "Secret", name)) {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// chartOnly are the labels Helm's conventions add to the chart's objects
// and manifests/ has not; they say which release made an object.
var chartOnly = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

// comparable returns a copy of o as the chart and manifests/ must agree on
// it: without what only one of them has by design (the labels above; the
// keep policy of the queue config, which helm uninstall leaves; the
// checksum/ annotations of pod templates, which roll the pods when the
// config changes; the webhook configurations' caBundle, which manifests/
// leaves to the installer), with the scheduler config parsed (its
// comments are manifests/ scheduler-config.yaml's alone) and the spacing
// of CEL expressions made one.
func comparable(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	o = o.DeepCopy()
	if l := o.GetLabels(); l != nil {
		for _, k := range chartOnly {
			delete(l, k)
		}
		o.SetLabels(l)
	}
	if a := o.GetAnnotations(); a != nil {
		delete(a, "helm.sh/resource-policy")
		if len(a) == 0 {
			unstructured.RemoveNestedField(o.Object, "metadata", "annotations")
		} else {
			o.SetAnnotations(a)
		}
	}
	if a, ok, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "annotations"); ok {
		for k := range a {
			if strings.HasPrefix(k, "checksum/") {
				delete(a, k)
			}
		}
		if len(a) == 0 {
			unstructured.RemoveNestedField(o.Object, "spec", "template", "metadata", "annotations")
		} else {
			_ = unstructured.SetNestedStringMap(o.Object, a, "spec", "template", "metadata", "annotations")
		}
	}
	if hooks, ok, _ := unstructured.NestedSlice(o.Object, "webhooks"); ok {
		for _, h := range hooks {
			unstructured.RemoveNestedField(h.(map[string]any), "clientConfig", "caBundle")
			// CEL ignores the spacing, and kustomize's YAML round trip
			// doubles the line breaks of a folded (>-) expression's
			// more-indented lines.
			conds, _, _ := unstructured.NestedSlice(h.(map[string]any), "matchConditions")
			for _, mc := range conds {
				if e, ok := mc.(map[string]any)["expression"].(string); ok {
					mc.(map[string]any)["expression"] = strings.Join(strings.Fields(e), " ")
				}
			}
			if conds != nil {
				_ = unstructured.SetNestedSlice(h.(map[string]any), conds, "matchConditions")
			}
		}
		_ = unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
	}
	if o.GetKind() == "ConfigMap" && o.GetName() == schedulerConfigCM {
		text, _, _ := unstructured.NestedString(o.Object, "data", schedulerConfigFn)
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
			t.Fatalf("%s: %s: %v", objectKey(o), schedulerConfigFn, err)
		}
		_ = unstructured.SetNestedField(o.Object, cfg, "data", schedulerConfigFn)
	}
	return o.Object
}

// TestChartMatchesManifests checks the chart charts/userquota against
// manifests/, so that the two installs cannot drift apart silently:
// helm lint passes with the defaults and with the other TLS modes and the
// dashboard; rendered with its defaults into userquota-system, the chart
// has exactly the objects of `kubectl kustomize manifests/` but the
// Namespace (helm install --create-namespace makes it) and its two TLS
// Secrets, each equal to manifests/' one but for Helm's labels, pod
// template checksums and the caBundle (scheduler config compared parsed);
// its self-made certificates verify for the Services' names against the
// caBundle and ca.crt; its values reach the objects they set, and no
// object names userquota-system when released into another namespace;
// cert-manager mode makes Certificates instead of Secrets; the dashboard
// ConfigMap holds dashboards/userquota.json as it is. TestManifests then
// runs the scheduler from the rendered chart.
func TestChartMatchesManifests(t *testing.T) {
	helm(t, "lint", "--strict", chartDir)
	helm(t, "lint", "--strict", chartDir, "--set", "tls.mode=certManager,dashboard.enabled=true,networkPolicy.enabled=false")
	helm(t, "lint", "--strict", chartDir, "--set", "tls.mode=provided,tls.caBundle=Cg==")

	chart := helmTemplate(t, systemNamespace)
	manifests := manifestsSource.objects(t)

	t.Run("same objects", func(t *testing.T) {
		want := map[string]*unstructured.Unstructured{}
		for _, o := range manifests {
			if o.GetKind() != "Namespace" {
				want[objectKey(o)] = o
			}
		}
		got := map[string]*unstructured.Unstructured{}
		for _, o := range chart {
			if o.GetKind() != "Secret" {
				got[objectKey(o)] = o
			}
		}
		if diff := cmp.Diff(sortedKeys(want), sortedKeys(got)); diff != "" {
			t.Errorf("objects of manifests/ (less its Namespace) and of the chart (less its Secrets) differ (-manifests,+chart):\n%s", diff)
		}
		for k, m := range want {
			if c, ok := got[k]; ok {
				if diff := cmp.Diff(comparable(t, m), comparable(t, c)); diff != "" {
					t.Errorf("%s differs between manifests/ and the chart: change both (-manifests,+chart):\n%s", k, diff)
				}
			}
		}
		if n := len(objsOfKind(manifests, "Namespace")); n != 1 {
			t.Errorf("manifests/ has %d Namespaces, want 1", n)
		}
	})

	t.Run("self-signed TLS", func(t *testing.T) {
		secrets := objsOfKind(chart, "Secret")
		var names []string
		for _, s := range secrets {
			names = append(names, s.GetName())
		}
		sort.Strings(names)
		if diff := cmp.Diff([]string{schedulerTLSSecret, webhookTLSSecret}, names); diff != "" {
			t.Fatalf("the chart's Secrets (-want,+got):\n%s", diff)
		}
		// The API server calls the webhook by its Service (clientConfig),
		// verified with the caBundle; the webhook calls the scheduler's REST
		// API by --scheduler-url, verified with ca.crt of the scheduler's
		// Secret.
		m := &installed{source: "the chart", objects: chart}
		c := &cluster{t: t}
		restHost := m.schedulerRESTHost(c)
		var bundles []string
		for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
			hooks, _, _ := unstructured.NestedSlice(findObject(t, chart, kind, "userquota-webhook").Object, "webhooks")
			for _, h := range hooks {
				cc := h.(map[string]any)["clientConfig"].(map[string]any)
				svc := cc["service"].(map[string]any)
				if host := fmt.Sprintf("%s.%s.svc", svc["name"], svc["namespace"]); host != "userquota-webhook."+systemNamespace+".svc" {
					t.Errorf("%s %s calls %s", kind, h.(map[string]any)["name"], host)
				}
				b, _ := cc["caBundle"].(string)
				bundles = append(bundles, b)
			}
		}
		caBundle, err := base64.StdEncoding.DecodeString(bundles[0])
		if err != nil || len(bundles) != 4 {
			t.Fatalf("caBundle %q: %v (%d webhooks)", bundles[0], err, len(bundles))
		}
		for _, b := range bundles {
			if b != bundles[0] {
				t.Errorf("the webhooks carry different caBundles")
			}
		}
		webhookTLS := secretData(t, findObject(t, chart, "Secret", webhookTLSSecret))
		restTLS := secretData(t, findObject(t, chart, "Secret", schedulerTLSSecret))
		verifyCert(t, webhookTLSSecret, webhookTLS["tls.crt"], caBundle, "userquota-webhook."+systemNamespace+".svc")
		verifyCert(t, schedulerTLSSecret, restTLS["tls.crt"], restTLS["ca.crt"], restHost)
		if string(restTLS["ca.crt"]) != string(caBundle) || string(webhookTLS["ca.crt"]) != string(caBundle) {
			t.Errorf("the Secrets' ca.crt and the caBundle differ: one CA for both is what the chart makes")
		}
	})

	t.Run("values", func(t *testing.T) {
		queues := filepath.Join(repoRoot(t), "examples", "limits.yaml")
		objs := helmTemplate(t, "team-sched", "--set", "scheduler.replicas=3,webhook.replicas=1,scheduler.perUserMetrics=true",
			"--set", "scheduler.resources.limits.memory=1Gi,networkPolicy.controlPlaneCIDR=10.1.0.0/24",
			"--set", "webhook.submitters={system:serviceaccount:argo:argo-server}",
			"--set-file", "queueConfig="+queues)
		for _, o := range objs {
			// The one object outside: the reader of kube-system's
			// extension-apiserver-authentication ConfigMap.
			if ns := o.GetNamespace(); ns != "" && ns != "team-sched" && (o.GetKind() != "RoleBinding" || ns != "kube-system") {
				t.Errorf("%s: in %s, want the release namespace team-sched", objectKey(o), ns)
			}
		}
		if text := string(helm(t, "template", chartRelease, chartDir, "--namespace", "team-sched")); strings.Contains(text, systemNamespace) {
			t.Errorf("released into team-sched, the chart still names %s", systemNamespace)
		}
		m := &installed{source: "the chart", objects: objs}
		c := &cluster{t: t}
		replicas := map[string]int32{}
		for _, o := range objsOfKind(objs, "Deployment") {
			replicas[o.GetName()] = *m.deployment(c, o.GetName()).Spec.Replicas
		}
		if diff := cmp.Diff(map[string]int32{"userquota-scheduler": 3, webhookDeployment: 1}, replicas); diff != "" {
			t.Errorf("replicas (-want,+got):\n%s", diff)
		}
		sched := m.deployment(c, "userquota-scheduler").Spec.Template.Spec.Containers[0]
		if got := sched.Resources.Limits.Memory().String(); got != "1Gi" {
			t.Errorf("scheduler memory limit %s, want 1Gi", got)
		}
		if got := flagValue(m.deployment(c, webhookDeployment).Spec.Template.Spec.Containers[0].Args, "submitters"); got != "system:serviceaccount:argo:argo-server" {
			t.Errorf("webhook --submitters=%q", got)
		}
		want, err := os.ReadFile(queues)
		if err != nil {
			t.Fatal(err)
		}
		data, _, _ := unstructured.NestedString(findObject(t, objs, "ConfigMap", "userquota-config").Object, "data", "queues.yaml")
		if strings.TrimSpace(data) != strings.TrimSpace(string(want)) {
			t.Errorf("the queue-config ConfigMap does not hold examples/limits.yaml as given (--set-file queueConfig)")
		}
		text, _, _ := unstructured.NestedString(findObject(t, objs, "ConfigMap", schedulerConfigCM).Object, "data", schedulerConfigFn)
		cfg := loadSchedulerConfig(t, text)
		if le := cfg.LeaderElection; le.ResourceNamespace != "team-sched" || le.ResourceName != leaseName {
			t.Errorf("leaderElection on %s/%s, want team-sched/%s", le.ResourceNamespace, le.ResourceName, leaseName)
		}
		for _, want := range []string{"perUserMetrics: true", "configMapNamespace: team-sched", "leaderElectionLease: team-sched/" + leaseName} {
			if !strings.Contains(text, want) {
				t.Errorf("the scheduler config lacks %q:\n%s", want, text)
			}
		}
		ingress, _, _ := unstructured.NestedSlice(findObject(t, objs, "NetworkPolicy", webhookPolicy).Object, "spec", "ingress")
		if got := fmt.Sprint(ingress); !strings.Contains(got, "10.1.0.0/24") {
			t.Errorf("NetworkPolicy %s ingress %s, want from 10.1.0.0/24", webhookPolicy, got)
		}
		if n := len(objsOfKind(helmTemplate(t, "team-sched", "--set", "networkPolicy.enabled=false"), "NetworkPolicy")); n != 0 {
			t.Errorf("networkPolicy.enabled=false: %d NetworkPolicies", n)
		}
	})

	t.Run("cert-manager", func(t *testing.T) {
		for _, tc := range []struct {
			flags   []string
			issuers int
			issuer  string
		}{
			{issuers: 2, issuer: "userquota-ca"},
			{flags: []string{"--set", "tls.certManager.issuerRef.kind=ClusterIssuer,tls.certManager.issuerRef.name=corp-ca"}, issuer: "corp-ca"},
		} {
			objs := helmTemplate(t, systemNamespace, append([]string{"--set", "tls.mode=certManager"}, tc.flags...)...)
			if n := len(objsOfKind(objs, "Secret")); n != 0 {
				t.Errorf("%v: %d Secrets, want none (cert-manager writes them)", tc.flags, n)
			}
			if n := len(objsOfKind(objs, "Issuer")); n != tc.issuers {
				t.Errorf("%v: %d Issuers, want %d", tc.flags, n, tc.issuers)
			}
			certs := map[string]string{}
			for _, o := range objsOfKind(objs, "Certificate") {
				secret, _, _ := unstructured.NestedString(o.Object, "spec", "secretName")
				names, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames")
				issuer, _, _ := unstructured.NestedString(o.Object, "spec", "issuerRef", "name")
				if secret == "userquota-ca" {
					continue
				}
				if issuer != tc.issuer {
					t.Errorf("%v: Certificate %s issued by %s, want %s", tc.flags, o.GetName(), issuer, tc.issuer)
				}
				certs[o.GetName()] = secret + " " + strings.Join(names, ",")
			}
			want := map[string]string{
				"userquota-webhook":        webhookTLSSecret + " userquota-webhook." + systemNamespace + ".svc",
				"userquota-scheduler-rest": schedulerTLSSecret + " userquota-scheduler-rest." + systemNamespace + ".svc",
			}
			if diff := cmp.Diff(want, certs); diff != "" {
				t.Errorf("%v: Certificates (-want,+got):\n%s", tc.flags, diff)
			}
			for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
				o := findObject(t, objs, kind, "userquota-webhook")
				if got := o.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != systemNamespace+"/userquota-webhook" {
					t.Errorf("%v: %s inject-ca-from %q, want the Certificate %s/userquota-webhook", tc.flags, kind, got, systemNamespace)
				}
				if strings.Contains(fmt.Sprint(o.Object), "caBundle") {
					t.Errorf("%v: %s carries a caBundle; cert-manager's injector writes it", tc.flags, kind)
				}
			}
		}
	})

	t.Run("dashboard", func(t *testing.T) {
		if n := len(objsOfKind(chart, "ConfigMap")); n != 2 {
			t.Errorf("the defaults render %d ConfigMaps, want 2 (no dashboard)", n)
		}
		objs := helmTemplate(t, systemNamespace, "--set", "dashboard.enabled=true")
		o := findObject(t, objs, "ConfigMap", "userquota-dashboard")
		got, _, _ := unstructured.NestedString(o.Object, "data", "userquota.json")
		want, err := os.ReadFile(filepath.Join(repoRoot(t), dashboardFile))
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
			t.Errorf("ConfigMap userquota-dashboard does not hold %s as it is", dashboardFile)
		}
		if o.GetLabels()["grafana_dashboard"] != "1" {
			t.Errorf("ConfigMap userquota-dashboard labels %v, want grafana_dashboard: \"1\" (Grafana's sidecar)", o.GetLabels())
		}
	})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// verifyCert checks that the PEM certificate verifies against the PEM CA
// for a server named host.
func verifyCert(t *testing.T, what string, certPEM, caPEM []byte, host string) {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Errorf("%s: tls.crt is no PEM certificate", what)
		return
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Errorf("%s: no CA certificate to verify with", what)
		return
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("%s: its certificate does not verify for %s: %v", what, host, err)
	}
}

// TestChartUpgradeKeepsCertificates: helm install and helm upgrade of the
// chart on a real API server, as docs/install.md describes them. The
// install makes the self-signed CA and certificates; an upgrade (here of
// the replicas) keeps them (the chart reads its Secrets back with lookup),
// so the webhooks' caBundle still verifies the running webhook; after both
// Secrets are deleted, an upgrade makes a new CA and puts it in the
// caBundle (the renewal docs/install.md gives); helm uninstall removes it
// all but the queue config, which kubectl delete then removes.
func TestChartUpgradeKeepsCertificates(t *testing.T) {
	helmBinary(t)
	c := newCluster(t, 0)
	base := []string{"--namespace", systemNamespace, "--kubeconfig", c.kubeconfig}
	helm(t, append([]string{"install", chartRelease, chartDir, "--create-namespace"}, base...)...)
	first := c.installedTLS()
	verifyCert(t, webhookTLSSecret, first[webhookTLSSecret]["tls.crt"], first["caBundle"][""], "userquota-webhook."+systemNamespace+".svc")

	helm(t, append([]string{"upgrade", chartRelease, chartDir, "--set", "scheduler.replicas=3"}, base...)...)
	d, err := c.client.AppsV1().Deployments(systemNamespace).Get(c.ctx, "userquota-scheduler", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 3 {
		t.Fatalf("after helm upgrade --set scheduler.replicas=3: %v, %v", d.Spec.Replicas, err)
	}
	if diff := cmp.Diff(first, c.installedTLS()); diff != "" {
		t.Errorf("helm upgrade changed the certificates or the caBundle (-install,+upgrade):\n%s", diff)
	}

	for _, name := range []string{webhookTLSSecret, schedulerTLSSecret} {
		if err := c.client.CoreV1().Secrets(systemNamespace).Delete(c.ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	helm(t, append([]string{"upgrade", chartRelease, chartDir, "--reuse-values"}, base...)...)
	renewed := c.installedTLS()
	if string(renewed["caBundle"][""]) == string(first["caBundle"][""]) {
		t.Errorf("the Secrets deleted, helm upgrade kept the old CA")
	}
	verifyCert(t, webhookTLSSecret, renewed[webhookTLSSecret]["tls.crt"], renewed["caBundle"][""], "userquota-webhook."+systemNamespace+".svc")
	verifyCert(t, schedulerTLSSecret, renewed[schedulerTLSSecret]["tls.crt"], renewed[schedulerTLSSecret]["ca.crt"], "userquota-scheduler-rest."+systemNamespace+".svc")

	// helm uninstall removes all but the queue config, whose deletion the
	// webhook refuses while its configuration is in the API server's cache
	// (it failed here without the keep policy); deleted after it.
	helm(t, append([]string{"uninstall", chartRelease}, base...)...)
	cms, err := c.client.CoreV1().ConfigMaps(systemNamespace).List(c.ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + chartRelease})
	var left []string
	for _, cm := range cms.Items {
		left = append(left, cm.Name)
	}
	if err != nil || strings.Join(left, ",") != userquota.DefaultConfigMapName {
		t.Errorf("after helm uninstall, ConfigMaps %v left (%v), want the queue config alone", left, err)
	}
	c.eventually("the queue config deleted after helm uninstall", 10*time.Second, func() (bool, error) {
		err := c.client.CoreV1().ConfigMaps(systemNamespace).Delete(c.ctx, userquota.DefaultConfigMapName, metav1.DeleteOptions{})
		return err == nil, nil
	})
}

// installedTLS reads back the chart's two TLS Secrets and the caBundle of
// every webhook (under "caBundle"; all must be the same).
func (c *cluster) installedTLS() map[string]map[string][]byte {
	c.t.Helper()
	out := map[string]map[string][]byte{}
	for _, name := range []string{webhookTLSSecret, schedulerTLSSecret} {
		s, err := c.client.CoreV1().Secrets(systemNamespace).Get(c.ctx, name, metav1.GetOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		out[name] = s.Data
	}
	var bundles [][]byte
	mw, err := c.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(c.ctx, "userquota-webhook", metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, w := range mw.Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	vw, err := c.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(c.ctx, "userquota-webhook", metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, w := range vw.Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	for _, b := range bundles {
		if string(b) != string(bundles[0]) {
			c.t.Fatalf("the webhooks carry different caBundles")
		}
	}
	out["caBundle"] = map[string][]byte{"": bundles[0]}
	return out
}
