package dao

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"
)

// AccountingPath is the report of resource-seconds over a window
// (docs/accounting.md): GET it with from, to (RFC 3339 times or dates,
// UTC), by (queue, group, user) and format (json, csv) for an
// AccountingReport.
const AccountingPath = "/ws/v1/partition/{partition}/accounting"

// AccountingReport is the answer of GET AccountingPath: what each queue,
// group or user used over a window, in resource-seconds (cpu:
// core-seconds, memory: byte-seconds, the unit of each row), split by the
// part of its queue's share.
type AccountingReport struct {
	// By is queue, group or user.
	By string `json:"by"`
	// From and To are the window as the books resolved it: each end the
	// latest snapshot at or before the one asked (hourly for the last 48
	// hours, at 00:00 UTC for 35 days), To the moment of the answer when
	// the end asked was not in the past (Live).
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	Live bool      `json:"live"`
	// OldestSnapshot is the oldest snapshot kept: no window starts
	// earlier.
	OldestSnapshot time.Time `json:"oldestSnapshot"`
	// Rows are sorted by queue, name and resource; only rows with
	// something in the window.
	Rows []AccountingRow `json:"rows"`
}

// AccountingRow is one account's resource-seconds of one resource in the
// window.
type AccountingRow struct {
	Queue string `json:"queue"`
	// Group or User names a group's or user's account in the leaf queue
	// Queue (by group or user).
	Group string `json:"group,omitempty"`
	User  string `json:"user,omitempty"`
	// Resource and Unit: the values are Unit-seconds of Resource.
	Resource string `json:"resource"`
	Unit     string `json:"unit"`
	// Guaranteed is the usage within the queue's guaranteed share,
	// Borrowed above it, Unshared while the queue had no share in force;
	// Total is their sum.
	Guaranteed float64 `json:"guaranteed"`
	Borrowed   float64 `json:"borrowed"`
	Unshared   float64 `json:"unshared"`
	Total      float64 `json:"total"`
	// IdleGuaranteed is the guaranteed share the queue left unused (by
	// queue only).
	IdleGuaranteed *float64 `json:"idleGuaranteed,omitempty"`
}

// WriteCSV writes the report as CSV: a header, then one line per row:
// from, to, queue, the group or user (not by queue), resource, unit,
// guaranteed, borrowed, unshared, total and, by queue, idle_guaranteed.
// A group or user name a spreadsheet would read as a formula (it starts
// with =, +, -, @, a tab or a carriage return) is written after a '.
func (r *AccountingReport) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	header := []string{"from", "to", "queue"}
	if r.By != "queue" {
		header = append(header, r.By)
	}
	header = append(header, "resource", "unit", "guaranteed", "borrowed", "unshared", "total")
	if r.By == "queue" {
		header = append(header, "idle_guaranteed")
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	from, to := r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339)
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	for _, row := range r.Rows {
		line := []string{from, to, row.Queue}
		switch r.By {
		case "group":
			line = append(line, inert(row.Group))
		case "user":
			line = append(line, inert(row.User))
		}
		line = append(line, row.Resource, row.Unit, num(row.Guaranteed), num(row.Borrowed), num(row.Unshared), num(row.Total))
		if r.By == "queue" {
			idle := 0.0
			if row.IdleGuaranteed != nil {
				idle = *row.IdleGuaranteed
			}
			line = append(line, num(idle))
		}
		if err := cw.Write(line); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// inert keeps a spreadsheet from reading a name as a formula (OWASP's CSV
// injection advice): such a name is written after a '.
func inert(name string) string {
	if name != "" && strings.ContainsRune("=+-@\t\r", rune(name[0])) {
		return "'" + name
	}
	return name
}
