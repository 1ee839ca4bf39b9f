package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/rest/dao"
	"github.com/userquota/userquota/pkg/ugm"
)

// identities is a fake authenticator: a bearer token per user, with groups,
// as a TokenReview answers.
type identities map[string]*user.DefaultInfo

func (ids identities) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, false, nil
	}
	u, ok := ids[tok]
	if !ok {
		return nil, false, nil
	}
	return &authenticator.Response{User: u}, true, nil
}

// selfCallers: sue and ann (group dev, ann with a gang reserved), bob (no
// group), zed who runs nothing, none with RBAC on the API; admin, who may
// read everything; many, sue's name with more groups than are looked up
// one by one.
var selfCallers = identities{
	"t-sue":   {Name: "sue", Groups: []string{"system:authenticated", "dev"}},
	"t-ann":   {Name: "ann", Groups: []string{"dev", "system:authenticated"}},
	"t-bob":   {Name: "bob", Groups: []string{"system:authenticated"}},
	"t-zed":   {Name: "zed", Groups: []string{"ops", "system:authenticated"}},
	"t-admin": {Name: "admin", Groups: []string{"system:authenticated"}},
	"t-many":  {Name: "sue", Groups: manyGroups()},
}

// manyGroups is dev among selfGroupLookups+4 groups the scheduler does not
// track (an OIDC user's).
func manyGroups() []string {
	gs := []string{"dev"}
	for i := range selfGroupLookups + 4 {
		gs = append(gs, fmt.Sprintf("oidc:team-%02d", i))
	}
	return gs
}

// The answers of /usage/me over reservedOptions (sue 2 cpu of ns/train in
// root.sandbox, group dev; ann's gang of 1 cpu reserved there against dev;
// bob in root.default, no group).
const (
	sueSelfJSON = `{"userName":"sue","groups":["dev","system:authenticated"],"user":` + sueJSON + `,"groupUsage":[` + devSeenBySueJSON + `]}`
	// devSeenBySueJSON is devReservedJSON with ann's gang hidden.
	devSeenBySueJSON = `{"groupName":"dev","applications":["ns/train"],"queues":{"queuePath":"root","resourceUsage":{"cpu":2000,"memory":2147483648,"pods":2},"runningApplications":["ns/train"],"maxResources":{},"maxApplications":0,` +
		reservedGang + `,"reservedGangs":["(another user's)"],"children":[` +
		`{"queuePath":"root.sandbox","resourceUsage":{"cpu":2000,"memory":2147483648,"pods":2},"runningApplications":["ns/train"],"maxResources":{"cpu":3000},"maxApplications":0,` +
		reservedGang + `,"reservedGangs":["(another user's)"],"children":[]}]}}`
	annSelfJSON = `{"userName":"ann","groups":["dev","system:authenticated"],"user":` + annReservedJSON + `,"groupUsage":[` + devSeenByAnnJSON + `]}`
	// devSeenByAnnJSON is devReservedJSON with sue's application hidden.
	devSeenByAnnJSON = `{"groupName":"dev","applications":["(another user's)"],"queues":{"queuePath":"root","resourceUsage":{"cpu":2000,"memory":2147483648,"pods":2},"runningApplications":["(another user's)"],"maxResources":{},"maxApplications":0,` +
		reservedGang + `,"reservedGangs":["TaskGroups ns/ann-job"],"children":[` +
		`{"queuePath":"root.sandbox","resourceUsage":{"cpu":2000,"memory":2147483648,"pods":2},"runningApplications":["(another user's)"],"maxResources":{"cpu":3000},"maxApplications":0,` +
		reservedGang + `,"reservedGangs":["TaskGroups ns/ann-job"],"children":[]}]}}`
	bobSelfJSON = `{"userName":"bob","groups":["system:authenticated"],"user":` + bobReservedJSON + `,"groupUsage":[]}`
	zedSelfJSON = `{"userName":"zed","groups":["ops","system:authenticated"],"user":{"userName":"zed","groups":{},"queues":null},"groupUsage":[]}`
)

