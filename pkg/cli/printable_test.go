package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/rest"
	"github.com/userquota/userquota/pkg/ugm"
)

func TestPrintable(t *testing.T) {
	tests := []struct {
		in     string
		layout bool
		want   string
	}{
		{in: "sue", want: "sue"},
		{in: "Jürgen 名前", want: "Jürgen 名前"},
		{in: "a\x1b[2Jb", want: `a\u001b[2Jb`},
		{in: "\x1b]0;pwned\x07", want: `\u001b]0;pwned\u0007`},
		{in: "x\ry", want: `x\u000dy`},
		{in: "a\nb\tc", want: `a\u000ab\u0009c`},
		{in: "a\nb\tc", layout: true, want: "a\nb\tc"},
		{in: "del\x7f", want: `del\u007f`},
		{in: "csi\u009b31m", want: `csi\u009b31m`},
		{in: "evil\u202etxt.exe", want: `evil\u202etxt.exe`},
		{in: "iso\u2066late", want: `iso\u2066late`},
		{in: "bad\xffbyte", want: `bad\xffbyte`},
	}
	for _, tc := range tests {
		if got := printable(tc.in, tc.layout); got != tc.want {
			t.Errorf("printable(%q, %v) = %q, want %q", tc.in, tc.layout, got, tc.want)
		}
	}
}

// hasControl reports a character a terminal acts on, other than the
// newlines and tabs of our own layout.
func hasControl(s string) bool {
	for _, r := range s {
		if unsafeRune(r, true) && r != utf8.RuneError {
			return true
		}
	}
	return false
}

// TestUsagePrintsNoControlCharacters: names from pods and the server's
// messages reach the terminal escaped, in the tables, the JSON and the
// errors. The user, group and application come from annotations and
// labels a user writes; the scheduler's REST API returns them as they are.
func TestUsagePrintsNoControlCharacters(t *testing.T) {
	const (
		user  = "sue\x1b]0;pwned\x07"
		group = "dev\x1b[2J"
		app   = "train\u009b31m\u202eevil"
	)
	cfg := queueconfigtest.MustParse(t, queueconfigtest.Sandbox)
	m := ugm.New()
	m.SetConfig(cfg.Partition("default"))
	req := ugm.Request{User: user, Groups: []string{group}, Queue: "root.sandbox", App: ugm.AppKey{Namespace: "ns", ID: app},
		Resources: resources.FromMap(map[string]int64{"cpu": 1000, "pods": 1})}
	l := ledger.New(m)
	if err := l.Allocate("a", req); err != nil {
		t.Fatal(err)
	}
	// The REST API refuses a control character in the user or group of
	// its path, so one user and one group are asked for by plain names.
	req.User, req.Groups, req.App.ID = "amy", []string{"ops"}, "web\u009b31m\u202eevil"
	if err := l.Allocate("b", req); err != nil {
		t.Fatal(err)
	}
	api := rest.NewHandler(rest.Options{Partition: "default", Usage: m, Config: func() *queueconfig.Config { return cfg }})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/user/broken") {
			http.Error(w, "boom\x1b[2J\x1b[Hall fine", http.StatusInternalServerError)
			return
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	tests := []struct {
		name string
		args []string
		want string // the escaped name that must be shown
	}{
		{name: "everything", want: `sue\u001b]0;pwned\u0007`},
		{name: "one user", args: []string{"--user", "amy"}, want: `web\u009b31m\u202eevil`},
		{name: "json", args: []string{"-o", "json"}, want: `\u009b`},
		{name: "the server's error", args: []string{"--user", "broken"}, want: `boom\u001b[2J\u001b[Hall fine`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			run(append([]string{"usage", "--server", srv.URL}, tc.args...), &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if hasControl(out) {
				t.Errorf("output holds control characters:\n%q", out)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("output does not show %s:\n%s", tc.want, out)
			}
			if tc.name == "json" && !json.Valid(stdout.Bytes()) {
				t.Errorf("escaped JSON is not JSON:\n%s", stdout.String())
			}
		})
	}
}
