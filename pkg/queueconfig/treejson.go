package queueconfig

import (
	"encoding/json"
	"fmt"
)

// A small strict JSON reader for quota trees: encoding/json takes the last
// of two equal keys silently and gives no lines, and a tree's problems must
// say where they are. It reads one value (RFC 8259: no trailing commas,
// no comments), keeps each value's line, refuses a key given twice in one
// object and anything after the value, and stops at a nesting bound.

type jsonKind int

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

// jsonValue is one value with the line it starts on.
type jsonValue struct {
	kind jsonKind
	line int
	b    bool
	s    string // a string's value, a number's text
	arr  []*jsonValue
	obj  []jsonMember
}

// jsonMember is one key of an object, in the order written.
type jsonMember struct {
	key  string
	line int
	val  *jsonValue
}

// describe names a value for "expected X, got Y" messages.
func (v *jsonValue) describe() string {
	switch v.kind {
	case jsonNull:
		return "null"
	case jsonBool:
		return fmt.Sprintf("the boolean %v", v.b)
	case jsonNumber:
		return "the number " + shorten(v.s)
	case jsonString:
		return fmt.Sprintf("the string %q", shorten(v.s))
	case jsonArray:
		return "a list"
	}
	return "an object"
}

// jsonError is a syntax error at a line.
type jsonError struct {
	line int
	msg  string
}

type jsonReader struct {
	data     []byte
	i, line  int
	maxDepth int
	err      *jsonError
}

// parseJSON reads data as one JSON value nested at most maxDepth deep.
func parseJSON(data []byte, maxDepth int) (*jsonValue, *jsonError) {
	r := &jsonReader{data: data, line: 1, maxDepth: maxDepth}
	r.space()
	if r.i >= len(r.data) {
		return nil, &jsonError{line: r.line, msg: "invalid JSON: the document is empty"}
	}
	v := r.value(0)
	if r.err != nil {
		return nil, r.err
	}
	r.space()
	if r.i < len(r.data) {
		return nil, &jsonError{line: r.line, msg: fmt.Sprintf("invalid JSON: %s after the end of the tree's object", r.what())}
	}
	return v, nil
}

func (r *jsonReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = &jsonError{line: r.line, msg: "invalid JSON: " + fmt.Sprintf(format, args...)}
	}
}

// what names the character at the reader for messages.
func (r *jsonReader) what() string {
	if r.i >= len(r.data) {
		return "the end of the text"
	}
	return fmt.Sprintf("%q", rune(r.data[r.i]))
}

func (r *jsonReader) space() {
	for r.i < len(r.data) {
		switch r.data[r.i] {
		case '\n':
			r.line++
		case ' ', '\t', '\r':
		default:
			return
		}
		r.i++
	}
}

func (r *jsonReader) value(depth int) *jsonValue {
	if depth > r.maxDepth {
		r.fail("nested more than %d deep", r.maxDepth)
		return nil
	}
	r.space()
	v := &jsonValue{line: r.line}
	if r.i >= len(r.data) {
		r.fail("the text ends where a value was expected")
		return nil
	}
	switch c := r.data[r.i]; {
	case c == '{':
		v.kind = jsonObject
		r.object(v, depth)
	case c == '[':
		v.kind = jsonArray
		r.array(v, depth)
	case c == '"':
		v.kind = jsonString
		v.s = r.string()
	case c == 't' || c == 'f' || c == 'n':
		r.literal(v)
	case c == '-' || c >= '0' && c <= '9':
		v.kind = jsonNumber
		v.s = r.number()
	default:
		r.fail("%s where a value was expected", r.what())
	}
	if r.err != nil {
		return nil
	}
	return v
}