// TestSelfUsage: an authenticated caller without RBAC on the API reads
// their own usage and their groups' (others' names hidden) at /usage/me,
// and is refused every whole-cluster view; without credentials, 401.
func TestSelfUsage(t *testing.T) {
	opts := reservedOptions(t)
	opts.Auth = &Auth{Authenticator: selfCallers, Authorizer: allowPaths{"admin": {"/"}}}
	h := NewHandler(opts)
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	const usage = "/ws/v1/partition/default/usage/"
	forbidden := func(name, path string) string {
		return errorJSON(403, fmt.Sprintf("forbidden: user %q cannot get path %q", name, path), "no RBAC rule allows it")
	}
	tests := []struct {
		name, method, path, token string
		status                    int
		body                      string // exact, without the final newline; "" not checked
	}{
		{name: "own usage and group, another's gang hidden", path: usage + "me", token: "t-sue", status: 200, body: sueSelfJSON},
		{name: "own gang, another's application hidden", path: usage + "me", token: "t-ann", status: 200, body: annSelfJSON},
		{name: "no group tracked", path: usage + "me", token: "t-bob", status: 200, body: bobSelfJSON},
		{name: "no usage: empty but valid", path: usage + "me", token: "t-zed", status: 200, body: zedSelfJSON},
		{name: "many groups: one copy of all groups, the same answer", path: usage + "me", token: "t-many", status: 200,
			body: strings.Replace(sueSelfJSON, `"groups":["dev","system:authenticated"]`, `"groups":`+mustJSON(t, sortedCopy(manyGroups())), 1)},
		{name: "admin's own", path: usage + "me", token: "t-admin", status: 200,
			body: `{"userName":"admin","groups":["system:authenticated"],"user":{"userName":"admin","groups":{},"queues":null},"groupUsage":[]}`},
		{name: "HEAD", method: http.MethodHead, path: usage + "me", token: "t-sue", status: 200},
		{name: "local", path: usage + "me?local=true", token: "t-sue", status: 200, body: sueSelfJSON},

		{name: "no token", path: usage + "me", status: 401,
			body: errorJSON(401, "unauthorized", "send a bearer token the API server accepts: Authorization: Bearer TOKEN")},
		{name: "unknown token", path: usage + "me", token: "nope", status: 401,
			body: errorJSON(401, "unauthorized", "send a bearer token the API server accepts: Authorization: Bearer TOKEN")},
		{name: "no token, whole view", path: usage + "users", status: 401,
			body: errorJSON(401, "unauthorized", "send a bearer token the API server accepts: Authorization: Bearer TOKEN")},
		{name: "unknown partition", path: "/ws/v1/partition/gpu/usage/me", token: "t-sue", status: 404,
			body: errorJSON(404, `partition "gpu" not found`, `this scheduler enforces partition "default"`)},
		{name: "POST", method: http.MethodPost, path: usage + "me", token: "t-sue", status: 405},

		{name: "users refused", path: usage + "users", token: "t-sue", status: 403, body: forbidden("sue", usage+"users")},
		{name: "groups refused", path: usage + "groups", token: "t-sue", status: 403, body: forbidden("sue", usage+"groups")},
		{name: "queues refused", path: usage + "queues", token: "t-sue", status: 403, body: forbidden("sue", usage+"queues")},
		{name: "another user refused", path: usage + "user/bob", token: "t-sue", status: 403, body: forbidden("sue", usage+"user/bob")},
		{name: "own name through the whole API refused", path: usage + "user/sue", token: "t-sue", status: 403, body: forbidden("sue", usage+"user/sue")},
		{name: "own group through the whole API refused", path: usage + "group/dev", token: "t-sue", status: 403, body: forbidden("sue", usage+"group/dev")},
		{name: "queue tree refused", path: "/ws/v1/partition/default/queues", token: "t-sue", status: 403, body: forbidden("sue", "/ws/v1/partition/default/queues")},
		{name: "config refused", path: "/ws/v1/config", token: "t-sue", status: 403, body: forbidden("sue", "/ws/v1/config")},
		{name: "page refused", path: "/", token: "t-zed", status: 403, body: forbidden("zed", "/")},
		{name: "me/ is another path", path: usage + "me/", token: "t-sue", status: 403, body: forbidden("sue", usage+"me/")},
		{name: "me/../users is cleaned, not served", path: usage + "me/../users", token: "t-sue", status: http.StatusTemporaryRedirect},
		{name: "an escaped slash after me is another path", path: usage + "me%2F..%2Fusers", token: "t-sue", status: 403, body: forbidden("sue", usage+"me/../users")},

		{name: "whole view with RBAC", path: usage + "users", token: "t-admin", status: 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var header http.Header
			if tc.token != "" {
				header = bearer(tc.token)
			}
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			status, body, hdr := get(t, h, method, tc.path, header)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if tc.body != "" {
				if diff := cmp.Diff(tc.body+"\n", body); diff != "" {
					t.Errorf("body (-want,+got):\n%s", diff)
				}
			}
			if status == 200 && method == http.MethodGet && strings.Contains(tc.path, "/usage/me") {
				var su dao.SelfUsage
				if err := json.Unmarshal([]byte(body), &su); err != nil {
					t.Errorf("the answer does not decode as dao.SelfUsage: %v", err)
				}
				if got := hdr.Get(dao.HeaderLeader); got != "true" {
					t.Errorf("%s: %q, want true", dao.HeaderLeader, got)
				}
			}
		})
	}
}

