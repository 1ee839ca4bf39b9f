// Package etcdtest starts an embedded etcd on loopback for the test tiers
// that run a real kube-apiserver (test/integration, test/perf), and hands
// out free loopback ports.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// FreePort returns a TCP port free on 127.0.0.1 at the time of the call.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Options tune the embedded etcd.
type Options struct {
	Name     string // member name and temp-dir prefix
	LogLevel string // etcd's log level ("error", "fatal", ...)
	// QuotaBackendBytes raises etcd's 2 GiB default when non-zero.
	QuotaBackendBytes int64
}

// Start runs etcd without fsync in a temporary directory on free loopback
// ports and waits until it serves. It returns the client URL and a stop
// function that also removes the directory.
func Start(o Options) (string, func(), error) {
	dir, err := os.MkdirTemp("", "userquota-"+o.Name+"-etcd")
	if err != nil {
		return "", nil, err
	}
	clientPort, err := FreePort()
	if err != nil {
		return "", nil, err
	}
	peerPort, err := FreePort()
	if err != nil {
		return "", nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.Name = o.Name
	cfg.LogLevel = o.LogLevel
	cfg.UnsafeNoFsync = true
	if o.QuotaBackendBytes > 0 {
		cfg.QuotaBackendBytes = o.QuotaBackendBytes
	}
	client, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", clientPort))
	peer, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", peerPort))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = fmt.Sprintf("%s=%s", cfg.Name, peer.String())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("etcd not ready after 60s")
	}
	return client.String(), func() {
		e.Close()
		os.RemoveAll(dir)
	}, nil
}
