package rest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/userquota/userquota/pkg/accounting"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/rest/dao"
)

// Accounting is where the report of resource-seconds is read:
// *accounting.Books.
type Accounting interface {
	Report(from, to time.Time, by accounting.Kind) (accounting.Report, error)
}

// accountingReport serves dao.AccountingPath: every queue's, group's or
// user's resource-seconds over a window, as JSON or CSV. It is a whole
// view: authorized as every path but a caller's own (get on the path).
func (s *server) accountingReport(w http.ResponseWriter, r *http.Request) {
	if !s.partitionOK(w, r) {
		return
	}
	if s.opts.Accounting == nil {
		writeError(w, http.StatusNotFound, "no resource-seconds are kept here", "")
		return
	}
	q := r.URL.Query()
	from, err := parseWhen(q.Get("from"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad from: "+err.Error(), whenHelp)
		return
	}
	to, err := parseWhen(q.Get("to"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad to: "+err.Error(), whenHelp)
		return
	}
	by := accounting.Queue
	if v := q.Get("by"); v != "" {
		var ok bool
		if by, ok = accounting.ParseKind(v); !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("bad by=%.64q", v), "by is queue, group or user")
			return
		}
	}
	format := q.Get("format")
	if format != "" && format != "json" && format != "csv" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("bad format=%.64q", format), "format is json or csv")
		return
	}
	rep, err := s.opts.Accounting.Report(from, to, by)
	var we *accounting.WindowError
	switch {
	case errors.Is(err, accounting.ErrNoUsers):
		writeError(w, http.StatusBadRequest, err.Error(), "reports by user need the plugin arg perUserAccounting: true (docs/accounting.md)")
		return
	case errors.As(err, &we):
		writeError(w, http.StatusBadRequest, err.Error(), "")
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error(), "")
		return
	}
	out := daoReport(rep)
	if format != "csv" {
		writeJSON(w, http.StatusOK, out)
		return
	}
	var body bytes.Buffer
	if err := out.WriteCSV(&body); err != nil {
		writeError(w, http.StatusInternalServerError, "encoding the answer failed", err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body.Bytes())
}

const whenHelp = "give an RFC 3339 time (2026-11-01T00:00:00Z) or a date (2026-11-01, 00:00 UTC); leave it out for the oldest snapshot (from) or now (to)"

// parseWhen reads an end of a window: "" (zero), an RFC 3339 time or a
// date, 00:00 UTC.
func parseWhen(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if len(s) > 64 {
		return time.Time{}, fmt.Errorf("%.64q... is too long", s)
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a date", s)
}

// daoReport is the report in the API's shape: values in the units of
// /metrics (cpu in cores), rounded to whole base-unit-seconds (a
// millicore-second, a byte-second).
func daoReport(rep accounting.Report) dao.AccountingReport {
	out := dao.AccountingReport{By: rep.By.String(), From: rep.From, To: rep.To, Live: rep.Live,
		OldestSnapshot: rep.Oldest, Rows: make([]dao.AccountingRow, 0, len(rep.Rows))}
	for _, row := range rep.Rows {
		per, unit := resources.MetricUnit(row.Resource)
		g, b, u := math.Round(row.Values[accounting.Guaranteed]), math.Round(row.Values[accounting.Borrowed]), math.Round(row.Values[accounting.Unshared])
		r := dao.AccountingRow{Queue: row.Key.Queue, Resource: row.Resource.Name(), Unit: unit,
			Guaranteed: g / per, Borrowed: b / per, Unshared: u / per, Total: (g + b + u) / per}
		switch row.Key.Kind {
		case accounting.Group:
			r.Group = row.Key.Name
		case accounting.User:
			r.User = row.Key.Name
		default:
			idle := math.Round(row.Values[accounting.Idle]) / per
			r.IdleGuaranteed = &idle
		}
		out.Rows = append(out.Rows, r)
	}
	return out
}
