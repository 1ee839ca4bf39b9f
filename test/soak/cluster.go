package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/userquota/userquota/test/internal/controlplane"
	"github.com/userquota/userquota/test/internal/etcdtest"
)

const (
	systemNamespace = "userquota-system"
	leaseName       = "userquota-scheduler"
)

// podNamespaces hold the workload.
var podNamespaces = []string{"soak-a", "soak-b"}

// replica is one scheduler process slot ("a", "b"): the same ports and
// config every time it is started again.
type replica struct {
	*controlplane.Scheduler
	slot       string
	restPort   int
	acquired   atomic.Bool
	acquiredAt atomic.Int64 // unix nanos
}

// auditLog collects the scheduler's audit repairs (pkg/plugins/userquota,
// audit.go): each is a charge a lost informer event left wrong.
type auditLog struct {
	mu    sync.Mutex
	lines []string
}

func (a *auditLog) add(line string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lines = append(a.lines, line)
}

func (a *auditLog) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.lines...)
}

func (r *replica) leading() bool { return r.Running() && r.acquired.Load() }

// cluster is the control plane and the scheduler replicas.
type cluster struct {
	o                 *options
	dir, logDir, pki  string
	etcdURL           string
	apiPort           int
	apiserver         *controlplane.Process
	kcm, kwok         *controlplane.Process
	replicas          []*replica
	client            kubernetes.Interface
	adminToken        string
	adminKC, schedKC  string
	kcmKC             string
	apiStartedAt      atomic.Int64
	stopEtcd          func()
	restClient        *http.Client
	mu                sync.Mutex
	unplannedExits    []string
	unplannedRestarts int
	audits            auditLog
}

func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func freePort() int {
	p, err := etcdtest.FreePort()
	if err != nil {
		panic(err)
	}
	return p
}

// newCluster prepares credentials and config; start brings it up.
func newCluster(o *options, dir string) (*cluster, error) {
	c := &cluster{o: o, dir: dir, logDir: filepath.Join(dir, "logs"), pki: filepath.Join(dir, "pki"),
		restClient: &http.Client{Timeout: 10 * time.Second}}
	for _, d := range []string{c.logDir, c.pki} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(c.pki, "sa.key"), keyPEM, 0o600); err != nil {
		return nil, err
	}
	c.adminToken = token()
	schedToken, kcmToken := token(), token()
	// Every client is in system:masters: the soak is about usage, not RBAC
	// (the integration tier checks the manifests' RBAC).
	tokens := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n%s,userquota-scheduler,userquota-scheduler,\"system:masters\"\n%s,system:kube-controller-manager,kcm,\"system:masters\"\n",
		c.adminToken, schedToken, kcmToken)
	if err := os.WriteFile(filepath.Join(c.pki, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return nil, err
	}
	c.apiPort = freePort()
	c.adminKC = filepath.Join(c.pki, "admin.kubeconfig")
	c.schedKC = filepath.Join(c.pki, "scheduler.kubeconfig")
	c.kcmKC = filepath.Join(c.pki, "kcm.kubeconfig")
	for _, kc := range []struct{ path, token string }{{c.adminKC, c.adminToken}, {c.schedKC, schedToken}, {c.kcmKC, kcmToken}} {
		if err := controlplane.WriteKubeconfig(kc.path, c.restConfig(kc.token)); err != nil {
			return nil, err
		}
	}
	bin := func(name string) string { return filepath.Join(o.toolsDir, name) }
	// Its arguments name etcd, which start runs first.
	c.apiserver = &controlplane.Process{Name: "kube-apiserver", Path: bin("kube-apiserver"), LogDir: c.logDir}
	kcmPort := freePort()
	c.kcm = &controlplane.Process{Name: "kube-controller-manager", Path: bin("kube-controller-manager"), LogDir: c.logDir, Args: []string{
		"--kubeconfig", c.kcmKC,
		"--controllers", "deployment-controller,replicaset-controller,statefulset-controller,job-controller,garbage-collector-controller",
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(kcmPort),
		"--profiling=false",
	}}
	kwokPort := freePort()
	stages := []string{
		filepath.Join(o.repoRoot, "hack/kwok/node-initialize.yaml"),
		filepath.Join(o.repoRoot, "hack/kwok/node-heartbeat-with-lease.yaml"),
		filepath.Join(o.repoRoot, "hack/kwok/pod-ready.yaml"),
		filepath.Join(o.repoRoot, "hack/kwok/pod-delete.yaml"),
		filepath.Join(o.repoRoot, "test/soak/kwok/pod-complete.yaml"),
	}
	c.kwok = &controlplane.Process{Name: "kwok", Path: bin("kwok"), LogDir: c.logDir, Args: []string{
		"--kubeconfig", c.adminKC,
		"--config", strings.Join(stages, ","),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake",
		"--node-ip", "127.0.0.1", "--node-port", fmt.Sprint(kwokPort),
		"--cidr", "10.244.0.0/16",
		"--server-address", fmt.Sprintf("127.0.0.1:%d", kwokPort),
		"--node-lease-duration-seconds", "40",
	}}
	for i := 0; i < o.replicas; i++ {
		r := &replica{slot: string(rune('a' + i)), restPort: freePort()}
		cfg, err := schedulerConfig(o, c.schedKC, r.restPort)
		if err != nil {
			return nil, err
		}
		r.Scheduler, err = controlplane.NewScheduler(controlplane.SchedulerOptions{
			Name: "scheduler-" + r.slot, Binary: o.schedulerBin, LogDir: c.logDir, Verbosity: o.verbosity,
			Config: cfg, ConfigFile: filepath.Join(dir, "scheduler-"+r.slot+".yaml"),
			Kubeconfig: c.schedKC,
		})
		if err != nil {
			return nil, err
		}
		r.OnLine = func(line string) {
			if strings.Contains(line, "Audit: released") || strings.Contains(line, "Audit: charged") {
				c.audits.add("scheduler-" + r.slot + ": " + line)
			}
			// client-go's leaderelection: "successfully acquired lease ...".
			if strings.Contains(strings.ToLower(line), "successfully acquired lease") {
				r.acquiredAt.Store(time.Now().UnixNano())
				r.acquired.Store(true)
			}
		}
		c.replicas = append(c.replicas, r)
	}
	return c, nil
}

