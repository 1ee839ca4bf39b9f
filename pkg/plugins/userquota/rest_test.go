package userquota

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

func TestRESTArgs(t *testing.T) {
	raw := func(s string) runtime.Object {
		return &runtime.Unknown{Raw: []byte(s), ContentType: runtime.ContentTypeJSON}
	}
	tests := []struct {
		name      string
		json      string
		auth      bool
		lease     string // "ns/name", or "" for none
		perUser   bool
		wantErr   []string
		certFiles bool
	}{
		{name: "defaults", json: `{}`, auth: true, lease: DefaultLeaderElectionLease},
		{name: "auth off, no leader election, per-user metrics", json: `{"restAuth":false,"leaderElectionLease":"","perUserMetrics":true}`, perUser: true},
		{name: "auth on explicitly, another lease", json: `{"restAuth":true,"leaderElectionLease":"kube-system/my-scheduler"}`, auth: true, lease: "kube-system/my-scheduler"},
		{name: "certificate files", json: `{"restCertFile":"/tls/tls.crt","restKeyFile":"/tls/tls.key"}`, auth: true, lease: DefaultLeaderElectionLease, certFiles: true},
		{name: "lease without a name", json: `{"leaderElectionLease":"userquota-system"}`, wantErr: []string{"args.leaderElectionLease", `"namespace/name"`}},
		{name: "lease with a bad namespace", json: `{"leaderElectionLease":"Bad_NS/x"}`, wantErr: []string{"args.leaderElectionLease", "namespace:"}},
		{name: "lease with an empty name", json: `{"leaderElectionLease":"ns/"}`, wantErr: []string{"args.leaderElectionLease", "name:"}},
		{name: "certificate without key", json: `{"restCertFile":"/tls/tls.crt"}`, wantErr: []string{"args.restCertFile", "give both or neither"}},
		{name: "certificate without auth", json: `{"restAuth":false,"restCertFile":"/c","restKeyFile":"/k"}`, wantErr: []string{"args.restCertFile", "only with restAuth: true"}},
		{name: "restAuth not a bool", json: `{"restAuth":"yes"}`, wantErr: []string{"restAuth"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := decodeArgs(raw(tc.json))
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("no error, want one naming %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.RESTAuthEnabled() != tc.auth {
				t.Errorf("RESTAuthEnabled() = %v, want %v", a.RESTAuthEnabled(), tc.auth)
			}
			ns, name, ok := a.LeaderLease()
			if got := ns + "/" + name; ok != (tc.lease != "") || ok && got != tc.lease {
				t.Errorf("LeaderLease() = %q, %v; want %q", got, ok, tc.lease)
			}
			if a.PerUserMetrics != tc.perUser || (a.RESTCertFile != "") != tc.certFiles {
				t.Errorf("args = %+v", a)
			}
			// DeepCopyObject shares no pointer.
			c := a.DeepCopyObject().(*Args)
			if a.RESTAuth != nil && c.RESTAuth == a.RESTAuth || a.LeaderElectionLease != nil && c.LeaderElectionLease == a.LeaderElectionLease {
				t.Error("DeepCopyObject shares a pointer")
			}
		})
	}
}

// freeAddress returns a loopback address with a port nothing listens on.
func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// httpGet polls url until it answers (the server starts in the
// background) and returns the status and body.
func httpGet(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	var status int
	var body string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		resp, err := c.Get(url)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		status, body = resp.StatusCode, string(b)
		return true, nil
	})
	if err != nil {
		t.Fatalf("GET %s: no answer", url)
	}
	return status, body
}

// The plugin serves its usage on restAddress: what Reserve charged is
// what the REST API shows.
func TestPluginServesUsage(t *testing.T) {
	addr := freeAddress(t)
	e := newEnv(t, envOptions{config: sandboxConfig, args: &Args{RESTAddress: ptr.To(addr), RESTAuth: ptr.To(false), LeaderElectionLease: ptr.To("")}})
	e.mustSchedule(userPod("p1", "sue", "dev", "root.sandbox", "1500m"))

	status, body := httpGet(t, http.DefaultClient, "http://"+addr+"/ws/v1/partition/default/usage/user/sue")
	sue, _ := e.pl.ugm.User("sue")
	want, err := json.Marshal(sue)
	if err != nil {
		t.Fatal(err)
	}
	if status != 200 || body != string(want)+"\n" || !strings.Contains(body, `"queuePath":"root.sandbox","resourceUsage":{"cpu":1500,"pods":1}`) {
		t.Errorf("sue's usage: %d %s, want %s", status, body, want)
	}
	status, body = httpGet(t, http.DefaultClient, "http://"+addr+"/ws/v1/config")
	if status != 200 || !strings.Contains(body, `"checksum":"`+e.pl.Config().Checksum+`"`) {
		t.Errorf("config: %d %s", status, body)
	}
	if status, _ := httpGet(t, http.DefaultClient, "http://"+addr+"/readyz"); status != 200 {
		t.Errorf("/readyz %d", status)
	}
}

// With restAuth (the default) the API is HTTPS and wants a token; the
// probes do not.
func TestPluginRESTAuth(t *testing.T) {
	addr := freeAddress(t)
	newEnv(t, envOptions{config: sandboxConfig, args: &Args{RESTAddress: ptr.To(addr)}})
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test server
	if status, body := httpGet(t, c, "https://"+addr+"/ws/v1/partition/default/usage/users"); status != 401 {
		t.Errorf("without a token: %d %s", status, body)
	}
	if status, _ := httpGet(t, c, "https://"+addr+"/healthz"); status != 200 {
		t.Errorf("/healthz %d", status)
	}
}
