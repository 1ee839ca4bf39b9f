package queueconfig

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem found in a queue config. Line (1-based, 0 when the
// problem has no single place) and Path ("partitions[0].queues[1].limits[2]")
// point an operator at the spot to fix without having to guess which of
// several similar entries is meant.
type Error struct {
	Line int
	Path string
	Msg  string
}

// Error renders the problem as "line 12: partitions[0].queues[1]: msg",
// leaving out the parts that are unknown.
func (e Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem Parse found, in document order. Parse reports all
// of them at once, so that a config can be fixed in one edit instead of one
// reload per mistake.
type Errors struct {
	List []Error
}

// Error prints one problem per line.
func (e *Errors) Error() string {
	return strings.Join(e.Strings(), "\n")
}

// Strings returns each problem rendered on its own, e.g. for a JSON list of
// errors or one log line per problem.
func (e *Errors) Strings() []string {
	out := make([]string, len(e.List))
	for i, x := range e.List {
		out[i] = x.Error()
	}
	return out
}

// Len is the number of problems.
func (e *Errors) Len() int { return len(e.List) }

// Past maxKept problems only a count is kept, and at most maxReported are
// reported, so that a badly broken config (or an alias expanded many times)
// gives a readable message and costs little.
const (
	maxKept     = 1000
	maxReported = 100
)

// errorList collects problems while walking and validating.
type errorList struct {
	list    []Error
	seen    map[Error]bool
	dropped int
}

// add records a problem at line/path; an identical problem (possible when an
// alias expands the same node twice) is recorded once.
func (l *errorList) add(line int, path, format string, args ...any) {
	if len(l.list) >= maxKept {
		l.dropped++
		return
	}
	e := Error{Line: line, Path: path, Msg: fmt.Sprintf(format, args...)}
	if l.seen == nil {
		l.seen = map[Error]bool{}
	}
	if l.seen[e] {
		return
	}
	l.seen[e] = true
	l.list = append(l.list, e)
}

// at records a problem at a position.
func (l *errorList) at(p pos, format string, args ...any) {
	l.add(p.line, p.path, format, args...)
}

func (l *errorList) empty() bool { return len(l.list) == 0 }

// result orders the problems by line (stable, so problems found on one line
// keep the order they were found in); problems without a line come last.
func (l *errorList) result() *Errors {
	list := append([]Error(nil), l.list...)
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i].Line, list[j].Line
		if a == 0 || b == 0 {
			return a != 0 && b == 0
		}
		return a < b
	})
	if more := len(list) - maxReported + l.dropped; more > 0 {
		if len(list) > maxReported {
			list = list[:maxReported]
		}
		list = append(list, Error{Msg: fmt.Sprintf("... and %d more problems", more)})
	}
	return &Errors{List: list}
}

// pos is where something is in the document: its line and its path.
type pos struct {
	line int
	path string
}
