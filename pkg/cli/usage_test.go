package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/rest"
	"github.com/userquota/userquota/pkg/ugm"
)

// testGang is a gang reservation held by usageServer's ugm.
type testGang struct {
	key string
	req ugm.Request
}

// usageServer serves the REST API over real usage: sue at her cpu limit in
// root.sandbox (2 of 2), group dev at 2 of 3, bob unlimited in root.default;
// and the gangs reserved. auth (nil: none) is the API's own protection;
// wrap (nil: none) wraps the whole handler.
func usageServer(t *testing.T, auth *rest.Auth, wrap func(http.Handler) http.Handler, gangs ...testGang) *httptest.Server {
	t.Helper()
	cfg := queueconfigtest.MustParse(t, queueconfigtest.Sandbox)
	m := ugm.New()
	m.SetConfig(cfg.Partition("default"))
	l := ledger.New(m)
	for i, c := range []struct {
		user   string
		groups []string
		queue  string
		app    string
		cpu    int64
	}{
		{"sue", []string{"dev"}, "root.sandbox", "train", 1000},
		{"sue", []string{"dev"}, "root.sandbox", "train", 1000},
		{"bob", nil, "root.default", "web", 500},
	} {
		req := ugm.Request{User: c.user, Groups: c.groups, Queue: c.queue, App: ugm.AppKey{Namespace: "ns", ID: c.app},
			Resources: resources.FromMap(map[string]int64{"cpu": c.cpu, "memory": 1 << 30, "pods": 1})}
		if err := l.Allocate(string(rune('a'+i)), req); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range gangs {
		if err := m.ReserveGang(g.key, &g.req); err != nil {
			t.Fatalf("reserving %s: %v", g.key, err)
		}
	}
	var h http.Handler = rest.NewHandler(rest.Options{Partition: "default", Usage: m, Config: func() *queueconfig.Config { return cfg }, Auth: auth})
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestUsage(t *testing.T) {
	srv := usageServer(t, nil, nil)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // exact, when set
		stderr []string
	}{
		{name: "one user", args: []string{"--user", "sue"}, code: 0, stdout: `user sue · 1 running application: ns/train (group dev)
   QUEUE      APPLICATIONS  CPU         MEMORY         PODS
   root       1             2           2Gi            2
!    sandbox  1             2/2 (100%)  2Gi/4Gi (50%)  2

! at or over 90% of a limit
`},
		{name: "one group", args: []string{"--group", "dev", "-o", "tree"}, code: 0, stdout: `group dev · 1 running application: ns/train
  QUEUE      APPLICATIONS  CPU        MEMORY  PODS
  root       1             2          2Gi     2
    sandbox  1             2/3 (66%)  2Gi     2
`},
		{name: "everything", args: nil, code: 0, stdout: `queues (all users, against each queue's own max)
  QUEUE      APPLICATIONS  CPU        MEMORY         PODS
  root       2             2500m      3Gi            3
    default  1             500m       1Gi            1
    sandbox  1/3 (33%)     2/4 (50%)  2Gi/8Gi (25%)  2

user bob · 1 running application: ns/web
  QUEUE      APPLICATIONS  CPU   MEMORY  PODS
  root       1             500m  1Gi     1
    default  1             500m  1Gi     1

user sue · 1 running application: ns/train (group dev)
   QUEUE      APPLICATIONS  CPU         MEMORY         PODS
   root       1             2           2Gi            2
!    sandbox  1             2/2 (100%)  2Gi/4Gi (50%)  2

group dev · 1 running application: ns/train
  QUEUE      APPLICATIONS  CPU        MEMORY  PODS
  root       1             2          2Gi     2
    sandbox  1             2/3 (66%)  2Gi     2

! at or over 90% of a limit
`},
		{name: "unknown user", args: []string{"--user", "zed"}, code: 1,
			stderr: []string{"/ws/v1/partition/default/usage/user/zed: 404 Not Found: user \"zed\" not found: the user has no running pods and no gang reservation in this partition"}},
		{name: "unknown partition", args: []string{"--partition", "gpu"}, code: 1, stderr: []string{`partition "gpu" not found`}},
		{name: "user and group", args: []string{"--user", "a", "--group", "b"}, code: 2, stderr: []string{"--user and --group exclude each other", "Usage:"}},
		{name: "bad output", args: []string{"-o", "yaml"}, code: 2, stderr: []string{`-o must be tree or json, not "yaml"`}},
		{name: "extra argument", args: []string{"sue"}, code: 2, stderr: []string{`unexpected argument "sue"`}},
		{name: "token and token file", args: []string{"--token", "a", "--token-file", "b"}, code: 2, stderr: []string{"exclude each other"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"usage", "--server", srv.URL}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			checkOutput(t, tc.stdout, stdout.String(), tc.stderr, stderr.String())
		})
	}
}

