// Package integration runs the scheduler with the UserQuota plugin against a
// real kube-apiserver and etcd, in process: etcd from its embed package
// (once per test binary), a kube-apiserver per test from Kubernetes' own
// test server, and the scheduler through kube-scheduler's app.Setup and
// app.Run, the code path of the userquota-scheduler binary, with the
// manifests' scheduler config shape. Nodes are API objects; nothing runs on
// them. Tests change pod phases through the API as a kubelet would.
//
// The Kubernetes test packages used here are not stable API across minor
// versions, so all use of them stays in this file and cluster_test.go.
package integration

import (
	"fmt"
	"os"
	"testing"

	"github.com/userquota/userquota/test/internal/etcdtest"
)

// etcdURL is the client URL of the etcd shared by every test; each test's
// API server stores under its own prefix.
var etcdURL string

func TestMain(m *testing.M) {
	stop, err := startEtcd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting etcd:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	removeBuiltBinaries()
	os.Exit(code)
}

// freePort returns a free loopback port.
func freePort() (int, error) { return etcdtest.FreePort() }

// startEtcd starts the etcd shared by every test and sets etcdURL.
func startEtcd() (func(), error) {
	u, stop, err := etcdtest.Start(etcdtest.Options{Name: "integration", LogLevel: "error"})
	if err != nil {
		return nil, err
	}
	etcdURL = u
	return stop, nil
}
