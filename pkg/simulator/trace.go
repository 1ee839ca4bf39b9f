package simulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
)

// Trace operations.
const (
	opAllocate = "allocate"
	opRelease  = "release"
	opConfig   = "config"
	// Elastic quotas: the cluster's capacity, and the runtime shares.
	opCapacity = "capacity"
	opShares   = "shares"
	// The simulated clock moves on: time is the contract's op (design.md,
	// "Contract additions"), wait the simulator's older name for it.
	opTime = "time"
	opWait = "wait"
	// Gangs: a gang's declaration (its minimum, style and timeout); its
	// pods are allocate lines naming it.
	opGang = "gang"
)

// traceLine is one input line. It is the union of every operation's fields;
// each operation reads the ones it needs and checks the required ones.
type traceLine struct {
	Op  string `json:"op"`
	Pod string `json:"pod"`
	// User is nil when absent or null; "" is an error, as in the plugin.
	User      *string           `json:"user"`
	Groups    []string          `json:"groups"`
	Queue     string            `json:"queue"`
	App       string            `json:"app"`
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels"`
	// Resources is nil when absent or null; {} decodes to an empty map.
	// Allocate reads it as the pod's requests, capacity as the cluster's
	// capacity.
	Resources map[string]string `json:"resources"`
	// Config is nil when absent or null, so "" can still be told apart.
	Config *string `json:"config"`
	// Priority is an allocate line's pod priority (absent: 0), the first
	// key of the let-in order under Options.Requeue.
	Priority int32 `json:"priority"`
	// Advance is how long a time line moves the simulated clock on (a Go
	// duration such as "90s" or "3m"), Duration the same for a wait line;
	// nil when absent or null.
	Advance  *string `json:"advance"`
	Duration *string `json:"duration"`
	// Gang is the gang a gang line declares, or an allocate line's pod
	// belongs to; nil when absent or null, so "" can be refused.
	Gang *string `json:"gang"`
	// Min, Style and Timeout are a gang line's: its whole minimum
	// (Kubernetes quantities; "pods", optional, its number of pods), Soft or Hard,
	// and how long its reservation waits (a Go duration). Nil when absent
	// or null.
	Min     map[string]string `json:"min"`
	Style   *string           `json:"style"`
	Timeout *string           `json:"timeout"`
	// Runtime is how long an allocate line's pod runs once charged: it
	// completes (is released) when the clock passes it. Nil: it runs
	// until a release line.
	Runtime *string `json:"runtime"`
	// Trees: on an allocate line the pod's quota tree nodes, an object of
	// tree names to node names; on a config line the new config's quota
	// trees, a list of QuotaTree objects (forest.go). Nil when absent.
	Trees json.RawMessage `json:"trees"`
}

// decodeLine parses one trace line strictly: exactly one JSON object, keys
// spelt exactly as the contract spells them, every field of its type. The
// keys are checked on their own first because encoding/json matches field
// names case-insensitively ("Pod" would fill pod), which another
// implementation of the contract would not do. The error reads well in a
// {"line":N,"error":...} output line.
func decodeLine(data []byte) (*traceLine, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil {
		return nil, describeDecodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: unexpected data after the object")
	}
	if fields == nil {
		return nil, errors.New("a trace line must be a JSON object, not null")
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !knownFields[k] {
			return nil, fmt.Errorf("unknown field %q", k)
		}
	}
	var l traceLine
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, describeDecodeError(err)
	}
	return &l, nil
}

// knownFields are the JSON keys of traceLine.
var knownFields = func() map[string]bool {
	t := reflect.TypeFor[traceLine]()
	m := make(map[string]bool, t.NumField())
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[tag] = true
	}
	return m
}()

func describeDecodeError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("invalid JSON: %s", strings.TrimPrefix(syntax.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("invalid JSON: unexpected end of line")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Errorf("a trace line must be a JSON object, not %s", article(typ.Value))
		}
		return fmt.Errorf("field %q must be %s (found %s)", typ.Field, describeField(typ.Field, typ.Type), article(typ.Value))
	default:
		// Anything else the decoder reports.
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
}

// describeField names the JSON type of a traceLine field. The decoder
// reports the element type for an element of a list or map, so the field's
// own type is looked up by its name.
func describeField(name string, elem reflect.Type) string {
	top, _, _ := strings.Cut(name, ".")
	t := reflect.TypeFor[traceLine]()
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag == top {
			return describeType(t.Field(i).Type)
		}
	}
	return describeType(elem)
}

// describeType names a Go type of traceLine in JSON terms.
func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int32:
		return "an integer (32-bit)"
	case reflect.Slice:
		return "a list of strings"
	case reflect.Map:
		return "an object of strings"
	case reflect.Pointer:
		return describeType(t.Elem())
	default:
		return t.String()
	}
}

// article prefixes a JSON value kind ("number", "array") with "a" or "an".
func article(kind string) string {
	if kind == "" {
		return "this value"
	}
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// isBlank reports whether a line holds only JSON white space (space, tab,
// carriage return, newline): nothing a JSON parser would read as a value.
func isBlank(line []byte) bool {
	return len(bytes.Trim(line, " \t\r\n")) == 0
}
