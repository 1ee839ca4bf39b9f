package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/userquota/userquota/pkg/rest/dao"
)

// usageReport is `userquotactl usage report`: the resource-seconds of
// every queue, group or user over a window, from the REST API
// (dao.AccountingPath), as a table of resource-hours, CSV or JSON.
func (c *cli) usageReport(args []string) int {
	var f usageFlags
	var from, to, by, format string
	fs := newFlagSet("usage report")
	f.registerConn(fs)
	fs.StringVar(&from, "from", "", "")
	fs.StringVar(&to, "to", "", "")
	fs.StringVar(&by, "by", "queue", "")
	fs.StringVar(&format, "format", "table", "")
	fs.StringVar(&format, "o", "table", "")
	if code, ok := c.parseFlags(fs, args); !ok {
		return code
	}
	now := time.Now()
	if c.now != nil {
		now = c.now()
	}
	fromAt, err := whenArg(from, now)
	if err != nil {
		return c.badArgs("usage report: --from: " + err.Error())
	}
	toAt, err := whenArg(to, now)
	if err != nil {
		return c.badArgs("usage report: --to: " + err.Error())
	}
	switch {
	case fs.NArg() > 0:
		return c.badArgs(fmt.Sprintf("usage report: unexpected argument %q", fs.Arg(0)))
	case by != "queue" && by != "group" && by != "user":
		return c.badArgs(fmt.Sprintf("usage report: --by must be queue, group or user, not %q", by))
	case format != "table" && format != "csv" && format != "json":
		return c.badArgs(fmt.Sprintf("usage report: --format must be table, csv or json, not %q", format))
	}
	if msg := f.checkConn("usage report"); msg != "" {
		return c.badArgs(msg)
	}
	uc, err := newUsageClient(f)
	if err != nil {
		c.errorf("%s", err.Error())
		return exitFailed
	}
	q := url.Values{"by": {by}}
	if fromAt != "" {
		q.Set("from", fromAt)
	}
	if toAt != "" {
		q.Set("to", toAt)
	}
	path := strings.Replace(dao.AccountingPath, "{partition}", url.PathEscape(f.partition), 1) + "?" + q.Encode()
	body, err := uc.get(path)
	if err != nil {
		c.errorf("%s", err.Error())
		return exitFailed
	}
	if format == "json" {
		err = printJSON(c.stdout, body)
	} else {
		var rep dao.AccountingReport
		if err = json.Unmarshal(body, &rep); err == nil {
			if format == "csv" {
				err = rep.WriteCSV(c.stdout)
			} else {
				err = printReport(c.stdout, &rep)
			}
		}
	}
	if err != nil {
		c.errorf("%s", err.Error())
		return exitFailed
	}
	return exitOK
}

// whenArg turns an end of a window as given on the command line into the
// API's form: "" stays "" (the oldest snapshot, or now); "now"; an RFC
// 3339 time or a date (00:00 UTC) as given; -DURATION (-36h, -7d) before
// now.
func whenArg(s string, now time.Time) (string, error) {
	switch {
	case s == "":
		return "", nil
	case s == "now":
		return now.UTC().Format(time.RFC3339), nil
	case strings.HasPrefix(s, "-"):
		d, err := durationArg(s[1:])
		if err != nil || d <= 0 {
			return "", fmt.Errorf("%q is not -DURATION (such as -36h or -7d)", s)
		}
		return now.Add(-d).UTC().Format(time.RFC3339), nil
	}
	if _, err := time.Parse(time.RFC3339, s); err == nil {
		return s, nil
	}
	if _, err := time.Parse(time.DateOnly, s); err == nil {
		return s, nil
	}
	return "", fmt.Errorf("%q is not an RFC 3339 time (2026-11-01T00:00:00Z), a date (2026-11-01), now or -DURATION (-36h, -7d)", s)
}

// durationArg is a Go duration, or a whole number of days ("7d").
func durationArg(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return 0, err
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// printReport prints the report as a table of resource-hours: cpu in
// core-hours, memory in GiB-hours, pods in pod-hours.
func printReport(w io.Writer, r *dao.AccountingReport) error {
	to := r.To.UTC().Format(time.RFC3339)
	if r.Live {
		to += " (now)"
	}
	fmt.Fprintf(w, "resource-hours by %s from %s to %s\n", r.By, r.From.UTC().Format(time.RFC3339), to)
	fmt.Fprintf(w, "(window ends at snapshots: hourly for 48 hours, daily at 00:00 UTC for 35 days; oldest kept %s)\n\n",
		r.OldestSnapshot.UTC().Format(time.RFC3339))
	if len(r.Rows) == 0 {
		fmt.Fprintln(w, "nothing used in this window")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "QUEUE\t"
	switch r.By {
	case "group":
		header += "GROUP\t"
	case "user":
		header += "USER\t"
	}
	header += "RESOURCE\tUNIT\tGUARANTEED\tBORROWED\tUNSHARED\tTOTAL"
	if r.By == "queue" {
		header += "\tIDLE GUARANTEED"
	}
	fmt.Fprintln(tw, header)
	for _, row := range r.Rows {
		per, unit := hoursUnit(row.Resource, row.Unit)
		h := func(x float64) string { return strconv.FormatFloat(x/per, 'f', 2, 64) }
		line := printable(row.Queue, false) + "\t"
		switch r.By {
		case "group":
			line += printable(row.Group, false) + "\t"
		case "user":
			line += printable(row.User, false) + "\t"
		}
		line += printable(row.Resource, false) + "\t" + unit + "\t" + h(row.Guaranteed) + "\t" + h(row.Borrowed) + "\t" + h(row.Unshared) + "\t" + h(row.Total)
		if r.By == "queue" {
			idle := 0.0
			if row.IdleGuaranteed != nil {
				idle = *row.IdleGuaranteed
			}
			line += "\t" + h(idle)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// hoursUnit is how a row's unit-seconds read as hours: the divisor and
// the unit's name.
func hoursUnit(resource, unit string) (float64, string) {
	switch {
	case unit == "core":
		return 3600, "core-h"
	case unit == "byte":
		return 3600 * (1 << 30), "GiB-h"
	case resource == "pods":
		return 3600, "pod-h"
	default:
		return 3600, "h"
	}
}
