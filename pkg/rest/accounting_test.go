package rest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/accounting"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/rest/dao"
	"github.com/userquota/userquota/pkg/ugm"
)

// testBooks: begun 2026-11-02 09:00; root.sandbox guaranteed 2 cpu; sue
// (group dev) runs 3 cpu and 1Gi there from 09:00, bob (no group) 500m
// in root.default; now 11:30.
func testBooks(t *testing.T, users bool) *accounting.Books {
	t.Helper()
	c := testingclock.NewFakeClock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	b := accounting.New(c, accounting.Options{Users: users})
	b.SetGuaranteed(map[string]resources.Vector{"root.sandbox": resources.FromMap(map[string]int64{"cpu": 2000})})
	b.Charged(&ugm.Request{User: "sue", Groups: []string{"dev"}, Queue: "root.sandbox", Resources: resources.FromMap(map[string]int64{"cpu": 3000, "memory": 1 << 30})})
	b.Charged(&ugm.Request{User: "bob", Queue: "root.default", Resources: resources.FromMap(map[string]int64{"cpu": 500})})
	c.SetTime(time.Date(2026, 11, 2, 11, 30, 0, 0, time.UTC))
	return b
}

func f(x float64) *float64 { return &x }

// TestAccountingReport: the report of resource-seconds as JSON and CSV,
// its window as resolved, by queue, group and user; bad parameters are
// 400 naming what is wrong.
func TestAccountingReport(t *testing.T) {
	opts := testOptions(t)
	opts.Accounting = testBooks(t, true)
	h := NewHandler(opts)
	const path = "/ws/v1/partition/default/accounting"
	nine, ten := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, query string
		want        dao.AccountingReport
	}{
		{name: "by queue, 09:00 to 11:00", query: "?from=2026-11-02T09:00:00Z&to=2026-11-02T11:10:00Z", want: dao.AccountingReport{
			By: "queue", From: nine, To: nine.Add(2 * time.Hour), OldestSnapshot: nine,
			Rows: []dao.AccountingRow{
				{Queue: "root", Resource: "cpu", Unit: "core", Unshared: 25200, Total: 25200, IdleGuaranteed: f(0)},
				{Queue: "root", Resource: "memory", Unit: "byte", Unshared: 7730941132800, Total: 7730941132800, IdleGuaranteed: f(0)},
				{Queue: "root.default", Resource: "cpu", Unit: "core", Unshared: 3600, Total: 3600, IdleGuaranteed: f(0)},
				{Queue: "root.sandbox", Resource: "cpu", Unit: "core", Guaranteed: 14400, Borrowed: 7200, Total: 21600, IdleGuaranteed: f(0)},
				{Queue: "root.sandbox", Resource: "memory", Unit: "byte", Borrowed: 7730941132800, Total: 7730941132800, IdleGuaranteed: f(0)},
			}}},
		{name: "by group, from 10:00 to now", query: "?from=2026-11-02T10:15:00Z&by=group", want: dao.AccountingReport{
			By: "group", From: ten, To: ten.Add(90 * time.Minute), Live: true, OldestSnapshot: nine,
			Rows: []dao.AccountingRow{
				{Queue: "root.sandbox", Group: "dev", Resource: "cpu", Unit: "core", Guaranteed: 10800, Borrowed: 5400, Total: 16200},
				{Queue: "root.sandbox", Group: "dev", Resource: "memory", Unit: "byte", Borrowed: 5798205849600, Total: 5798205849600},
			}}},
		{name: "by user, a date", query: "?from=2026-11-02&to=2026-11-02T10:00:00Z&by=user&format=json", want: dao.AccountingReport{
			By: "user", From: nine, To: ten, OldestSnapshot: nine,
			Rows: []dao.AccountingRow{
				{Queue: "root.default", User: "bob", Resource: "cpu", Unit: "core", Unshared: 1800, Total: 1800},
				{Queue: "root.sandbox", User: "sue", Resource: "cpu", Unit: "core", Guaranteed: 7200, Borrowed: 3600, Total: 10800},
				{Queue: "root.sandbox", User: "sue", Resource: "memory", Unit: "byte", Borrowed: 3865470566400, Total: 3865470566400},
			}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, header := get(t, h, "GET", path+tc.query, nil)
			if status != http.StatusOK {
				t.Fatalf("%d %s", status, body)
			}
			if ct := header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			var got dao.AccountingReport
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}

	status, body, header := get(t, h, "GET", path+"?from=2026-11-02T09:00:00Z&to=2026-11-02T10:00:00Z&by=user&format=csv", nil)
	want := `from,to,queue,user,resource,unit,guaranteed,borrowed,unshared,total
2026-11-02T09:00:00Z,2026-11-02T10:00:00Z,root.default,bob,cpu,core,0,0,1800,1800
2026-11-02T09:00:00Z,2026-11-02T10:00:00Z,root.sandbox,sue,cpu,core,7200,3600,0,10800
2026-11-02T09:00:00Z,2026-11-02T10:00:00Z,root.sandbox,sue,memory,byte,0,3865470566400,0,3865470566400
`
	if status != http.StatusOK || body != want || header.Get("Content-Type") != "text/csv; charset=utf-8" || header.Get("Cache-Control") != "no-store" {
		t.Errorf("CSV: %d %q %s, want:\n%s", status, header.Get("Content-Type"), body, want)
	}
	status, body, _ = get(t, h, "GET", path+"?to=2026-11-02T10:00:00Z&format=csv", nil)
	if want := "from,to,queue,resource,unit,guaranteed,borrowed,unshared,total,idle_guaranteed\n"; status != 200 || !strings.HasPrefix(body, want) ||
		!strings.Contains(body, "\n2026-11-02T09:00:00Z,2026-11-02T10:00:00Z,root.sandbox,cpu,core,7200,3600,0,10800,0\n") {
		t.Errorf("CSV by queue: %d %s", status, body)
	}

	for _, tc := range []struct{ query, message string }{
		{"?from=yesterday", `bad from: "yesterday" is neither an RFC 3339 time nor a date`},
		{"?to=2026-13-01", `bad to: "2026-13-01" is neither an RFC 3339 time nor a date`},
		{"?by=users", `bad by="users"`},
		{"?format=xml", `bad format="xml"`},
		{"?from=2026-11-02T11:00:00Z&to=2026-11-02T10:00:00Z", "from 2026-11-02T11:00:00Z is after to 2026-11-02T10:00:00Z"},
		{"?to=2026-11-01", "to 2026-11-01T00:00:00Z is before the oldest snapshot kept, 2026-11-02T09:00:00Z"},
	} {
		status, body, _ := get(t, h, "GET", path+tc.query, nil)
		var e Error
		if err := json.Unmarshal([]byte(body), &e); err != nil || status != 400 || e.Message != tc.message {
			t.Errorf("%s: %d %s, want 400 %q", tc.query, status, body, tc.message)
		}
	}

	// Without per-user accounts a report by user is refused, saying how to
	// get them.
	opts.Accounting = testBooks(t, false)
	status, body, _ = get(t, NewHandler(opts), "GET", path+"?by=user", nil)
	if status != 400 || !strings.Contains(body, "perUserAccounting: true") {
		t.Errorf("by user without per-user accounts: %d %s", status, body)
	}
	// Without books: 404. Another partition: 404.
	opts.Accounting = nil
	if status, body, _ := get(t, NewHandler(opts), "GET", path, nil); status != 404 {
		t.Errorf("without books: %d %s", status, body)
	}
	if status, body, _ := get(t, h, "GET", "/ws/v1/partition/other/accounting", nil); status != 404 {
		t.Errorf("another partition: %d %s", status, body)
	}
}

// TestAccountingReportAuth: the report is a whole view: it needs get on
// its path (the reader role's /ws/v1/*), like the other whole views; a
// token alone (what /usage/me needs) is not enough; no token is 401; a
// follower answers 503.
func TestAccountingReportAuth(t *testing.T) {
	opts := testOptions(t)
	opts.Accounting = testBooks(t, true)
	opts.Auth = &Auth{Authenticator: tokens{"t-admin": "admin", "t-sue": "sue"}, Authorizer: allowPaths{"admin": {"/ws/v1/"}, "sue": {"/ws/v1/partition/default/usage/me"}}}
	h := NewHandler(opts)
	const path = "/ws/v1/partition/default/accounting?by=user"
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	for _, tc := range []struct {
		name   string
		header http.Header
		status int
		body   string
	}{
		{name: "no token", status: 401, body: errorJSON(401, "unauthorized", "send a bearer token the API server accepts: Authorization: Bearer TOKEN")},
		{name: "a user without the reader role, even for her own usage", header: bearer("t-sue"), status: 403,
			body: errorJSON(403, `forbidden: user "sue" cannot get path "/ws/v1/partition/default/accounting"`, "no RBAC rule allows it")},
		{name: "the reader role", header: bearer("t-admin"), status: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := get(t, h, "GET", path, tc.header)
			if status != tc.status || tc.body != "" && body != tc.body+"\n" {
				t.Errorf("%d %s, want %d %s", status, body, tc.status, tc.body)
			}
			if status == 200 && !strings.Contains(body, `"user":"sue"`) {
				t.Errorf("the reader's answer lacks sue's row: %s", body)
			}
		})
	}
	opts.Leader = func() (bool, string) { return false, "the Lease is held by host-b" }
	if status, body, _ := get(t, NewHandler(opts), "GET", path, bearer("t-admin")); status != 503 {
		t.Errorf("a follower: %d %s, want 503", status, body)
	}
}
