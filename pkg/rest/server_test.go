package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/rest/dao"
)

// The bodies of the test data, as the endpoints return them.
const (
	sueJSON = `{"userName":"sue","groups":{"ns/train":"dev"},"queues":{"queuePath":"root","resourceUsage":{"cpu":2000,"memory":2147483648,"pods":2},"runningApplications":["ns/train"],"maxResources":{},"maxApplications":0,"children":[` +
		`{"queuePath":"root.sandbox","resourceUsage":{"cpu":2000,"memory":2147483648,"pods":2},"runningApplications":["ns/train"],"maxResources":{"cpu":2000,"memory":4294967296},"maxApplications":0,"children":[]}]}}`
	bobJSON = `{"userName":"bob","groups":{"ns/web":""},"queues":{"queuePath":"root","resourceUsage":{"cpu":500,"memory":536870912,"pods":1},"runningApplications":["ns/web"],"maxResources":{},"maxApplications":0,"children":[` +
		`{"queuePath":"root.default","resourceUsage":{"cpu":500,"memory":536870912,"pods":1},"runningApplications":["ns/web"],"maxResources":{},"maxApplications":0,"children":[]}]}}`
	devJSON = `{"groupName":"dev","applications":["ns/train"],"queues":{"queuePath":"root","resourceUsage":{"cpu":2000,"memory":2147483648,"pods":2},"runningApplications":["ns/train"],"maxResources":{},"maxApplications":0,"children":[` +
		`{"queuePath":"root.sandbox","resourceUsage":{"cpu":2000,"memory":2147483648,"pods":2},"runningApplications":["ns/train"],"maxResources":{"cpu":3000},"maxApplications":0,"children":[]}]}}`
	queuesJSON = `{"queuePath":"root","resourceUsage":{"cpu":2500,"memory":2684354560,"pods":3},"runningApplications":["ns/train","ns/web"],"maxResources":{},"maxApplications":0,"children":[` +
		`{"queuePath":"root.default","resourceUsage":{"cpu":500,"memory":536870912,"pods":1},"runningApplications":["ns/web"],"maxResources":{},"maxApplications":0,"children":[]},` +
		`{"queuePath":"root.sandbox","resourceUsage":{"cpu":2000,"memory":2147483648,"pods":2},"runningApplications":["ns/train"],"maxResources":{"cpu":4000,"memory":8589934592},"maxApplications":3,"children":[]}]}`
)

func errorJSON(status int, message, description string) string {
	b, _ := json.Marshal(Error{StatusCode: status, Message: message, Description: description})
	return string(b)
}

func TestEndpoints(t *testing.T) {
	h := NewHandler(testOptions(t))
	const usage = "/ws/v1/partition/default/usage/"
	tests := []struct {
		name   string
		method string // default GET
		path   string
		status int
		body   string // the exact body, without the final newline
		ctype  string // default JSON
	}{
		{name: "users", path: usage + "users", status: 200, body: "[" + bobJSON + "," + sueJSON + "]"},
		{name: "one user", path: usage + "user/sue", status: 200, body: sueJSON},
		{name: "groups", path: usage + "groups", status: 200, body: "[" + devJSON + "]"},
		{name: "one group", path: usage + "group/dev", status: 200, body: devJSON},
		{name: "queues", path: usage + "queues", status: 200, body: queuesJSON},
		{name: "HEAD reads like GET", method: http.MethodHead, path: usage + "user/sue", status: 200},

		{name: "unknown user", path: usage + "user/zed", status: 404,
			body: errorJSON(404, `user "zed" not found`, "the user has no running pods and no gang reservation in this partition")},
		{name: "unknown group", path: usage + "group/ops", status: 404,
			body: errorJSON(404, `group "ops" not found`, "the group has no running applications and no gang reservation in this partition")},
		{name: "unknown partition", path: "/ws/v1/partition/gpu/usage/users", status: 404,
			body: errorJSON(404, `partition "gpu" not found`, `this scheduler enforces partition "default"`)},
		{name: "unknown endpoint", path: "/ws/v1/queues", status: 404,
			body: errorJSON(404, "no such endpoint: /ws/v1/queues", "see docs/api.md for the endpoints")},
		{name: "usage without a kind", path: "/ws/v1/partition/default/usage", status: 400,
			body: errorJSON(400, `unknown usage kind ""`, "want users, user/NAME, groups, group/NAME, queues or me")},
		{name: "usage/ without a kind", path: "/ws/v1/partition/default/usage/", status: 400,
			body: errorJSON(400, `unknown usage kind ""`, "want users, user/NAME, groups, group/NAME, queues or me")},

		{name: "user without a name", path: usage + "user", status: 400,
			body: errorJSON(400, "/usage/user needs a name: /usage/user/NAME", "/usage/user needs a name: /usage/user/NAME")},
		{name: "user with an empty name", path: usage + "user/", status: 400,
			body: errorJSON(400, "bad user name: empty", "bad user name: empty")},
		{name: "users with a name", path: usage + "users/sue", status: 400,
			body: errorJSON(400, "/usage/users takes no name", "/usage/users takes no name")},
		{name: "unknown kind", path: usage + "apps", status: 400,
			body: errorJSON(400, `unknown usage kind "apps"`, "want users, user/NAME, groups, group/NAME, queues or me")},
		{name: "too many segments", path: usage + "user/sue/extra", status: 400,
			body: errorJSON(400, "too many path segments after /usage/", `escape a "/" in a name as %2F`)},
		{name: "control character in a name", path: usage + "group/a%01b", status: 400,
			body: errorJSON(400, "bad group name: contains a control or invalid character", "bad group name: contains a control or invalid character")},
		{name: "name too long", path: usage + "user/" + strings.Repeat("x", maxNameLen+1), status: 400,
			body: errorJSON(400, "bad user name: longer than 1024 bytes", "bad user name: longer than 1024 bytes")},
		{name: "POST", method: http.MethodPost, path: usage + "users", status: 405,
			body: errorJSON(405, "method POST not allowed", "the usage API is read-only: use GET")},
		{name: "DELETE healthz", method: http.MethodDelete, path: "/healthz", status: 405,
			body: errorJSON(405, "method DELETE not allowed", "the usage API is read-only: use GET")},

		{name: "healthz", path: "/healthz", status: 200, body: "ok", ctype: "text/plain; charset=utf-8"},
		{name: "readyz on the leader", path: "/readyz", status: 200, body: "ok", ctype: "text/plain; charset=utf-8"},
		{name: "page", path: "/", status: 200, ctype: "text/html; charset=utf-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			status, body, header := get(t, h, method, tc.path, nil)
			if status != tc.status {
				t.Errorf("status %d, want %d; body %s", status, tc.status, body)
			}
			if tc.body != "" {
				if diff := cmp.Diff(tc.body+"\n", body); diff != "" {
					t.Errorf("body (-want,+got):\n%s", diff)
				}
			}
			want := tc.ctype
			if want == "" {
				want = "application/json; charset=utf-8"
			}
			if got := header.Get("Content-Type"); got != want {
				t.Errorf("Content-Type %q, want %q", got, want)
			}
			if tc.status == 405 && header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q, want GET, HEAD", header.Get("Allow"))
			}
		})
	}
}

