// Package integration runs the scheduler with the UserQuota plugin against a
// real kube-apiserver and etcd, in process: etcd from its embed package
// (once per test binary), a kube-apiserver per test from Kubernetes' own
// test server, and the scheduler through kube-scheduler's app.Setup and
// app.Run, the code path of the userquota-scheduler binary, with the
// manifests' scheduler config shape. Nodes are API objects; nothing runs on
// them. Tests change pod phases through the API as a kubelet would.
//
// The control plane (etcd, the API server, the scheduler binary as a
// process) comes from test/internal/controlplane, which the perf and soak
// tiers share; the Kubernetes test server, not stable API across minor
// versions, is used only there.
package integration

import (
	"os"
	"testing"

	"github.com/userquota/userquota/test/internal/controlplane/apiserver"
	"github.com/userquota/userquota/test/internal/etcdtest"
)

// TestMain runs every test on one etcd; each test's API server stores
// under its own prefix.
func TestMain(m *testing.M) {
	code := apiserver.EtcdMain(etcdtest.Options{Name: "integration", LogLevel: "error"}, m.Run)
	removeBuiltBinaries()
	os.Exit(code)
}