// restConfig connects to the API server with a token, trusting the
// certificate it generates in the pki folder.
func (c *cluster) restConfig(token string) *rest.Config {
	return &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", c.apiPort), BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(c.pki, "apiserver.crt")}}
}

// apiserverArgs: as hack/local-up.sh, without the admission plugins that
// need controllers the soak does not run (ServiceAccount: no
// serviceaccount-controller; TaintNodesByCondition: no
// node-lifecycle-controller, whose NotReady taints would also evict pods
// while kwok is stopped for a quiet check).
func (c *cluster) apiserverArgs() []string {
	return []string{
		"--etcd-servers", c.etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", fmt.Sprint(c.apiPort),
		"--cert-dir", c.pki,
		"--token-auth-file", filepath.Join(c.pki, "tokens.csv"),
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", filepath.Join(c.pki, "sa.key"),
		"--service-account-signing-key-file", filepath.Join(c.pki, "sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/24",
		"--endpoint-reconciler-type", "none",
		"--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition",
		"--profiling=false",
	}
}

// schedulerConfig is manifests/scheduler-config.yaml (the production
// config: leader election, UserQuota at PreFilter and Reserve) with the
// harness's kubeconfig, a loopback REST address without authentication
// (plain HTTP, so no certificate), shorter leader election (a SIGKILLed
// leader's Lease expires sooner) and requireUserInfo off (no webhook
// here; some pods run as the default user).
func schedulerConfig(o *options, kc string, restPort int) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(o.repoRoot, "manifests/scheduler-config.yaml"))
	if err != nil {
		return nil, err
	}
	cfg, err := controlplane.ProductionSchedulerConfig(b, kc,
		map[string]any{
			"leaseDuration": o.leaseDuration.String(),
			"renewDeadline": o.renewDeadline.String(),
			"retryPeriod":   o.retryPeriod.String(),
		},
		map[string]any{
			"restAddress":     fmt.Sprintf("127.0.0.1:%d", restPort),
			"restAuth":        false,
			"restCertFile":    "",
			"restKeyFile":     "",
			"requireUserInfo": false,
		})
	if err != nil {
		return nil, fmt.Errorf("manifests/scheduler-config.yaml: %w", err)
	}
	return cfg, nil
}