// TestSelfUsageCatchAll: a caller whose groups no limit names sees the
// catch-all group "*" their applications are tracked against (its limit
// holds their next pod), with the other users' applications counted but
// not named.
func TestSelfUsageCatchAll(t *testing.T) {
	m, cfg := newManager(t, queueconfigtest.Root(`
queues:
- name: team
  limits:
  - limit: ops
    groups: [ops]
    maxresources: {vcore: 8}
  - limit: everyone
    groups: ["*"]
    maxresources: {vcore: 4}
    maxapplications: 3
`), []charge{
		{pod: "p1", user: "sue", groups: []string{"dev"}, queue: "root.team", app: "train", cpu: 1000},
		{pod: "p2", user: "ann", groups: []string{"dev"}, queue: "root.team", app: "zeta", cpu: 1000},
		{pod: "p3", user: "ann", groups: []string{"dev"}, queue: "root.team", app: "alpha", cpu: 1000},
	})
	opts := Options{Partition: "default", Usage: m, Config: func() *queueconfig.Config { return cfg },
		Auth: &Auth{Authenticator: selfCallers, Authorizer: allowPaths{}}}
	status, body, _ := get(t, NewHandler(opts), http.MethodGet, "/ws/v1/partition/default/usage/me", http.Header{"Authorization": {"Bearer t-sue"}})
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var got dao.SelfUsage
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.GroupUsage) != 1 {
		t.Fatalf("groupUsage %s, want the group \"*\" alone", body)
	}
	g := got.GroupUsage[0]
	team := g.Queues.Children[0]
	want := ugm.GroupUsage{GroupName: "*",
		Applications: []string{dao.Hidden, dao.Hidden, "ns/train"},
		Queues: &ugm.QueueUsage{QueuePath: "root", ResourceUsage: resources.FromMap(map[string]int64{"cpu": 3000, "pods": 3}),
			RunningApplications: []string{dao.Hidden, dao.Hidden, "ns/train"}, MaxResources: g.Queues.MaxResources,
			Children: []*ugm.QueueUsage{{QueuePath: "root.team", ResourceUsage: resources.FromMap(map[string]int64{"cpu": 3000, "pods": 3}),
				RunningApplications: []string{dao.Hidden, dao.Hidden, "ns/train"}, MaxResources: team.MaxResources, MaxApplications: 3,
				Children: []*ugm.QueueUsage{}}}}}
	if diff := cmp.Diff(want, g, cmp.Comparer(func(a, b resources.Vector) bool { return fmt.Sprint(a.Map()) == fmt.Sprint(b.Map()) })); diff != "" {
		t.Errorf("group * seen by sue (-want,+got):\n%s", diff)
	}
	if got.User.Groups["ns/train"] != "*" {
		t.Errorf("sue's application is tracked against %q, want \"*\"", got.User.Groups["ns/train"])
	}
	if strings.Contains(body, "zeta") || strings.Contains(body, "alpha") {
		t.Errorf("ann's applications are named in sue's answer: %s", body)
	}
}

// TestSelfUsageWithoutAuth: with restAuth false nobody is authenticated, so
// there is no "me": 400 saying so, not someone's usage.
func TestSelfUsageWithoutAuth(t *testing.T) {
	status, body, _ := get(t, NewHandler(reservedOptions(t)), http.MethodGet, "/ws/v1/partition/default/usage/me", nil)
	want := errorJSON(400, "no caller: this server does not authenticate requests",
		"/usage/me is the authenticated caller's own usage, and this server runs without authentication (restAuth: false): read /usage/user/NAME instead")
	if status != 400 || body != want+"\n" {
		t.Errorf("%d %s, want 400 %s", status, body, want)
	}
}

// TestSelfUsageFollower: /usage/me is leader only, as every usage endpoint.
func TestSelfUsageFollower(t *testing.T) {
	opts := reservedOptions(t)
	opts.Auth = &Auth{Authenticator: selfCallers, Authorizer: allowPaths{}}
	opts.Leader = func() (bool, string) { return false, "test" }
	status, body, hdr := get(t, NewHandler(opts), http.MethodGet, "/ws/v1/partition/default/usage/me", http.Header{"Authorization": {"Bearer t-sue"}})
	if status != 503 || hdr.Get(dao.HeaderLeader) != "false" || hdr.Get("Retry-After") == "" {
		t.Errorf("%d %s %v, want 503 with %s: false and Retry-After", status, body, hdr, dao.HeaderLeader)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string{}, s...)
	slices.Sort(out)
	return out
}
