package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/rest/dao"
)

// fakeWhy answers like the plugin: sue owns ns1/sue-pod and ns1/other
// (another scheduler's); a viewer without All sees only their own.
type fakeWhy struct {
	viewers []Viewer
}

func (f *fakeWhy) why(ns, name string, v Viewer) (*dao.PodExplanation, error) {
	f.viewers = append(f.viewers, v)
	owners := map[string]string{"ns1/sue-pod": "sue", "ns1/other": "sue"}
	owner, ok := owners[ns+"/"+name]
	if !ok || !v.All && owner != v.User {
		return nil, ErrNoPod
	}
	if name == "other" {
		return nil, &NotOursError{SchedulerName: "default-scheduler", Ours: "userquota-scheduler"}
	}
	return &dao.PodExplanation{Pod: ns + "/" + name, State: dao.StateHeld, User: owner, Message: "Held by quota: ..."}, nil
}

// fakeHeld records what it was asked.
type fakeHeld struct{ asked []string }

func (f *fakeHeld) held(queue string, offset, limit int) dao.HeldPods {
	f.asked = append(f.asked, fmt.Sprintf("%s %d %d", queue, offset, limit))
	return dao.HeldPods{Queue: queue, Total: 1, Offset: offset, Limit: limit, Pods: []dao.HeldPod{{Position: 1, Pod: "ns1/sue-pod", User: "sue"}}}
}

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