// start brings up etcd, the API server, the controllers, kwok with the
// nodes, the first queue config and the scheduler replicas.
func (c *cluster) start(ctx context.Context, firstConfig *qconfig) error {
	u, stop, err := etcdtest.Start(etcdtest.Options{Name: "soak", LogLevel: "fatal", QuotaBackendBytes: 8 << 30})
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	c.etcdURL, c.stopEtcd = u, stop
	c.apiserver.Args = c.apiserverArgs()
	if err := c.startAPIServer(ctx); err != nil {
		return err
	}
	cfg := c.restConfig(c.adminToken)
	cfg.QPS, cfg.Burst, cfg.Timeout = 500, 1000, 15*time.Second
	if c.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	for _, ns := range append([]string{systemNamespace}, podNamespaces...) {
		if _, err := c.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if err := controlplane.SetConfigData(ctx, c.client, systemNamespace, firstConfig.data()); err != nil {
		return err
	}
	if c.o.controllers {
		if err := c.kcm.Start(); err != nil {
			return err
		}
	}
	if err := c.kwok.Start(); err != nil {
		return err
	}
	for i := 0; i < c.o.nodes; i++ {
		capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1000"), v1.ResourceMemory: resource.MustParse("4Ti"), v1.ResourcePods: resource.MustParse("2000")}
		n := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kwok-node-%d", i),
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": fmt.Sprintf("kwok-node-%d", i)}},
			Status: v1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if err := c.waitFor(ctx, "kwok nodes Ready", 90*time.Second, func() (bool, error) {
		nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == v1.NodeReady && cond.Status == v1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == c.o.nodes, nil
	}); err != nil {
		return err
	}
	for _, r := range c.replicas {
		if err := c.startReplica(r); err != nil {
			return err
		}
	}
	_, err = c.waitLeader(ctx, 120*time.Second)
	return err
}

func (c *cluster) startAPIServer(ctx context.Context) error {
	if err := c.apiserver.Start(); err != nil {
		return err
	}
	c.apiStartedAt.Store(time.Now().UnixNano())
	return c.waitFor(ctx, "kube-apiserver /readyz", 180*time.Second, func() (bool, error) {
		if !c.apiserver.Running() {
			return false, fmt.Errorf("kube-apiserver exited (%s):\n%s", c.apiserver.ExitStatus(), c.apiserver.LogTail(30))
		}
		return c.apiReady(), nil
	})
}

func (c *cluster) apiReady() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	code, _, err := controlplane.Get(ctx, fmt.Sprintf("https://127.0.0.1:%d/readyz", c.apiPort), c.adminToken)
	return err == nil && code == http.StatusOK
}

func (c *cluster) startReplica(r *replica) error {
	r.acquired.Store(false)
	return r.Start()
}

// leader returns the replica that holds the Lease: it logged acquiring it
// and still runs (kube-scheduler exits when it loses the Lease).
func (c *cluster) leader() *replica {
	var l *replica
	for _, r := range c.replicas {
		if r.leading() {
			if l != nil {
				// Two processes that each acquired the Lease: the older
				// lost it and has not exited yet. Not a leader to trust.
				return nil
			}
			l = r
		}
	}
	return l
}

// waitLeader waits for a leader whose usage API answers.
func (c *cluster) waitLeader(ctx context.Context, timeout time.Duration) (*replica, error) {
	var l *replica
	err := c.waitFor(ctx, "a scheduler leader serving usage", timeout, func() (bool, error) {
		l = c.leader()
		if l == nil {
			return false, nil
		}
		code, _, err := c.restGet(l, "/readyz")
		return err == nil && code == http.StatusOK, nil
	})
	return l, err
}

func (c *cluster) restGet(r *replica, path string) (int, []byte, error) {
	resp, err := c.restClient.Get(fmt.Sprintf("http://127.0.0.1:%d%s", r.restPort, path))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var b []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b, nil
}

func (c *cluster) waitFor(ctx context.Context, what string, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stopAll stops every process, schedulers first, and etcd.
func (c *cluster) stopAll() {
	for _, r := range c.replicas {
		r.Stop(10 * time.Second)
	}
	c.kwok.Stop(10 * time.Second)
	c.kcm.Stop(10 * time.Second)
	c.apiserver.Stop(30 * time.Second)
	if c.stopEtcd != nil {
		c.stopEtcd()
	}
}