// A name holding "/" (OIDC user names do) is reached with the slash
// escaped as %2F.
func TestEscapedSlashInName(t *testing.T) {
	m, _ := newManager(t, "", []charge{{pod: "p", user: "https://issuer/alice", queue: "root.default", app: "a", cpu: 100}})
	h := NewHandler(Options{Partition: "default", Usage: m})
	status, body, _ := get(t, h, "GET", "/ws/v1/partition/default/usage/user/https:%2F%2Fissuer%2Falice", nil)
	if status != 200 || !strings.Contains(body, `"userName":"https://issuer/alice"`) {
		t.Fatalf("status %d, body %s", status, body)
	}
}

func TestConfigEndpoint(t *testing.T) {
	opts := testOptions(t)
	cfg := opts.Config()
	status, body, _ := get(t, NewHandler(opts), "GET", "/ws/v1/config", nil)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	want := `{"checksum":"` + cfg.Checksum + `","partition":"default","partitions":[{"name":"default","queues":[` +
		`{"name":"root","queuePath":"root","parent":true,"queues":[` +
		`{"name":"default","queuePath":"root.default"},` +
		`{"name":"sandbox","queuePath":"root.sandbox","resources":{"max":{"cpu":"4","memory":"8Gi"}},"maxapplications":3,` +
		`"limits":[{"limit":"sue","users":["sue"],"maxresources":{"cpu":"2","memory":"4Gi"}},{"limit":"dev","groups":["dev"],"maxresources":{"cpu":"3"}}]}]}]}],` +
		`"notices":["partitions[0]: no queue sets submitacl, so submit ACL checks are off (YuniKorn would refuse every pod; the first submitacl turns checks on)"]}` + "\n"
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("body (-want,+got):\n%s", diff)
	}

	// What the endpoint shows reads back as a valid config with the same limits.
	var info ConfigInfo
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Checksum) != 64 || info.Checksum != cfg.Checksum {
		t.Errorf("checksum %q, want the config's %q", info.Checksum, cfg.Checksum)
	}

	// No config in force: no limits, an empty checksum.
	for name, getter := range map[string]func() *queueconfig.Config{"nil func": nil, "nil config": func() *queueconfig.Config { return nil }} {
		m, _ := newManager(t, "", nil)
		_, body, _ := get(t, NewHandler(Options{Partition: "default", Usage: m, Config: getter}), "GET", "/ws/v1/config", nil)
		if want := `{"checksum":"","partition":"default","partitions":[],"notices":[]}` + "\n"; body != want {
			t.Errorf("%s: body %s, want %s", name, body, want)
		}
	}
}