// TestWhyEndpoint: a pod's explanation goes to its owner (as /usage/me
// decides who the caller is: the authenticated name) without RBAC, and to
// anyone with get on the path; to anyone else the same 404 as for a pod
// that does not exist.
func TestWhyEndpoint(t *testing.T) {
	f := &fakeWhy{}
	opts := testOptions(t)
	opts.Why = f.why
	opts.Auth = &Auth{Authenticator: selfCallers, Authorizer: allowPaths{"admin": {"/ws/v1/"}}}
	h := NewHandler(opts)
	const path = "/ws/v1/partition/default/why/"
	notYours := func(who, pod string) string {
		return errorJSON(404, "no pod "+pod+" of yours is known to this scheduler",
			"you ("+who+") see the explanation of your own pods only; get on this path shows any pod")
	}
	for _, tc := range []struct {
		name, target string
		header       http.Header
		status       int
		body         string
		viewer       *Viewer
	}{
		{name: "no token", target: path + "ns1/sue-pod", status: 401},
		{name: "the owner, no RBAC", target: path + "ns1/sue-pod", header: bearer("t-sue"), status: 200,
			body: `{"pod":"ns1/sue-pod","state":"Held","user":"sue","message":"Held by quota: ..."}`, viewer: &Viewer{User: "sue"}},
		{name: "another user: as if it did not exist", target: path + "ns1/sue-pod", header: bearer("t-bob"), status: 404,
			body: notYours("bob", "ns1/sue-pod"), viewer: &Viewer{User: "bob"}},
		{name: "a pod that does not exist: the same answer", target: path + "ns1/missing", header: bearer("t-bob"), status: 404,
			body: notYours("bob", "ns1/missing"), viewer: &Viewer{User: "bob"}},
		{name: "get on the path: any pod", target: path + "ns1/sue-pod", header: bearer("t-admin"), status: 200,
			body: `{"pod":"ns1/sue-pod","state":"Held","user":"sue","message":"Held by quota: ..."}`, viewer: &Viewer{User: "admin", All: true}},
		{name: "get on the path: a pod that does not exist", target: path + "ns1/missing", header: bearer("t-admin"), status: 404,
			body: errorJSON(404, "pod ns1/missing not found", "the scheduler's informer has no such pod")},
		{name: "another scheduler's pod, to its owner", target: path + "ns1/other", header: bearer("t-sue"), status: 404,
			body: errorJSON(404, "pod ns1/other is not scheduled by userquota-scheduler",
				`the pod is not scheduled by userquota-scheduler (its schedulerName is "default-scheduler"): no quota of ours holds it`)},
		{name: "another scheduler's pod, to someone else", target: path + "ns1/other", header: bearer("t-bob"), status: 404,
			body: notYours("bob", "ns1/other")},
		{name: "a bad namespace", target: path + "NS_1/sue-pod", header: bearer("t-sue"), status: 400},
		{name: "a bad pod name", target: path + "ns1/Sue%20Pod", header: bearer("t-sue"), status: 400},
		{name: "a path under it is another path, reviewed", target: path + "ns1/sue-pod/x", header: bearer("t-sue"), status: 403},
		{name: "another partition", target: "/ws/v1/partition/gpu/why/ns1/sue-pod", header: bearer("t-sue"), status: 404,
			body: errorJSON(404, `partition "gpu" not found`, `this scheduler enforces partition "default"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.viewers = nil
			status, body, _ := get(t, h, "GET", tc.target, tc.header)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if tc.body != "" && body != tc.body+"\n" {
				t.Errorf("body:\n%s\nwant:\n%s", body, tc.body)
			}
			if tc.viewer != nil {
				if diff := cmp.Diff([]Viewer{*tc.viewer}, f.viewers); diff != "" {
					t.Errorf("viewer (-want,+got):\n%s", diff)
				}
			}
		})
	}
}

// TestWhyEndpointWithoutAuth: without authentication every caller sees
// everything, as on every path; without a Why func the path is 404; a
// follower answers 503 unless asked for its own state.
func TestWhyEndpointWithoutAuth(t *testing.T) {
	f := &fakeWhy{}
	opts := testOptions(t)
	opts.Why = f.why
	h := NewHandler(opts)
	if status, body, _ := get(t, h, "GET", "/ws/v1/partition/default/why/ns1/sue-pod", nil); status != 200 || len(f.viewers) != 1 || !f.viewers[0].All {
		t.Errorf("without auth: %d %s, viewers %+v; want 200 to a viewer who sees all", status, body, f.viewers)
	}
	opts.Leader = func() (bool, string) { return false, "another replica leads" }
	h = NewHandler(opts)
	if status, _, header := get(t, h, "GET", "/ws/v1/partition/default/why/ns1/sue-pod", nil); status != 503 || header.Get(dao.HeaderLeader) != "false" {
		t.Errorf("follower: %d, want 503", status)
	}
	if status, _, _ := get(t, h, "GET", "/ws/v1/partition/default/why/ns1/sue-pod?local=true", nil); status != 200 {
		t.Errorf("follower, local: %d, want 200", status)
	}
	opts.Why = nil
	if status, _, _ := get(t, NewHandler(opts), "GET", "/ws/v1/partition/default/why/ns1/sue-pod?local=true", nil); status != 404 {
		t.Errorf("without Why: %d, want 404", status)
	}
}

// TestHeldEndpoint: a queue's held pods need the cluster-wide right, as
// the other views; paging is checked.
func TestHeldEndpoint(t *testing.T) {
	f := &fakeHeld{}
	opts := testOptions(t)
	opts.Held = f.held
	opts.Auth = &Auth{Authenticator: selfCallers, Authorizer: allowPaths{"admin": {"/ws/v1/"}}}
	h := NewHandler(opts)
	const path = "/ws/v1/partition/default/queue/"
	for _, tc := range []struct {
		name, target string
		header       http.Header
		status       int
		asked        string
	}{
		{name: "no token", target: path + "root.sandbox/held", status: 401},
		{name: "a user without RBAC, even with pods there", target: path + "root.sandbox/held", header: bearer("t-sue"), status: 403},
		{name: "defaults", target: path + "root.sandbox/held", header: bearer("t-admin"), status: 200, asked: "root.sandbox 0 100"},
		{name: "a page; queue names are case-insensitive", target: path + "Root.Sandbox/held?offset=20&limit=10", header: bearer("t-admin"), status: 200, asked: "root.sandbox 20 10"},
		{name: "limit too large", target: path + "root.sandbox/held?limit=1001", header: bearer("t-admin"), status: 400},
		{name: "negative offset", target: path + "root.sandbox/held?offset=-1", header: bearer("t-admin"), status: 400},
		{name: "not a number", target: path + "root.sandbox/held?limit=ten", header: bearer("t-admin"), status: 400},
		{name: "not a full path", target: path + "sandbox/held", header: bearer("t-admin"), status: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.asked = nil
			status, body, _ := get(t, h, "GET", tc.target, tc.header)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if tc.asked != "" {
				if diff := cmp.Diff([]string{tc.asked}, f.asked); diff != "" {
					t.Errorf("asked (-want,+got):\n%s", diff)
				}
				var got dao.HeldPods
				if err := json.Unmarshal([]byte(body), &got); err != nil || got.Total != 1 || len(got.Pods) != 1 {
					t.Errorf("body %s: %v", body, err)
				}
			}
		})
	}
}

// TestPageLinksWaiting: the page links each queue with held pods to its
// list.
func TestPageLinksWaiting(t *testing.T) {
	opts := testOptions(t)
	opts.HeldCounts = func() map[string]int { return map[string]int{"root.sandbox": 3, "root.gone": 1, "root.none": 0} }
	_, body, _ := get(t, NewHandler(opts), "GET", "/", nil)
	for _, want := range []string{
		// In the queue tree's row of root.sandbox.
		`sandbox <a class="waiting" href="/ws/v1/partition/default/queue/root.sandbox/held" data-queue="root.sandbox" data-held="3"`,
		// And in the list, also for a queue the tree does not show.
		`<a href="/ws/v1/partition/default/queue/root.gone/held" data-queue="root.gone" data-held="1">root.gone: 1 waiting</a>`,
		`<a href="/ws/v1/partition/default/queue/root.sandbox/held" data-queue="root.sandbox" data-held="3">root.sandbox: 3 waiting</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(body, "root.none") {
		t.Error("the page links a queue with nothing held")
	}
	opts.HeldCounts = nil
	if _, body, _ := get(t, NewHandler(opts), "GET", "/", nil); strings.Contains(body, "data-held") {
		t.Error("without HeldCounts the page links held pods")
	}
}
