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
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
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

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startEtcd() (func(), error) {
	dir, err := os.MkdirTemp("", "userquota-etcd")
	if err != nil {
		return nil, err
	}
	clientPort, err := freePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Name = "integration"
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true
	client, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", clientPort))
	peer, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", peerPort))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = fmt.Sprintf("%s=%s", cfg.Name, peer.String())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd not ready after 60s")
	}
	etcdURL = client.String()
	return func() {
		e.Close()
		os.RemoveAll(dir)
	}, nil
}
