package rest

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/userquota/userquota/pkg/rest/dao"
)

// TestResizeCheck: POST dao.ResizeCheckPath hands the pod to Options.Resize and
// answers what it says, behind the same authentication and authorization
// as every other path, on the leader only.
func TestResizeCheck(t *testing.T) {
	const path = "/ws/v1/partition/default/check/resize"
	var asked *v1.Pod
	check := func(p *v1.Pod) (dao.ResizeCheck, error) {
		asked = p
		switch p.Name {
		case "over":
			return dao.ResizeCheck{Pod: "ns/over", Charged: true, Reason: `user "sue" would exceed maxresources in root.sandbox: cpu 2+1 > 2`}, nil
		case "unsynced":
			return dao.ResizeCheck{}, errors.New("the scheduler has not yet seen every pod since it started")
		}
		return dao.ResizeCheck{Pod: "ns/" + p.Name, Charged: true, Fits: true}, nil
	}
	podJSON := func(name, uid string) string {
		return `{"metadata":{"namespace":"ns","name":"` + name + `","uid":"` + uid + `"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"3"}}}]}}`
	}
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	tests := []struct {
		name, method, path, body string
		header                   http.Header
		leading                  *bool
		noResize                 bool
		status                   int
		want                     string // part of the body
	}{
		{name: "fits", body: podJSON("ok", "u1"), header: bearer("t-hook"), status: 200, want: `{"pod":"ns/ok","charged":true,"fits":true}`},
		{name: "over: the scheduler's reason", body: podJSON("over", "u2"), header: bearer("t-hook"), status: 200,
			want: `"fits":false,"reason":"user \"sue\" would exceed maxresources in root.sandbox: cpu 2+1 \u003e 2"`},
		{name: "not synced yet: 503", body: podJSON("unsynced", "u3"), header: bearer("t-hook"), status: 503, want: "not yet seen every pod"},
		{name: "no token", body: podJSON("ok", "u1"), status: 401},
		{name: "not allowed", body: podJSON("ok", "u1"), header: bearer("t-eve"), status: 403, want: `cannot get path \"` + path + `\"`},
		{name: "follower: 503", body: podJSON("ok", "u1"), header: bearer("t-hook"), leading: new(bool), status: 503, want: "not the leader"},
		{name: "no uid", body: podJSON("ok", ""), header: bearer("t-hook"), status: 400, want: "has no metadata.uid"},
		{name: "not a pod", body: `[1]`, header: bearer("t-hook"), status: 400, want: "want a Pod as JSON"},
		{name: "body too large", body: `{"metadata":{"name":"` + strings.Repeat("x", maxResizeBody) + `"}}`, header: bearer("t-hook"), status: 400, want: "too large"},
		{name: "another partition: not granted", path: "/ws/v1/partition/gpu/check/resize", body: podJSON("ok", "u1"), header: bearer("t-hook"), status: 403},
		{name: "another partition", path: "/ws/v1/partition/gpu/check/resize", body: podJSON("ok", "u1"), header: bearer("t-admin"), status: 404, want: `partition \"gpu\" not found`},
		{name: "GET is not the check", method: "GET", header: bearer("t-hook"), status: 404, want: "no such endpoint"},
		{name: "no resize check configured", body: podJSON("ok", "u1"), header: bearer("t-hook"), noResize: true, status: 404, want: "no resize check"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t)
			opts.Auth = &Auth{Authenticator: tokens{"t-hook": "system:serviceaccount:userquota-system:userquota-webhook", "t-eve": "eve", "t-admin": "admin"},
				Authorizer: allowPaths{"system:serviceaccount:userquota-system:userquota-webhook": {path}, "admin": {"/"}}}
			if !tc.noResize {
				opts.Resize = check
			}
			if tc.leading != nil {
				opts.Leader = func() (bool, string) { return *tc.leading, "another replica leads" }
			}
			method, target := tc.method, tc.path
			if method == "" {
				method = "POST"
			}
			if target == "" {
				target = path
			}
			asked = nil
			req := httptest.NewRequest(method, target, strings.NewReader(tc.body))
			for k, v := range tc.header {
				req.Header[k] = v
			}
			rec := httptest.NewRecorder()
			NewHandler(opts).ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Result().Body)
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d: %s", rec.Code, tc.status, body)
			}
			if !strings.Contains(string(body), tc.want) {
				t.Errorf("body %s lacks %s", body, tc.want)
			}
			if tc.status == 200 {
				var got dao.ResizeCheck
				if err := json.Unmarshal(body, &got); err != nil {
					t.Fatal(err)
				}
				if asked == nil || asked.Spec.Containers[0].Resources.Requests.Cpu().String() != "3" {
					t.Errorf("the check was asked about %v, want the pod sent", asked)
				}
			}
			if tc.status != 200 && tc.status != 503 && asked != nil {
				t.Errorf("the check was asked about %s on a %d", asked.Name, tc.status)
			}
		})
	}
}
