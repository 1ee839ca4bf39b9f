package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/accounting"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/rest"
	"github.com/userquota/userquota/pkg/rest/dao"
	"github.com/userquota/userquota/pkg/ugm"
)

// reportNow is the books' now in the report tests.
var reportNow = time.Date(2026, 11, 2, 11, 30, 0, 0, time.UTC)

// reportServer serves the REST API over books begun 2026-11-02 09:00:
// root.sandbox guaranteed 2 cpu; sue (group dev) runs 3 cpu and 1Gi there
// from 09:00, bob 500m in root.default; now 11:30. It records the
// queries it was asked.
func reportServer(t *testing.T, queries *[]url.Values) *httptest.Server {
	t.Helper()
	c := testingclock.NewFakeClock(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	b := accounting.New(c, accounting.Options{Users: true})
	b.SetGuaranteed(map[string]resources.Vector{"root.sandbox": resources.FromMap(map[string]int64{"cpu": 2000})})
	b.Charged(&ugm.Request{User: "sue", Groups: []string{"dev"}, Queue: "root.sandbox", Resources: resources.FromMap(map[string]int64{"cpu": 3000, "memory": 1 << 30, "pods": 1})})
	b.Charged(&ugm.Request{User: "bob", Queue: "root.default", Resources: resources.FromMap(map[string]int64{"cpu": 500, "pods": 1})})
	c.SetTime(reportNow)
	h := rest.NewHandler(rest.Options{Partition: "default", Usage: ugm.New(), Accounting: b})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if queries != nil {
			*queries = append(*queries, r.URL.Query())
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestUsageReport: `usage report` as a table of resource-hours, as CSV and
// JSON in resource-seconds; the window's ends as given (relative ends
// counted from now) and as the server resolved them.
func TestUsageReport(t *testing.T) {
	var queries []url.Values
	srv := reportServer(t, &queries)
	for _, tc := range []struct {
		name   string
		args   []string
		query  string
		stdout string
	}{
		{name: "table by queue", args: []string{"--from", "2026-11-02T09:00:00Z", "--to", "2026-11-02T11:00:00Z"},
			query: "by=queue&from=2026-11-02T09%3A00%3A00Z&to=2026-11-02T11%3A00%3A00Z",
			stdout: `resource-hours by queue from 2026-11-02T09:00:00Z to 2026-11-02T11:00:00Z
(window ends at snapshots: hourly for 48 hours, daily at 00:00 UTC for 35 days; oldest kept 2026-11-02T09:00:00Z)

QUEUE         RESOURCE  UNIT    GUARANTEED  BORROWED  UNSHARED  TOTAL  IDLE GUARANTEED
root          cpu       core-h  0.00        0.00      7.00      7.00   0.00
root          memory    GiB-h   0.00        0.00      2.00      2.00   0.00
root          pods      pod-h   0.00        0.00      4.00      4.00   0.00
root.default  cpu       core-h  0.00        0.00      1.00      1.00   0.00
root.default  pods      pod-h   0.00        0.00      2.00      2.00   0.00
root.sandbox  cpu       core-h  4.00        2.00      0.00      6.00   0.00
root.sandbox  memory    GiB-h   0.00        2.00      0.00      2.00   0.00
root.sandbox  pods      pod-h   0.00        2.00      0.00      2.00   0.00
`},
		{name: "csv by user over the last 90 minutes", args: []string{"--from", "-90m", "--by", "user", "--format", "csv"},
			query: "by=user&from=2026-11-02T10%3A00%3A00Z",
			stdout: `from,to,queue,user,resource,unit,guaranteed,borrowed,unshared,total
2026-11-02T10:00:00Z,2026-11-02T11:30:00Z,root.default,bob,cpu,core,0,0,2700,2700
2026-11-02T10:00:00Z,2026-11-02T11:30:00Z,root.default,bob,pods,integer,0,0,5400,5400
2026-11-02T10:00:00Z,2026-11-02T11:30:00Z,root.sandbox,sue,cpu,core,10800,5400,0,16200
2026-11-02T10:00:00Z,2026-11-02T11:30:00Z,root.sandbox,sue,memory,byte,0,5798205849600,0,5798205849600
2026-11-02T10:00:00Z,2026-11-02T11:30:00Z,root.sandbox,sue,pods,integer,0,5400,0,5400
`},
		{name: "table by group, a date to now", args: []string{"--from", "2026-11-02", "--to", "now", "--by", "group", "-o", "table"},
			query: "by=group&from=2026-11-02&to=2026-11-02T11%3A30%3A00Z",
			stdout: `resource-hours by group from 2026-11-02T09:00:00Z to 2026-11-02T11:30:00Z (now)
(window ends at snapshots: hourly for 48 hours, daily at 00:00 UTC for 35 days; oldest kept 2026-11-02T09:00:00Z)

QUEUE         GROUP  RESOURCE  UNIT    GUARANTEED  BORROWED  UNSHARED  TOTAL
root.sandbox  dev    cpu       core-h  5.00        2.50      0.00      7.50
root.sandbox  dev    memory    GiB-h   0.00        2.50      0.00      2.50
root.sandbox  dev    pods      pod-h   0.00        2.50      0.00      2.50
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queries = nil
			var stdout, stderr bytes.Buffer
			c := &cli{prog: Ctl, stdout: &stdout, stderr: &stderr, now: func() time.Time { return reportNow }}
			if code := c.run(append([]string{"usage", "report", "--server", srv.URL}, tc.args...)); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if len(queries) != 1 || queries[0].Encode() != tc.query {
				t.Errorf("asked %v, want %s", queries, tc.query)
			}
			if stdout.String() != tc.stdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), tc.stdout)
			}
		})
	}

	// JSON: the server's answer, indented.
	var stdout, stderr bytes.Buffer
	c := &cli{prog: Ctl, stdout: &stdout, stderr: &stderr, now: func() time.Time { return reportNow }}
	if code := c.run([]string{"usage", "report", "--server", srv.URL, "--by", "group", "--format", "json"}); code != 0 {
		t.Fatalf("json: exit %d: %s", code, stderr.String())
	}
	var rep dao.AccountingReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || rep.By != "group" || !rep.Live || len(rep.Rows) != 3 || rep.Rows[0].Guaranteed != 18000 {
		t.Errorf("json: %v %s", err, stdout.String())
	}
	if !strings.Contains(stdout.String(), "\n  \"by\": \"group\",\n") {
		t.Errorf("json not indented: %s", stdout.String())
	}
}

// TestUsageReportErrors: a wrong command line exits 2 naming the flag; the
// server's refusal exits 1 with its message.
func TestUsageReportErrors(t *testing.T) {
	srv := reportServer(t, nil)
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--from", "yesterday"}, 2, `usage report: --from: "yesterday" is not an RFC 3339 time (2026-11-01T00:00:00Z), a date (2026-11-01), now or -DURATION (-36h, -7d)`},
		{[]string{"--to", "-3x"}, 2, `usage report: --to: "-3x" is not -DURATION (such as -36h or -7d)`},
		{[]string{"--by", "users"}, 2, `usage report: --by must be queue, group or user, not "users"`},
		{[]string{"--format", "xml"}, 2, `usage report: --format must be table, csv or json, not "xml"`},
		{[]string{"--to", "2026-11-01"}, 1, "400 Bad Request: to 2026-11-01T00:00:00Z is before the oldest snapshot kept, 2026-11-02T09:00:00Z"},
		{[]string{"--from", "2026-11-02T11:00:00Z", "--to", "-1h"}, 1, "400 Bad Request: from 2026-11-02T11:00:00Z is after to 2026-11-02T10:30:00Z"},
	} {
		var stdout, stderr bytes.Buffer
		c := &cli{prog: Ctl, stdout: &stdout, stderr: &stderr, now: func() time.Time { return reportNow }}
		code := c.run(append([]string{"usage", "report", "--server", srv.URL}, tc.args...))
		if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%v: exit %d, stderr %s; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.stderr)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"usage", "report"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "usage report: missing --server") {
		t.Errorf("without --server: %d %s", code, stderr.String())
	}
}
