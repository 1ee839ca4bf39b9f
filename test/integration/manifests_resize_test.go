package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/userquota/userquota/pkg/plugins/userquota"
	"github.com/userquota/userquota/pkg/webhook"
)

// The webhook of manifests/ and its resize check (webhook.yaml).
const (
	webhookDeployment     = "userquota-webhook"
	webhookServiceAccount = "userquota-webhook"
	schedulerTLSSecret    = "userquota-scheduler-tls"
)

// deployment returns the Deployment name of manifests/.
func (m *installed) deployment(c *cluster, name string) *appsv1.Deployment {
	c.t.Helper()
	for _, o := range objsOfKind(m.objects, "Deployment") {
		if o.GetName() == name {
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
				c.t.Fatal(err)
			}
			return &d
		}
	}
	c.t.Fatalf("%s has no Deployment %s", m.source, name)
	return nil
}

// flagValue returns the value of --name=value in args ("" if absent).
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// mountedVolume returns the volume mounted at the directory of file.
func mountedVolume(spec *v1.PodSpec, file string) *v1.Volume {
	for _, ct := range spec.Containers {
		for _, vm := range ct.VolumeMounts {
			if vm.MountPath != path.Dir(file) {
				continue
			}
			for i := range spec.Volumes {
				if spec.Volumes[i].Name == vm.Name {
					return &spec.Volumes[i]
				}
			}
		}
	}
	return nil
}

// schedulerRESTHost returns the host of the webhook's --scheduler-url in
// manifests/ (the name the scheduler's REST certificate must carry).
func (m *installed) schedulerRESTHost(c *cluster) string {
	c.t.Helper()
	d := m.deployment(c, webhookDeployment)
	u, err := url.Parse(flagValue(d.Spec.Template.Spec.Containers[0].Args, "scheduler-url"))
	if err != nil || u.Hostname() == "" {
		c.t.Fatalf("webhook.yaml: --scheduler-url %v: want https://host:port", err)
	}
	return u.Hostname()
}

// checkResizeWiring checks, on manifests/ as installed, that the webhook's
// resize check reaches the leading scheduler as manifests/ wire it: its
// --scheduler-url names the headless Service of the scheduler's REST port;
// the token file is a projected ServiceAccount token and the CA file the
// ca.crt of the Secret whose certificate the scheduler serves
// (restCertFile in its config, mounted from that Secret); and, with a
// token for the webhook's ServiceAccount and only the manifests' RBAC,
// the check answers from the running scheduler s: a resize that would
// take alice over her 500m in root.batch is refused with the scheduler's
// reason, one that does not grow fits.
func (c *cluster) checkResizeWiring(m *installed, s *schedulerProcess) {
	c.t.Helper()
	spec := m.deployment(c, webhookDeployment).Spec.Template.Spec
	args := spec.Containers[0].Args
	u, _ := url.Parse(flagValue(args, "scheduler-url"))
	svcName, svcNS, _ := strings.Cut(strings.TrimSuffix(u.Hostname(), ".svc"), ".")
	var headless bool
	for _, o := range objsOfKind(m.objects, "Service") {
		ip, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP")
		headless = headless || o.GetName() == svcName && o.GetNamespace() == svcNS && ip == v1.ClusterIPNone
	}
	if u.Scheme != "https" || u.Port() != "9089" || !headless {
		c.t.Errorf("--scheduler-url %s: want https to a headless Service of manifests/ on the REST port 9089", u)
	}
	if v := mountedVolume(&spec, flagValue(args, "scheduler-token-file")); v == nil || v.Projected == nil ||
		len(v.Projected.Sources) != 1 || v.Projected.Sources[0].ServiceAccountToken == nil || path.Base(flagValue(args, "scheduler-token-file")) != v.Projected.Sources[0].ServiceAccountToken.Path {
		c.t.Errorf("--scheduler-token-file %s: want a file of a projected ServiceAccount token volume", flagValue(args, "scheduler-token-file"))
	}
	if v := mountedVolume(&spec, flagValue(args, "scheduler-ca-file")); v == nil || v.Secret == nil || v.Secret.SecretName != schedulerTLSSecret {
		c.t.Errorf("--scheduler-ca-file %s: want ca.crt of the Secret %s", flagValue(args, "scheduler-ca-file"), schedulerTLSSecret)
	}
	sched := m.deployment(c, "userquota-scheduler").Spec.Template.Spec
	var cfg struct {
		Profiles []struct {
			PluginConfig []struct {
				Name string
				Args userquota.Args
			} `json:"pluginConfig"`
		}
	}
	if err := yaml.Unmarshal([]byte(m.schedulerConfig), &cfg); err != nil || len(cfg.Profiles) != 1 {
		c.t.Fatalf("the scheduler config of %s: %v, %d profiles", m.source, err, len(cfg.Profiles))
	}
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name != userquota.Name {
			continue
		}
		for _, f := range []string{pc.Args.RESTCertFile, pc.Args.RESTKeyFile} {
			if v := mountedVolume(&sched, f); v == nil || v.Secret == nil || v.Secret.SecretName != schedulerTLSSecret {
				c.t.Errorf("restCertFile/restKeyFile %q: want a file of the Secret %s mounted in the scheduler's Deployment", f, schedulerTLSSecret)
			}
		}
	}

	// The webhook's token, and the manifests' RBAC for it.
	nonResource := "/ws/v1/partition/default/check/resize"
	user := "system:serviceaccount:" + systemNamespace + ":" + webhookServiceAccount
	c.eventually(user+" may get "+nonResource, 10*time.Second, func() (bool, error) {
		sar, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(c.ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: nonResource, Verb: "get"}}}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed, err
	})
	tr, err := c.client.CoreV1().ServiceAccounts(systemNamespace).CreateToken(c.ctx, webhookServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	tokenFile := filepath.Join(c.t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(tr.Status.Token), 0o600); err != nil {
		c.t.Fatal(err)
	}
	// The Service's name resolves to the scheduler here; its port is the
	// process's.
	lookup := func(context.Context, string) ([]string, error) { return []string{"127.0.0.1"}, nil }
	check, err := webhook.SchedulerResizeChecker(fmt.Sprintf("https://%s", net.JoinHostPort(u.Hostname(), fmt.Sprint(s.restPort))),
		userquota.DefaultPartition, tokenFile, filepath.Join(m.restTLS, "ca.crt"), lookup)
	if err != nil {
		c.t.Fatal(err)
	}
	pods, err := c.client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{LabelSelector: "job-name=example-alice"})
	if err != nil {
		c.t.Fatal(err)
	}
	var running *v1.Pod
	for i := range pods.Items {
		if pods.Items[i].Spec.NodeName != "" {
			running = &pods.Items[i]
		}
	}
	if running == nil {
		c.t.Fatal("no pod of example-alice runs")
	}
	for _, tc := range []struct {
		cpu        string
		fits       bool
		wantReason string
	}{
		{cpu: "250m", fits: true},
		{cpu: "500m", wantReason: `user "alice" would exceed maxresources in root.batch`},
	} {
		p := running.DeepCopy()
		p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse(tc.cpu)
		body, _ := json.Marshal(p)
		answer, err := check(c.ctx, body)
		if err != nil {
			c.t.Errorf("resize check of %s to %s as the webhook: %v", running.Name, tc.cpu, err)
			continue
		}
		if !answer.Charged || answer.Fits != tc.fits || !strings.Contains(answer.Reason, tc.wantReason) {
			c.t.Errorf("resize of %s to %s: %+v, want charged, fits %v, reason %q", running.Name, tc.cpu, answer, tc.fits, tc.wantReason)
		}
	}
}
