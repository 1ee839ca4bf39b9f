package webhook

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/userquota/userquota/pkg/rest/dao"
)

// replica serves the resize check over TLS on ip:port ("0": any port) as
// the leader or a follower, counting what it was asked.
type replica struct {
	srv    *httptest.Server
	asked  atomic.Int32
	leads  atomic.Bool
	status int // answered by a leader; 0: 200 with an answer
	got    atomic.Pointer[string]
}

func startReplica(t *testing.T, ip, port string, leads bool) *replica {
	t.Helper()
	r := &replica{}
	r.leads.Store(leads)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, port))
	if err != nil {
		t.Skipf("listening on %s: %v", ip, err)
	}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.asked.Add(1)
		b, _ := io.ReadAll(req.Body)
		got := req.Method + " " + req.URL.Path + " " + req.Header.Get("Authorization") + " " + string(b)
		r.got.Store(&got)
		if !r.leads.Load() {
			w.Header().Set(dao.HeaderLeader, "false")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"message":"not the leader"}`)
			return
		}
		w.Header().Set(dao.HeaderLeader, "true")
		if r.status != 0 {
			w.WriteHeader(r.status)
			_, _ = io.WriteString(w, `{"message":"broken"}`)
			return
		}
		_, _ = io.WriteString(w, `{"pod":"ns/p","charged":true,"fits":false,"reason":"over"}`)
	}))
	r.srv.Listener.Close()
	r.srv.Listener = ln
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	return r
}

// caFile writes the replicas' CA (httptest's certificate, for example.com
// and 127.0.0.1) to a file.
func caFile(t *testing.T, r *replica) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSchedulerResizeChecker: the client asks the replicas the Service
// name resolves to until one leads (a follower answers 503), the last
// leader first; it POSTs the pod with the token read from its file over
// TLS verified by the Service's name; any other answer is an error that
// names each replica's.
func TestSchedulerResizeChecker(t *testing.T) {
	follower := startReplica(t, "127.0.0.1", "0", false)
	_, port, _ := net.SplitHostPort(follower.srv.Listener.Addr().String())
	leader := startReplica(t, "127.0.0.2", port, true)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addrs := []string{"127.0.0.1", "127.0.0.2"}
	var lookedUp string
	lookup := func(_ context.Context, host string) ([]string, error) {
		lookedUp = host
		return append([]string(nil), addrs...), nil
	}
	check, err := SchedulerResizeChecker("https://example.com:"+port+"/", "default", tokenFile, caFile(t, leader), lookup)
	if err != nil {
		t.Fatal(err)
	}
	pod := []byte(`{"metadata":{"uid":"u"}}`)
	for i := 1; i <= 2; i++ {
		answer, err := check(context.Background(), pod)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if answer != (dao.ResizeCheck{Pod: "ns/p", Charged: true, Reason: "over"}) {
			t.Errorf("call %d: answer %+v", i, answer)
		}
	}
	if lookedUp != "example.com" {
		t.Errorf("looked up %q, want the URL's host", lookedUp)
	}
	// The follower once (first in the answer, no leader known yet), then
	// the leader first.
	if f, l := follower.asked.Load(), leader.asked.Load(); f != 1 || l != 2 {
		t.Errorf("follower asked %d times, leader %d; want 1 and 2", f, l)
	}
	if got := *leader.got.Load(); got != `POST /ws/v1/partition/default/check/resize Bearer tok-1 {"metadata":{"uid":"u"}}` {
		t.Errorf("leader got %s", got)
	}

	// Failover: the leader now follows, the follower leads.
	leader.leads.Store(false)
	follower.leads.Store(true)
	if _, err := check(context.Background(), pod); err != nil {
		t.Errorf("after a failover: %v", err)
	}

	for _, tc := range []struct {
		name    string
		setup   func()
		lookup  LookupHost
		wantErr []string
	}{
		{name: "no replica leads", setup: func() { follower.leads.Store(false) },
			wantErr: []string{"no replica answered as the leader", "127.0.0.1", "127.0.0.2", "not the leader"}},
		{name: "the leader fails", setup: func() { follower.leads.Store(true); follower.status = http.StatusInternalServerError },
			wantErr: []string{"500", "broken"}},
		{name: "the name does not resolve", lookup: func(context.Context, string) ([]string, error) { return nil, errors.New("no such host") },
			wantErr: []string{"resolving example.com", "no such host"}},
		{name: "no address", lookup: func(context.Context, string) ([]string, error) { return nil, nil },
			wantErr: []string{"example.com resolves to no address"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			l := lookup
			if tc.lookup != nil {
				l = tc.lookup
			}
			c, err := SchedulerResizeChecker("https://example.com:"+port, "default", "", caFile(t, leader), l)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c(context.Background(), pod)
			for _, w := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to say %q", err, w)
				}
			}
		})
	}
}

// TestSchedulerResizeCheckerTLS: the serving certificate is verified
// against the CA file and the URL's host name, whatever address is dialled.
func TestSchedulerResizeCheckerTLS(t *testing.T) {
	r := startReplica(t, "127.0.0.1", "0", true)
	_, port, _ := net.SplitHostPort(r.srv.Listener.Addr().String())
	lookup := func(context.Context, string) ([]string, error) { return []string{"127.0.0.1"}, nil }
	for _, tc := range []struct {
		name, host, ca string
		wantErr        string
	}{
		{name: "the Service's name", host: "example.com", ca: caFile(t, r)},
		{name: "another name", host: "userquota-scheduler-rest.userquota-system.svc", ca: caFile(t, r), wantErr: "certificate is valid for"},
		{name: "the system's CAs", host: "example.com", wantErr: "certificate signed by unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := SchedulerResizeChecker("https://"+tc.host+":"+port, "default", "", tc.ca, lookup)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c(context.Background(), nil)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestSchedulerResizeCheckerArgs: bad flags are errors that name them.
func TestSchedulerResizeCheckerArgs(t *testing.T) {
	for _, tc := range []struct{ url, ca, wantErr string }{
		{url: "userquota-scheduler:9089", wantErr: "--scheduler-url"},
		{url: "ftp://x:1", wantErr: "--scheduler-url"},
		{url: "https://x:1", ca: filepath.Join(t.TempDir(), "missing"), wantErr: "--scheduler-ca-file"},
	} {
		if _, err := SchedulerResizeChecker(tc.url, "default", "", tc.ca, nil); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s, %q: err = %v, want %q", tc.url, tc.ca, err, tc.wantErr)
		}
	}
}
