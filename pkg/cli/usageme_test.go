package cli

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/rest"
	"github.com/userquota/userquota/pkg/ugm"
)

// callers stands in for the API server's TokenReview: a bearer token
// names the caller. The REST API's own authentication runs on it, and its
// authorizer allows nothing: --me needs no RBAC.
func callers(ids map[string]*user.DefaultInfo) *rest.Auth {
	return &rest.Auth{
		Authenticator: authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
			tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			u, ok := ids[tok]
			if !ok {
				return nil, false, nil
			}
			return &authenticator.Response{User: u}, true, nil
		}),
		Authorizer: authorizerfactory.NewAlwaysDenyAuthorizer(),
	}
}

// TestUsageMe: `usage --me` prints the caller's own usage from /usage/me,
// and their groups' with other users' applications and gangs unnamed.
func TestUsageMe(t *testing.T) {
	srv := usageServer(t, callers(map[string]*user.DefaultInfo{
		"t-sue": {Name: "sue", Groups: []string{"dev", "system:authenticated"}},
		"t-ann": {Name: "ann", Groups: []string{"dev"}},
		"t-zed": {Name: "zed"},
		"t-esc": {Name: "sue\x1b]0;owned\x07", Groups: []string{"dev\u202e"}},
	}), nil, testGang{key: "TaskGroups ns/ann-job", req: ugm.Request{User: "ann", Groups: []string{"dev"}, Queue: "root.sandbox",
		App: ugm.AppKey{Namespace: "ns", ID: "ann-job"}, Resources: resources.FromMap(map[string]int64{"cpu": 1000, "memory": 1 << 30, "pods": 2})}})
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // exact, when set
		stderr []string
	}{
		{name: "own usage and group", args: []string{"--token", "t-sue"}, code: 0, stdout: `you are sue (groups dev, system:authenticated)

user sue · 1 running application: ns/train (group dev)
   QUEUE      APPLICATIONS  CPU         MEMORY         PODS
   root       1             2           2Gi            2
!    sandbox  1             2/2 (100%)  2Gi/4Gi (50%)  2

group dev · 1 running application: ns/train · reserved for 1 gang: (another user's)
  QUEUE      APPLICATIONS  CPU                    MEMORY             PODS
  root       1 +1 gang     2 +1 reserved          2Gi +1Gi reserved  2 +2 reserved
    sandbox  1 +1 gang     2/3 (66%) +1 reserved  2Gi +1Gi reserved  2 +2 reserved

group usage is every member's; (another user's) are other users' applications and gangs

! at or over 90% of a limit
+N reserved: held for gangs not running yet, counted against limits
`},
		{name: "a gang only, another's application unnamed", args: []string{"--token", "t-ann"}, code: 0, stdout: `you are ann (groups dev)

user ann · no running applications · reserved for 1 gang: TaskGroups ns/ann-job
  QUEUE      APPLICATIONS  CPU          MEMORY         PODS
  root       +1 gang       +1 reserved  +1Gi reserved  +2 reserved
    sandbox  +1 gang       +1 reserved  +1Gi reserved  +2 reserved

group dev · 1 running application: (another user's) · reserved for 1 gang: TaskGroups ns/ann-job
  QUEUE      APPLICATIONS  CPU                    MEMORY             PODS
  root       1 +1 gang     2 +1 reserved          2Gi +1Gi reserved  2 +2 reserved
    sandbox  1 +1 gang     2/3 (66%) +1 reserved  2Gi +1Gi reserved  2 +2 reserved

group usage is every member's; (another user's) are other users' applications and gangs

+N reserved: held for gangs not running yet, counted against limits
`},
		{name: "nothing running", args: []string{"--token", "t-zed"}, code: 0, stdout: `you are zed (no groups)

user zed · no running applications
`},
		{name: "json", args: []string{"--token", "t-zed", "-o", "json"}, code: 0, stdout: `{
  "userName": "zed",
  "groups": [],
  "user": {
    "userName": "zed",
    "groups": {},
    "queues": null
  },
  "groupUsage": []
}

`},
		{name: "control characters escaped", args: []string{"--token", "t-esc"}, code: 0, stdout: `you are sue\u001b]0;owned\u0007 (groups dev\u202e)

user sue\u001b]0;owned\u0007 · no running applications
`},
		{name: "no token", args: nil, code: 1,
			stderr: []string{"/ws/v1/partition/default/usage/me: 401 Unauthorized: unauthorized: send a bearer token"}},
		{name: "with --user", args: []string{"--user", "sue"}, code: 2, stderr: []string{"--me excludes --user and --group", "Usage:"}},
		{name: "with --group", args: []string{"--group", "dev"}, code: 2, stderr: []string{"--me excludes --user and --group"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"usage", "--server", srv.URL, "--me"}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			checkOutput(t, tc.stdout, stdout.String(), tc.stderr, stderr.String())
		})
	}
}
