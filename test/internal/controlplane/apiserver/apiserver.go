// Package apiserver starts a kube-apiserver in the test process, from
// Kubernetes' own test server (k8s.io/kubernetes/cmd/kube-apiserver/app/testing),
// for the test tiers (test/integration, test/perf), on one etcd per test
// binary (EtcdMain, from TestMain), as Kubernetes' own integration tests
// do (test/integration/framework.EtcdMain). It needs no prebuilt binaries
// and starts in seconds.
//
// Kubernetes' test server is not stable API across minor versions: all use
// of it stays in this package. It is apart from its parent, controlplane,
// so that the soak, which runs the kube-apiserver binary, does not link a
// whole API server.
package apiserver

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"

	"github.com/userquota/userquota/test/internal/controlplane"
	"github.com/userquota/userquota/test/internal/etcdtest"
)

// etcdURL is the client URL of the etcd EtcdMain runs; every API server of
// the test binary stores in it, each under its own prefix.
var etcdURL string

// EtcdMain starts etcd with o, runs the tests (run is m.Run) and stops
// etcd; it returns run's exit code, for TestMain to exit with once it has
// cleaned up. If etcd cannot start, it says so and exits 1.
func EtcdMain(o etcdtest.Options, run func() int) int {
	u, stop, err := etcdtest.Start(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting etcd:", err)
		os.Exit(1)
	}
	etcdURL = u
	defer stop()
	return run()
}

// Server is a running API server.
type Server struct {
	// Config connects as an administrator; a copy, free to change (QPS).
	Config *rest.Config
	// Kubeconfig is a kubeconfig file for Config, for processes.
	Kubeconfig string
}

// Start starts an API server for t that stores under prefix (a path
// segment, without the slash) in the etcd of EtcdMain, so that the servers
// of one test binary do not see each other's objects, with extra
// kube-apiserver flags if any. Two admission plugins are off, as no
// controller manager runs here: ServiceAccount (nothing creates the default
// ServiceAccount) and TaintNodesByCondition (nothing would remove the
// not-ready taint, and pods would stay unschedulable). The server stops
// when t ends.
func Start(t testing.TB, prefix string, flags ...string) *Server {
	t.Helper()
	if etcdURL == "" {
		t.Fatal("no etcd: TestMain must run the tests with apiserver.EtcdMain")
	}
	storage := storagebackend.NewDefaultConfig("/"+prefix, nil)
	storage.Transport.ServerList = []string{etcdURL}
	server := kubeapiservertesting.StartTestServerOrDie(t, nil,
		append([]string{"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition"}, flags...), storage)
	t.Cleanup(server.TearDownFn)
	s := &Server{Config: rest.CopyConfig(server.ClientConfig), Kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	if err := controlplane.WriteKubeconfig(s.Kubeconfig, s.Config); err != nil {
		t.Fatal(err)
	}
	return s
}