// A replica that is not the leader answers 503 for live state, is not
// ready, and still answers /healthz and /ws/v1/config.
func TestFollower(t *testing.T) {
	opts := testOptions(t)
	opts.Leader = func() (bool, string) { return false, "the Lease is held by host-b_1234" }
	h := NewHandler(opts)
	notLeader := errorJSON(503, "not the leader",
		"this scheduler replica is not the leader; only the leader has the live usage: the Lease is held by host-b_1234") + "\n"
	for _, path := range []string{"/ws/v1/partition/default/usage/users", "/ws/v1/partition/default/usage/user/sue", "/ws/v1/partition/nope/usage/users",
		"/ws/v1/partition/default/queues", "/"} {
		status, body, header := get(t, h, "GET", path, nil)
		if status != 503 || body != notLeader {
			t.Errorf("%s: %d %s, want 503 %s", path, status, body, notLeader)
		}
		if header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", path)
		}
	}
	// ?local=true answers from the follower's own state, and says so.
	for _, tc := range []struct {
		query      string
		status     int
		leaderHead string
		body       string
	}{
		{query: "?local=true", status: 200, leaderHead: "false"},
		{query: "?local=1", status: 200, leaderHead: "false"},
		{query: "?local=false", status: 503, leaderHead: "false", body: notLeader},
		{query: "?local=yes", status: 400, body: errorJSON(400, `bad query parameter local="yes"`, "local is true or false: true answers from this replica even when it is not the leader") + "\n"},
	} {
		status, body, header := get(t, h, "GET", "/ws/v1/partition/default/usage/users"+tc.query, nil)
		if status != tc.status || tc.body != "" && body != tc.body {
			t.Errorf("%s: %d %s, want %d %s", tc.query, status, body, tc.status, tc.body)
		}
		if got := header.Get(dao.HeaderLeader); got != tc.leaderHead {
			t.Errorf("%s: %s %q, want %q", tc.query, dao.HeaderLeader, got, tc.leaderHead)
		}
		if tc.status == 200 && !strings.Contains(body, `"userName":"sue"`) {
			t.Errorf("%s: body %s, want the follower's usage (sue's)", tc.query, body)
		}
	}
	status, body, _ := get(t, h, "GET", "/readyz", nil)
	if want := errorJSON(503, "not the leader", "this scheduler replica is not the leader: the Lease is held by host-b_1234") + "\n"; status != 503 || body != want {
		t.Errorf("/readyz: %d %s, want 503 %s", status, body, want)
	}
	for _, path := range []string{"/healthz", "/ws/v1/config"} {
		if status, body, _ := get(t, h, "GET", path, nil); status != 200 {
			t.Errorf("%s: %d %s, want 200", path, status, body)
		}
	}
}

// tokens is a fake authenticator: a bearer token per user.
type tokens map[string]string

func (tk tokens) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, false, nil
	}
	name, ok := tk[tok]
	if !ok {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
}

// allowPaths is a fake authorizer: user -> allowed path prefixes, verb get
// on non-resource paths only.
type allowPaths map[string][]string

func (ap allowPaths) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.IsResourceRequest() || a.GetVerb() != "get" {
		return authorizer.DecisionNoOpinion, "not a non-resource get", nil
	}
	for _, p := range ap[a.GetUser().GetName()] {
		if strings.HasPrefix(a.GetPath(), p) {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "no RBAC rule allows it", nil
}

func TestAuthFilter(t *testing.T) {
	opts := testOptions(t)
	opts.Auth = &Auth{Authenticator: tokens{"t-admin": "admin", "t-eve": "eve"}, Authorizer: allowPaths{"admin": {"/ws/v1/", "/"}, "eve": {"/ws/v1/config"}}}
	h := NewHandler(opts)
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	tests := []struct {
		name, path string
		header     http.Header
		status     int
		body       string
	}{
		{name: "no token", path: "/ws/v1/partition/default/usage/users", status: 401,
			body: errorJSON(401, "unauthorized", "send a bearer token the API server accepts: Authorization: Bearer TOKEN")},
		{name: "unknown token", path: "/", header: bearer("nope"), status: 401,
			body: errorJSON(401, "unauthorized", "send a bearer token the API server accepts: Authorization: Bearer TOKEN")},
		{name: "not allowed", path: "/ws/v1/partition/default/usage/users", header: bearer("t-eve"), status: 403,
			body: errorJSON(403, `forbidden: user "eve" cannot get path "/ws/v1/partition/default/usage/users"`, "no RBAC rule allows it")},
		{name: "allowed path", path: "/ws/v1/config", header: bearer("t-eve"), status: 200},
		{name: "allowed", path: "/ws/v1/partition/default/usage/user/sue", header: bearer("t-admin"), status: 200, body: sueJSON},
		{name: "page allowed", path: "/", header: bearer("t-admin"), status: 200},
		{name: "healthz needs nothing", path: "/healthz", status: 200, body: "ok"},
		{name: "readyz needs nothing", path: "/readyz", status: 200, body: "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, header := get(t, h, "GET", tc.path, tc.header)
			if status != tc.status {
				t.Errorf("status %d, want %d: %s", status, tc.status, body)
			}
			if tc.body != "" && body != tc.body+"\n" {
				t.Errorf("body %s, want %s", body, tc.body)
			}
			if status == 401 && header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

func TestNewHandlerNeedsUsage(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewHandler without Usage did not panic")
		}
	}()
	NewHandler(Options{})
}
