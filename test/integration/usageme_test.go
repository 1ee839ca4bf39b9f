package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/userquota/userquota/pkg/rest/dao"
	"github.com/userquota/userquota/test/internal/controlplane"
)

// TestOwnUsage (issue 20, point 7): behind the real API server with RBAC
// on, the scheduler binary with the manifests' RBAC and REST API
// (restAuth: true) lets a ServiceAccount with no RBAC of its own read its
// own usage at /usage/me through the delegated authentication
// (TokenReview), and its group's with the other member's application
// unnamed; the whole-cluster views refuse it (403, SubjectAccessReview);
// no token is 401; an account running nothing gets an empty answer.
func TestOwnUsage(t *testing.T) {
	c := newCluster(t, 1, rbacAPIServer)
	m := c.installManifests()
	c.setQueueConfigIn(systemNamespace, haConfig) // group dev: 4 cpu in root.team
	s := c.startSchedulerProcess("scheduler", m.schedulerConfigFor(t, nil), m.kubeconfig)
	c.eventually("the scheduler holds the Lease", 30*time.Second, func() (bool, error) {
		return s.acquiredLease(), nil
	})

	// Two ServiceAccounts with no RBAC binding at all; the webhook (not
	// run here) would stamp ann's pods with her ServiceAccount's name.
	annToken, ann := c.plainServiceAccount("ann")
	zedToken, zed := c.plainServiceAccount("zed")
	for _, ps := range []podSpec{
		{name: "ann-1", user: ann, groups: []string{"dev"}, queue: "root.team", app: "ann-train", cpu: "1"},
		{name: "bob-1", user: "bob", groups: []string{"dev"}, queue: "root.team", app: "bob-secret-project", cpu: "2"},
	} {
		c.createPod(ps)
		c.waitBound(ps.name, bindTimeout)
		c.setRunning(ps.name)
	}

	const usage = "/ws/v1/partition/default/usage/"
	var me dao.SelfUsage
	var body []byte
	c.eventually("ann reads her own usage", 15*time.Second, func() (bool, error) {
		var code int
		code, body = c.restGetAs(s, usage+"me", annToken)
		switch code {
		case 0, http.StatusServiceUnavailable:
			return false, nil // not serving yet; not leading yet
		case http.StatusOK:
		default:
			return false, fmt.Errorf("GET %sme as %s: %d %s, want 200 with her usage", usage, ann, code, body)
		}
		if err := json.Unmarshal(body, &me); err != nil {
			return false, fmt.Errorf("GET %sme: %v: %s", usage, err, body)
		}
		return me.User.Queues != nil && me.User.Queues.ResourceUsage.Map()["cpu"] == 1000, nil
	})
	t.Logf("ann's own usage: %s", body)
	if me.UserName != ann {
		t.Errorf("userName %q, want %q", me.UserName, ann)
	}
	if !slices.Contains(me.Groups, "system:serviceaccounts:"+c.ns) {
		t.Errorf("groups %q lack the ServiceAccount's namespace group from the TokenReview", me.Groups)
	}
	if got := me.User.Groups; len(got) != 1 || got[c.ns+"/ann-train"] != "dev" {
		t.Errorf("ann's applications -> groups %v, want %s/ann-train -> dev", got, c.ns)
	}
	if len(me.GroupUsage) != 1 || me.GroupUsage[0].GroupName != "dev" {
		t.Fatalf("groupUsage %s, want dev's alone (ann's application is tracked against it)", body)
	}
	dev := me.GroupUsage[0]
	if got := dev.Queues.ResourceUsage.Map()["cpu"]; got != 3000 {
		t.Errorf("dev's cpu %d, want 3000 (ann's 1 and bob's 2)", got)
	}
	if want := []string{dao.Hidden, c.ns + "/ann-train"}; !slices.Equal(dev.Applications, want) {
		t.Errorf("dev's applications as ann sees them %q, want %q", dev.Applications, want)
	}
	if strings.Contains(string(body), "bob") {
		t.Errorf("ann's answer names bob or his application: %s", body)
	}

	// The whole-cluster views stay behind RBAC, her own name there too.
	for _, path := range []string{usage + "users", usage + "groups", usage + "queues", usage + "user/" + url.PathEscape(ann),
		usage + "group/dev", "/ws/v1/partition/default/queues", "/ws/v1/config", "/"} {
		code, body := c.restGetAs(s, path, annToken)
		var e struct{ Message string }
		_ = json.Unmarshal(body, &e)
		if want := fmt.Sprintf("forbidden: user %q cannot get path", ann); code != http.StatusForbidden || !strings.HasPrefix(e.Message, want) {
			t.Errorf("GET %s as %s: %d %.300s, want 403 %s ...", path, ann, code, body, want)
		}
	}
	if code, body := c.restGetAs(s, usage+"me", ""); code != http.StatusUnauthorized {
		t.Errorf("GET %sme without a token: %d %.300s, want 401", usage, code, body)
	}
	code, body := c.restGetAs(s, usage+"me", zedToken)
	if want := fmt.Sprintf(`"user":{"userName":%q,"groups":{},"queues":null},"groupUsage":[]}`, zed); code != http.StatusOK || !strings.Contains(string(body), want) {
		t.Errorf("GET %sme as %s (nothing running): %d %s, want 200 ending %s", usage, zed, code, body, want)
	}
	// A reader with the manifests' documented role still sees everything.
	if u := c.restUsage(s, m, ""); u == nil || !strings.Contains(u["users"], `"bob"`) || !strings.Contains(u["users"], ann) {
		t.Errorf("the usage reader's /usage/users: %v, want bob and %s", u, ann)
	}
	s.requireNoForbidden(t)
}

// plainServiceAccount creates a ServiceAccount in the test namespace with
// no RBAC binding and returns a token for it and its user name.
func (c *cluster) plainServiceAccount(name string) (token, username string) {
	c.t.Helper()
	if _, err := c.client.CoreV1().ServiceAccounts(c.ns).Create(c.ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	tr, err := c.client.CoreV1().ServiceAccounts(c.ns).CreateToken(c.ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return tr.Status.Token, "system:serviceaccount:" + c.ns + ":" + name
}

// restGetAs GETs path from a scheduler's REST API (HTTPS, else HTTP) with
// token (none when ""); code 0 means nothing serves the port.
func (c *cluster) restGetAs(p *schedulerProcess, path, token string) (int, []byte) {
	c.t.Helper()
	var err error
	for _, scheme := range []string{"https", "http"} {
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		var code int
		var body []byte
		code, body, err = controlplane.Get(ctx, fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, p.restPort, path), token)
		cancel()
		if err == nil {
			return code, body
		}
	}
	if strings.Contains(err.Error(), "connection refused") {
		return 0, nil
	}
	c.t.Fatalf("scheduler %s REST %s: %v", p.Name, path, err)
	return 0, nil
}