// TestUsageReserved: the tables show what gang reservations hold beside
// the usage, for a user with a reservation only too, and name the gangs.
func TestUsageReserved(t *testing.T) {
	srv := usageServer(t, nil, nil, testGang{key: "TaskGroups ns/ann-job", req: ugm.Request{User: "ann", Groups: []string{"dev"}, Queue: "root.sandbox",
		App: ugm.AppKey{Namespace: "ns", ID: "ann-job"}, Resources: resources.FromMap(map[string]int64{"cpu": 1000, "memory": 1 << 30, "pods": 2})}})
	for _, tc := range []struct {
		name   string
		args   []string
		stdout string
	}{
		{name: "a user with a reservation only", args: []string{"--user", "ann"}, stdout: `user ann · no running applications · reserved for 1 gang: TaskGroups ns/ann-job
  QUEUE      APPLICATIONS  CPU          MEMORY         PODS
  root       +1 gang       +1 reserved  +1Gi reserved  +2 reserved
    sandbox  +1 gang       +1 reserved  +1Gi reserved  +2 reserved

+N reserved: held for gangs not running yet, counted against limits
`},
		{name: "a group running one application and reserving another", args: []string{"--group", "dev"}, stdout: `group dev · 1 running application: ns/train · reserved for 1 gang: TaskGroups ns/ann-job
  QUEUE      APPLICATIONS  CPU                    MEMORY             PODS
  root       1 +1 gang     2 +1 reserved          2Gi +1Gi reserved  2 +2 reserved
    sandbox  1 +1 gang     2/3 (66%) +1 reserved  2Gi +1Gi reserved  2 +2 reserved

+N reserved: held for gangs not running yet, counted against limits
`},
		{name: "a user without a reservation is as before", args: []string{"--user", "sue"}, stdout: `user sue · 1 running application: ns/train (group dev)
   QUEUE      APPLICATIONS  CPU         MEMORY         PODS
   root       1             2           2Gi            2
!    sandbox  1             2/2 (100%)  2Gi/4Gi (50%)  2

! at or over 90% of a limit
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"usage", "--server", srv.URL}, tc.args...), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if diff := cmp.Diff(tc.stdout, stdout.String()); diff != "" {
				t.Errorf("stdout (-want,+got):\n%s", diff)
			}
		})
	}

	// Everything: the queue tree too, and one legend for both marks.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"usage", "--server", srv.URL}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	containsInOrder(t, "stdout", stdout.String(), []string{
		"queues (all users",
		"    sandbox  1/3 (33%) +1 gang  2/4 (50%) +1 reserved  2Gi/8Gi (25%) +1Gi reserved  2 +2 reserved",
		"user ann · no running applications · reserved for 1 gang: TaskGroups ns/ann-job",
		"user bob",
		"user sue",
		"group dev · 1 running application: ns/train · reserved for 1 gang: TaskGroups ns/ann-job",
		"! at or over 90% of a limit\n+N reserved: held for gangs not running yet, counted against limits\n",
	})
}

func TestUsageServerFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "missing --server"},
		{[]string{"--server", "ftp://x"}, "--server must be an http:// or https:// URL"},
		{[]string{"--server", "localhost:9089"}, "--server must be an http:// or https:// URL"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"usage"}, tc.args...), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %s", tc.args, code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"usage", "--server", "http://127.0.0.1:1"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "connection refused") {
		t.Errorf("unreachable server: exit %d, stderr %s", code, stderr.String())
	}
}

// -o json prints the server's JSON: one document for a user, and the
// queues, users and groups together when none is named.
func TestUsageJSON(t *testing.T) {
	srv := usageServer(t, nil, nil)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"usage", "--server", srv.URL + "/", "--user", "sue", "-o", "json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	resp, err := http.Get(srv.URL + "/ws/v1/partition/default/usage/user/sue")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var fromServer, printed any
	if err := json.NewDecoder(resp.Body).Decode(&fromServer); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(stdout.Bytes(), &printed); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout.String())
	}
	if diff := cmp.Diff(fromServer, printed); diff != "" {
		t.Errorf("printed JSON differs from the server's (-server,+printed):\n%s", diff)
	}

	stdout.Reset()
	if code := run([]string{"usage", "--server", srv.URL, "-o", "json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var all struct {
		Queues struct {
			QueuePath string `json:"queuePath"`
		} `json:"queues"`
		Users  []struct{ UserName string }  `json:"users"`
		Groups []struct{ GroupName string } `json:"groups"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &all); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout.String())
	}
	if all.Queues.QueuePath != "root" || len(all.Users) != 2 || len(all.Groups) != 1 {
		t.Errorf("all = %+v", all)
	}
}

// checkOutput checks a run's stdout, exactly when wantStdout is set, and
// that its stderr holds wantStderr in order.
func checkOutput(t *testing.T, wantStdout, stdout string, wantStderr []string, stderr string) {
	t.Helper()
	if wantStdout != "" {
		if diff := cmp.Diff(wantStdout, stdout); diff != "" {
			t.Errorf("stdout (-want,+got):\n%s", diff)
		}
	}
	containsInOrder(t, "stderr", stderr, wantStderr)
}

// The bearer token goes to the server, from --token or --token-file.
func TestUsageToken(t *testing.T) {
	srv := usageServer(t, nil, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer s3cret" {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"status_code":401,"message":"unauthorized","description":"no token"}`))
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--token", "s3cret"}, {"--token-file", file}} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"usage", "--server", srv.URL, "--user", "bob"}, args...), &stdout, &stderr); code != 0 {
			t.Errorf("%q: exit %d: %s", args, code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"usage", "--server", srv.URL}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "401 Unauthorized: unauthorized: no token") {
		t.Errorf("without a token: exit %d: %s", code, stderr.String())
	}
}

// The CLI and the page agree on percentages.
func TestPercentMatchesPage(t *testing.T) {
	for _, c := range [][2]int64{{0, 10}, {9, 10}, {899, 1000}, {2, 3}, {10, 10}, {15, 10}, {0, 0}, {1, 0}, {1 << 62, 1}} {
		if got, want := percent(c[0], c[1]), rest.Percent(c[0], c[1]); got != want {
			t.Errorf("percent(%d, %d) = %d, page says %d", c[0], c[1], got, want)
		}
	}
	if hotPercent != rest.HotPercent {
		t.Errorf("hotPercent %d, page %d", hotPercent, rest.HotPercent)
	}
}
