package userquota

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
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

// clientHandle is the part of the framework handle the leader check uses.
type clientHandle struct {
	fwk.Handle
	cs kubernetes.Interface
}

func (h clientHandle) ClientSet() kubernetes.Interface { return h.cs }

// The leader check follows the leader-election Lease: this replica leads
// when the holder's host part is its hostname; no Lease means no leader
// election, so it leads.
func TestLeaderCheck(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cs := fake.NewClientset()
	pl := &Plugin{handle: clientHandle{cs: cs}, args: Args{LeaderElectionLease: ptr.To("userquota-system/userquota-scheduler")}}
	leader, err := pl.leaderCheck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	expect := func(step string, wantLeading bool, wantWhy string) {
		t.Helper()
		var leading bool
		var why string
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			leading, why = leader()
			return leading == wantLeading && strings.Contains(why, wantWhy), nil
		})
		if err != nil {
			t.Fatalf("%s: leading %v (%q), want %v (%q)", step, leading, why, wantLeading, wantWhy)
		}
	}
	expect("no Lease", true, "")

	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "userquota-system", Name: "userquota-scheduler"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other-host_0b6c4c9e-5f7c-4bd3-9d36-1c1b2b1f2a10")},
	}
	if _, err := cs.CoordinationV1().Leases("userquota-system").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("held by another replica", false, `held by "other-host_0b6c4c9e-5f7c-4bd3-9d36-1c1b2b1f2a10"; this replica is "`+host+`"`)

	lease.Spec.HolderIdentity = ptr.To(host + "_4f0a9a3e-2f55-4b53-9a0c-3d1b9c7e8f21")
	if _, err := cs.CoordinationV1().Leases("userquota-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("held by this replica", true, "")

	lease.Spec.HolderIdentity = ptr.To("")
	if _, err := cs.CoordinationV1().Leases("userquota-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("released", false, "has no holder")

	// A Lease of the same name elsewhere, or of another name, is not ours.
	other := lease.DeepCopy()
	other.Namespace, other.Spec.HolderIdentity = "kube-system", ptr.To(host+"_x")
	if _, err := cs.CoordinationV1().Leases("kube-system").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Our Lease changes after the other was created: once the check sees
	// that change, it has seen everything before it, the other Lease
	// included, had it been watched.
	lease.Spec.HolderIdentity = ptr.To("marker-host_1")
	if _, err := cs.CoordinationV1().Leases("userquota-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("our Lease changed after another namespace's was created", false, `held by "marker-host_1"`)
	lease.Spec.HolderIdentity = ptr.To("")
	if _, err := cs.CoordinationV1().Leases("userquota-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("another namespace's Lease", false, "has no holder")

	if err := cs.CoordinationV1().Leases("userquota-system").Delete(ctx, lease.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("Lease deleted", true, "")

	// No leader election configured: always leading, nothing watched.
	pl = &Plugin{handle: clientHandle{}, args: Args{LeaderElectionLease: ptr.To("")}}
	leader, err = pl.leaderCheck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := leader(); !ok || why != "" {
		t.Errorf("without leader election: %v %q", ok, why)
	}
}

func TestHolderHost(t *testing.T) {
	for holder, want := range map[string]string{
		"node-a_0b6c4c9e-5f7c-4bd3-9d36-1c1b2b1f2a10":           "node-a",
		"userquota-scheduler-7d9f8-xk2lp_4f0a9a3e-2f55-4b53-9a": "userquota-scheduler-7d9f8-xk2lp",
		"odd_host_name_uuid":                                    "odd_host_name",
		"no-uuid":                                               "no-uuid",
		"":                                                      "",
	} {
		if got := holderHost(holder); got != want {
			t.Errorf("holderHost(%q) = %q, want %q", holder, got, want)
		}
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
