package rest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2/ktesting"
)

// serve starts Serve on a free loopback port and returns its base URL; the
// server stops when the test ends.
func serve(t *testing.T, o ServeOptions) (string, <-chan struct{}) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	addr := make(chan net.Addr, 1)
	if o.Address == "" {
		o.Address = "127.0.0.1:0"
	}
	o.OnListen = func(a net.Addr) { addr <- a }
	done := Serve(ctx, o)
	t.Cleanup(func() {
		cancel()
		<-done
	})
	scheme := "http"
	if o.TLS != nil {
		scheme = "https"
	}
	select {
	case a := <-addr:
		return scheme + "://" + a.String(), done
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not listen")
	}
	return "", nil
}

func fetch(t *testing.T, c *http.Client, url string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var insecure = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a test's self-signed server

func TestServePlain(t *testing.T) {
	base, _ := serve(t, ServeOptions{Handler: NewHandler(testOptions(t))})
	if status, body := fetch(t, http.DefaultClient, base+"/ws/v1/partition/default/usage/user/sue", nil); status != 200 || body != sueJSON+"\n" {
		t.Errorf("%d %s", status, body)
	}
}

func TestServeSelfSigned(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cfg, err := TLSConfig(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	base, _ := serve(t, ServeOptions{Handler: NewHandler(testOptions(t)), TLS: cfg})
	if status, body := fetch(t, insecure, base+"/healthz", nil); status != 200 || body != "ok\n" {
		t.Errorf("%d %s", status, body)
	}
	// Plain HTTP to the TLS port is refused.
	if status, _ := fetch(t, http.DefaultClient, "http"+strings.TrimPrefix(base, "https")+"/healthz", nil); status != http.StatusBadRequest {
		t.Errorf("plain HTTP to the TLS port: %d, want 400", status)
	}
}

func TestServeCertFiles(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	dir := t.TempDir()
	c, k, err := certutil.GenerateSelfSignedCertKey("usage.example", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, c, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, k, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := TLSConfig(ctx, certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := serve(t, ServeOptions{Handler: NewHandler(testOptions(t)), TLS: cfg})
	resp, err := insecure.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cn := resp.TLS.PeerCertificates[0].Subject.CommonName; !strings.HasPrefix(cn, "usage.example") {
		t.Errorf("served certificate %q, want the one from the files", cn)
	}

	if _, err := TLSConfig(ctx, certFile, ""); err == nil {
		t.Error("a certificate without a key was accepted")
	}
	if _, err := TLSConfig(ctx, filepath.Join(dir, "missing.crt"), keyFile); err == nil {
		t.Error("a missing certificate file was accepted")
	}
}

// A busy port does not stop the scheduler: Serve retries until it is free.
func TestServeRetriesBusyPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := busy.Addr().String()
	time.AfterFunc(200*time.Millisecond, func() { busy.Close() })
	base, _ := serve(t, ServeOptions{Address: addr, Handler: NewHandler(testOptions(t)), RetryInterval: 50 * time.Millisecond})
	if status, _ := fetch(t, http.DefaultClient, base+"/readyz", nil); status != 200 {
		t.Errorf("/readyz %d", status)
	}
}

// Serve stops when its context ends, also while it waits for a busy port.
func TestServeStops(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := Serve(ctx, ServeOptions{Address: busy.Addr().String(), Handler: http.NotFoundHandler(), RetryInterval: time.Hour})
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
}

// DelegatingAuth asks the API server: a TokenReview for the bearer token,
// then a SubjectAccessReview for verb get on the path. The "API server"
// here answers both reviews over HTTP, as kube-apiserver does.
func TestDelegatingAuth(t *testing.T) {
	var mu sync.Mutex
	var reviewed []string
	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authenticationv1.TokenReview
			if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if tr.Spec.Token == "good" {
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"ops"}}}
			}
			_ = json.NewEncoder(w).Encode(&tr)
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authorizationv1.SubjectAccessReview
			if err := json.NewDecoder(r.Body).Decode(&sar); err != nil || sar.Spec.NonResourceAttributes == nil {
				http.Error(w, "want a non-resource review", http.StatusBadRequest)
				return
			}
			nr := sar.Spec.NonResourceAttributes
			mu.Lock()
			reviewed = append(reviewed, sar.Spec.User+" "+nr.Verb+" "+nr.Path)
			mu.Unlock()
			sar.Status.Allowed = sar.Spec.User == "alice" && nr.Verb == "get" && strings.HasPrefix(nr.Path, "/ws/v1/")
			if !sar.Status.Allowed {
				sar.Status.Reason = "RBAC: no rule"
			}
			_ = json.NewEncoder(w).Encode(&sar)
		default:
			http.NotFound(w, r)
		}
	}))
	defer apiserver.Close()
	cs, err := kubernetes.NewForConfig(&restclient.Config{Host: apiserver.URL})
	if err != nil {
		t.Fatal(err)
	}
	auth, err := DelegatingAuth(cs.AuthenticationV1(), cs.AuthorizationV1())
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t)
	opts.Auth = auth
	h := NewHandler(opts)
	bearer := http.Header{"Authorization": {"Bearer good"}}
	if status, body, _ := get(t, h, "GET", "/ws/v1/partition/default/usage/user/sue", bearer); status != 200 || body != sueJSON+"\n" {
		t.Errorf("allowed: %d %s", status, body)
	}
	if status, body, _ := get(t, h, "HEAD", "/", bearer); status != 403 {
		t.Errorf("not allowed: %d %s", status, body)
	}
	if status, body, _ := get(t, h, "GET", "/", bearer); status != 403 || !strings.Contains(body, "RBAC: no rule") {
		t.Errorf("not allowed (cached): %d %s", status, body)
	}
	if status, _, _ := get(t, h, "GET", "/ws/v1/config", http.Header{"Authorization": {"Bearer bad"}}); status != 401 {
		t.Errorf("bad token: %d", status)
	}
	if status, _, _ := get(t, h, "GET", "/ws/v1/config", nil); status != 401 {
		t.Errorf("no token: %d", status)
	}
	if status, _, _ := get(t, h, "GET", "/healthz", nil); status != 200 {
		t.Errorf("healthz without a token: %d", status)
	}
	// The caller's own usage: a TokenReview (cached; the authenticator adds
	// system:authenticated), no SubjectAccessReview.
	if status, body, _ := get(t, h, "GET", "/ws/v1/partition/default/usage/me", bearer); status != 200 ||
		body != `{"userName":"alice","groups":["ops","system:authenticated"],"user":{"userName":"alice","groups":{},"queues":null},"groupUsage":[]}`+"\n" {
		t.Errorf("own usage: %d %s", status, body)
	}
	if status, _, _ := get(t, h, "GET", "/ws/v1/partition/default/usage/me", http.Header{"Authorization": {"Bearer bad"}}); status != 401 {
		t.Errorf("own usage, bad token: %d", status)
	}
	// HEAD is reviewed as get; the second GET / is answered from the cache.
	want := "alice get /ws/v1/partition/default/usage/user/sue,alice get /"
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(reviewed, ","); got != want {
		t.Errorf("SubjectAccessReviews %q, want %q", got, want)
	}
}