func (r *jsonReader) object(v *jsonValue, depth int) {
	r.i++ // {
	seen := map[string]int{}
	r.space()
	if r.i < len(r.data) && r.data[r.i] == '}' {
		r.i++
		return
	}
	comma := 0
	for r.err == nil {
		r.space()
		if r.i >= len(r.data) || r.data[r.i] != '"' {
			if r.i < len(r.data) && r.data[r.i] == '}' && comma > 0 {
				r.line = comma
				r.fail("a comma before '}' (JSON has no trailing commas)")
			} else {
				r.fail("%s where a key (a string) was expected", r.what())
			}
			return
		}
		line := r.line
		key := r.string()
		if r.err != nil {
			return
		}
		if first, dup := seen[key]; dup {
			r.err = &jsonError{line: line, msg: fmt.Sprintf("invalid JSON: key %q is given twice in one object (first on line %d)", shorten(key), first)}
			return
		}
		seen[key] = line
		r.space()
		if r.i >= len(r.data) || r.data[r.i] != ':' {
			r.fail("%s after key %q where ':' was expected", r.what(), shorten(key))
			return
		}
		r.i++
		val := r.value(depth + 1)
		if r.err != nil {
			return
		}
		v.obj = append(v.obj, jsonMember{key: key, line: line, val: val})
		r.space()
		if r.i >= len(r.data) {
			r.fail("the text ends inside an object")
			return
		}
		switch r.data[r.i] {
		case ',':
			comma = r.line
			r.i++
		case '}':
			r.i++
			return
		default:
			r.fail("%s after a value in an object where ',' or '}' was expected", r.what())
			return
		}
	}
}

func (r *jsonReader) array(v *jsonValue, depth int) {
	r.i++ // [
	r.space()
	if r.i < len(r.data) && r.data[r.i] == ']' {
		r.i++
		return
	}
	comma := 0
	for r.err == nil {
		r.space()
		if r.i < len(r.data) && r.data[r.i] == ']' && comma > 0 {
			r.line = comma
			r.fail("a comma before ']' (JSON has no trailing commas)")
			return
		}
		x := r.value(depth + 1)
		if r.err != nil {
			return
		}
		v.arr = append(v.arr, x)
		r.space()
		if r.i >= len(r.data) {
			r.fail("the text ends inside a list")
			return
		}
		switch r.data[r.i] {
		case ',':
			comma = r.line
			r.i++
		case ']':
			r.i++
			return
		default:
			r.fail("%s after a value in a list where ',' or ']' was expected", r.what())
			return
		}
	}
}

// string reads a string token; encoding/json decodes its escapes.
func (r *jsonReader) string() string {
	start := r.i
	r.i++ // "
	for r.i < len(r.data) {
		switch c := r.data[r.i]; {
		case c == '\\':
			r.i += 2
			continue
		case c == '"':
			r.i++
			var s string
			if err := json.Unmarshal(r.data[start:r.i], &s); err != nil {
				r.fail("a string that does not decode: %v", err)
				return ""
			}
			return s
		case c < 0x20:
			r.fail("a control character inside a string")
			return ""
		}
		r.i++
	}
	r.fail("the text ends inside a string")
	return ""
}

// number reads a number token as written (RFC 8259's grammar).
func (r *jsonReader) number() string {
	start := r.i
	digits := func() int {
		n := 0
		for r.i < len(r.data) && r.data[r.i] >= '0' && r.data[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	if r.data[r.i] == '-' {
		r.i++
	}
	first := r.i
	if digits() == 0 {
		r.fail("a number without digits")
		return ""
	}
	if r.data[first] == '0' && r.i-first > 1 {
		r.fail("a number with a leading zero")
		return ""
	}
	if r.i < len(r.data) && r.data[r.i] == '.' {
		r.i++
		if digits() == 0 {
			r.fail("a number without digits after its '.'")
			return ""
		}
	}
	if r.i < len(r.data) && (r.data[r.i] == 'e' || r.data[r.i] == 'E') {
		r.i++
		if r.i < len(r.data) && (r.data[r.i] == '+' || r.data[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			r.fail("a number without digits in its exponent")
			return ""
		}
	}
	return string(r.data[start:r.i])
}

func (r *jsonReader) literal(v *jsonValue) {
	for _, l := range []struct {
		text string
		kind jsonKind
		b    bool
	}{{"true", jsonBool, true}, {"false", jsonBool, false}, {"null", jsonNull, false}} {
		if len(r.data)-r.i >= len(l.text) && string(r.data[r.i:r.i+len(l.text)]) == l.text {
			r.i += len(l.text)
			v.kind, v.b = l.kind, l.b
			return
		}
	}
	r.fail("%s where a value was expected", r.what())
}
