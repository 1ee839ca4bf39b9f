// Package controlplane is the control-plane harness every test tier shares
// (test/integration, test/perf, test/soak), as Kubernetes'
// test/integration/util serves both its integration tests and
// scheduler_perf: kubeconfig files, the queue-config ConfigMap, the
// scheduler binary (and the other control-plane binaries of the soak) as
// processes with their logs, and a client for their loopback HTTPS
// servers. etcd and free ports come from its sibling etcdtest; the
// in-process kube-apiserver of the test tiers from its subpackage
// apiserver.
//
// Nothing here needs a *testing.T: the soak is a command, not a test.
// Every call that can fail returns an error for the caller to report.
package controlplane

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig file at path that connects as cfg
// does (server, CA, token or client certificate), for the processes the
// harness starts: they take a file, not a rest.Config.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	const name = "harness"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData,
		CertificateAuthority: cfg.CAFile, InsecureSkipTLSVerify: cfg.Insecure, TLSServerName: cfg.ServerName}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, TokenFile: cfg.BearerTokenFile,
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		ClientCertificate: cfg.CertFile, ClientKey: cfg.KeyFile}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	return clientcmd.WriteToFile(*kc, path)
}

// The ConfigMap and key the UserQuota plugin reads its queue config from by
// default (userquota.DefaultConfigMapName and DefaultConfigMapKey, which
// controlplane_test.go checks these against): repeated here so that the
// soak's binary does not link the plugin and kube-scheduler with it.
const (
	QueueConfigMap = "userquota-config"
	QueueConfigKey = "queues.yaml"
)

// SetQueueConfig creates the queue-config ConfigMap in namespace with yaml,
// or replaces the queue config of the one there (keeping its labels, as an
// edit with kubectl would).
func SetQueueConfig(ctx context.Context, client kubernetes.Interface, namespace, yaml string) error {
	cms := client.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Get(ctx, QueueConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: QueueConfigMap, Namespace: namespace},
			Data: map[string]string{QueueConfigKey: yaml}}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	cm.Data = map[string]string{QueueConfigKey: yaml}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// SetConfigData creates the queue-config ConfigMap in namespace with data
// (the queue config under QueueConfigKey and, say, quota trees under keys
// ending in .tree.json), or replaces the data of the one there (keeping
// its labels). Keys not in data are removed.
func SetConfigData(ctx context.Context, client kubernetes.Interface, namespace string, data map[string]string) error {
	cms := client.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Get(ctx, QueueConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: QueueConfigMap, Namespace: namespace},
			Data: data}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	cm.Data = data
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// insecureClient talks to the control plane's loopback HTTPS servers, whose
// serving certificates are self-signed (and to plain HTTP ones).
var insecureClient = &http.Client{Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed serving certs, on loopback
}}

// Get GETs url, with the bearer token unless it is empty, and returns the
// status code and the body. It trusts any serving certificate: it is for
// the harness's own servers on loopback. ctx bounds the whole request.
func Get(ctx context.Context, url, token string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := insecureClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// CopyBinary copies the binary at src to dst and returns the first 12 hex
// digits of its sha256, for the report. A harness runs a copy so that a
// `make build` elsewhere during a run cannot change the binary that later
// starts (and restarts) execute.
func CopyBinary(src, dst string) (string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))[:12], nil
}
