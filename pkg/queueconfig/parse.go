package queueconfig

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// This file walks a yaml.Node tree by hand instead of unmarshalling into
// structs, so that every problem carries its line and path and all of them
// are reported, not just the first. It reproduces what yaml.v3 with
// KnownFields(true) (YuniKorn's decoder) accepts: unknown keys, duplicate
// keys and wrong kinds of value are errors; null means "not set"; aliases and
// merge keys work.

// walker holds the state of one walk over a document.
type walker struct {
	errs *errorList
	// expanding holds the alias targets being walked, to stop an alias that
	// refers to a node containing it from looping forever.
	expanding []*yaml.Node
	// visits counts nodes entered; aliases can make a small document expand
	// exponentially, so the walk stops at maxVisits.
	visits, maxVisits int
	budgetHit         bool
}

func newWalker(errs *errorList, doc *yaml.Node) *walker {
	return &walker{errs: errs, maxVisits: 4*countNodes(doc, 0) + 20000}
}

// countNodes counts the nodes of the tree as written (aliases not followed).
func countNodes(n *yaml.Node, depth int) int {
	if n == nil || depth > 20000 {
		return 0
	}
	c := 1
	for _, x := range n.Content {
		c += countNodes(x, depth+1)
	}
	return c
}

func nop() {}

// enter resolves n (following aliases) before it is walked. The caller must
// call leave when done with the node. ok is false when the node cannot be
// walked; the reason has been recorded.
func (w *walker) enter(n *yaml.Node, p pos) (_ *yaml.Node, leave func(), ok bool) {
	w.visits++
	if w.visits > w.maxVisits {
		if !w.budgetHit {
			w.budgetHit = true
			w.errs.at(p, "the document expands to too many nodes through aliases")
		}
		return nil, nop, false
	}
	if n == nil {
		return nil, nop, false
	}
	if n.Kind != yaml.AliasNode {
		return n, nop, true
	}
	t := n
	for i := 0; t != nil && t.Kind == yaml.AliasNode; i++ {
		if i > 100 {
			t = nil
			break
		}
		t = t.Alias
	}
	if t == nil {
		w.errs.at(p, "alias *%s does not refer to a node", n.Value)
		return nil, nop, false
	}
	for _, e := range w.expanding {
		if e == t {
			w.errs.at(p, "alias *%s refers to a node that contains it", n.Value)
			return nil, nop, false
		}
	}
	w.expanding = append(w.expanding, t)
	return t, func() { w.expanding = w.expanding[:len(w.expanding)-1] }, true
}

// isNull reports whether a resolved node is YAML null (also an empty value).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names the kind of a node for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.DocumentNode:
		return "a document"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		v := shorten(n.Value)
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			return fmt.Sprintf("the string %q", v)
		case "!!int", "!!float":
			return "the number " + v
		case "!!bool":
			return "the boolean " + v
		default:
			return fmt.Sprintf("%q", v)
		}
	}
	return "an unknown node"
}

// shorten keeps messages short when a value is long.
func shorten(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// childPos is the position of a mapping value under key.
func childPos(p pos, key string, line int) pos {
	return pos{line: line, path: joinKey(p.path, key)}
}

// joinKey appends key to a path: ".key" for plain keys, `["a.b"]` for keys
// that would be ambiguous after a dot.
func joinKey(path, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if !plain {
		return fmt.Sprintf("%s[%q]", path, key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// indexPos is the position of the i-th item of a list.
func indexPos(p pos, i, line int) pos {
	return pos{line: line, path: fmt.Sprintf("%s[%d]", p.path, i)}
}

// pair is one key/value entry of a mapping.
type pair struct {
	key  string
	line int // of the key
	val  *yaml.Node
}

// pairs returns the entries of a resolved mapping in document order, merge
// keys ("<<") expanded: keys written in the mapping win over merged ones, an
// earlier merged mapping wins over a later one. A key given twice is an
// error, as in yaml.v3 (the later value would silently replace the first).
func (w *walker) pairs(m *yaml.Node, p pos) []pair {
	var out []pair
	seen := map[string]int{}
	var merges []*yaml.Node
	var mergeLines []int
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			mergeLines = append(mergeLines, m.Content[i].Line)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			w.errs.add(m.Content[i].Line, p.path, "a key must be a plain string, got %s", describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			w.errs.add(m.Content[i].Line, joinKey(p.path, k.Value), "key %q is given twice (first at line %d)", k.Value, first)
			continue
		}
		seen[k.Value] = m.Content[i].Line
		out = append(out, pair{key: k.Value, line: m.Content[i].Line, val: v})
	}
	for i, mv := range merges {
		mp := pos{line: mergeLines[i], path: joinKey(p.path, "<<")}
		w.merge(mv, mp, &out, seen)
	}
	return out
}

// merge adds the entries of a merged mapping (or list of mappings) that are
// not set yet.
func (w *walker) merge(n *yaml.Node, p pos, out *[]pair, seen map[string]int) {
	n, leave, ok := w.enter(n, p)
	if !ok {
		return
	}
	defer leave()
	add := func(m *yaml.Node) {
		for _, e := range w.pairs(m, p) {
			if _, dup := seen[e.key]; dup {
				continue
			}
			seen[e.key] = e.line
			*out = append(*out, e)
		}
	}
	switch n.Kind {
	case yaml.MappingNode:
		add(n)
	case yaml.SequenceNode:
		for i, x := range n.Content {
			xp := indexPos(p, i, x.Line)
			x, leaveX, ok := w.enter(x, xp)
			if !ok {
				continue
			}
			if x.Kind == yaml.MappingNode {
				add(x)
			} else {
				w.errs.at(xp, "a merge key (<<) needs a mapping or a list of mappings, got %s", describe(x))
			}
			leaveX()
		}
	default:
		w.errs.at(p, "a merge key (<<) needs a mapping or a list of mappings, got %s", describe(n))
	}
}

// field is one known key of an object and what to do with its value.
type field struct {
	key string
	fn  func(val *yaml.Node, p pos)
}

// objResult tells what object found.
type objResult int

const (
	objOK   objResult = iota // a mapping, walked
	objNull                  // null: not set
	objBad                   // something else; reported
)

// object walks a mapping whose keys are fixed. Unknown keys are errors that
// list the known ones.
func (w *walker) object(n *yaml.Node, p pos, what string, fields []field) objResult {
	n, leave, ok := w.enter(n, p)
	if !ok {
		return objBad
	}
	defer leave()
	if isNull(n) {
		return objNull
	}
	if n.Kind != yaml.MappingNode {
		w.errs.at(p, "expected a mapping (%s), got %s", what, describe(n))
		return objBad
	}
	for _, e := range w.pairs(n, p) {
		cp := childPos(p, e.key, valueLine(e))
		var f *field
		for i := range fields {
			if fields[i].key == e.key {
				f = &fields[i]
				break
			}
		}
		if f == nil {
			keys := make([]string, len(fields))
			for i := range fields {
				keys[i] = fields[i].key
			}
			w.errs.add(e.line, cp.path, "unknown key %q in %s (known keys: %s)", shorten(e.key), what, strings.Join(keys, ", "))
			continue
		}
		f.fn(e.val, cp)
	}
	return objOK
}

// valueLine is the line to report for a mapping value: a scalar's own line
// (where a bad value is), the key's line for a mapping or list (where the
// block starts).
func valueLine(e pair) int {
	if e.val != nil && e.val.Line > 0 && (e.val.Kind == yaml.ScalarNode || e.val.Kind == yaml.AliasNode) {
		return e.val.Line
	}
	return e.line
}

// list walks a sequence, calling fn for each item. Null is an empty list.
func (w *walker) list(n *yaml.Node, p pos, what string, fn func(i int, item *yaml.Node, ip pos)) bool {
	n, leave, ok := w.enter(n, p)
	if !ok {
		return false
	}
	defer leave()
	if isNull(n) {
		return false
	}
	if n.Kind != yaml.SequenceNode {
		w.errs.at(p, "expected a list (%s), got %s", what, describe(n))
		return false
	}
	for i, item := range n.Content {
		fn(i, item, indexPos(p, i, item.Line))
	}
	return true
}

// scalar resolves n and checks that it is a scalar. null is reported as
// such (isNull) so callers can treat it as "not set".
func (w *walker) scalar(n *yaml.Node, p pos, expected string) (_ *yaml.Node, ok bool) {
	n, leave, ok := w.enter(n, p)
	if !ok {
		return nil, false
	}
	defer leave()
	if n.Kind != yaml.ScalarNode {
		w.errs.at(p, "expected %s, got %s", expected, describe(n))
		return nil, false
	}
	return n, true
}

// str reads a string. Like yaml.v3, any scalar is accepted as its text
// (`name: 123` is "123") and null is "".
func (w *walker) str(n *yaml.Node, p pos) (string, bool) {
	s, ok := w.scalar(n, p, "a string")
	if !ok {
		return "", false
	}
	if isNull(s) {
		return "", true
	}
	var v string
	if err := s.Decode(&v); err != nil {
		w.errs.at(p, "expected a string, got %s", describe(s))
		return "", false
	}
	return v, true
}

// optStr reads a string that may be left unset: set is false for null.
func (w *walker) optStr(n *yaml.Node, p pos) (v string, set bool) {
	s, ok := w.scalar(n, p, "a string")
	if !ok || isNull(s) {
		return "", false
	}
	return w.str(s, p)
}

// boolean reads true or false (also yaml 1.1's yes/no/on/off, as yaml.v3
// does for a bool field); null is false.
func (w *walker) boolean(n *yaml.Node, p pos) (v bool, set, ok bool) {
	s, ok := w.scalar(n, p, "true or false")
	if !ok {
		return false, false, false
	}
	if isNull(s) {
		return false, false, true
	}
	if err := s.Decode(&v); err != nil {
		w.errs.at(p, "expected true or false, got %s", describe(s))
		return false, false, false
	}
	return v, true, true
}

// count reads a whole number 0 or more (maxapplications); null is 0.
func (w *walker) count(n *yaml.Node, p pos) (uint64, bool) {
	s, ok := w.scalar(n, p, "a whole number")
	if !ok {
		return 0, false
	}
	if isNull(s) {
		return 0, true
	}
	var v uint64
	if s.ShortTag() != "!!int" || s.Decode(&v) != nil {
		w.errs.at(p, "expected a whole number from 0 to %d, got %s", uint64(math.MaxUint64), describe(s))
		return 0, false
	}
	return v, true
}

// number reads a finite number (resource weights); null is 0.
func (w *walker) number(n *yaml.Node, p pos) (float64, bool) {
	s, ok := w.scalar(n, p, "a number")
	if !ok {
		return 0, false
	}
	if isNull(s) {
		return 0, true
	}
	var v float64
	if t := s.ShortTag(); t != "!!int" && t != "!!float" || s.Decode(&v) != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		w.errs.at(p, "expected a finite number, got %s", describe(s))
		return 0, false
	}
	return v, true
}

// strList reads a list of strings with the position of each.
func (w *walker) strList(n *yaml.Node, p pos, what string) ([]string, []pos) {
	var vals []string
	var at []pos
	w.list(n, p, what, func(_ int, item *yaml.Node, ip pos) {
		if s, ok := w.str(item, ip); ok {
			vals = append(vals, s)
			at = append(at, ip)
		}
	})
	return vals, at
}

// strMap reads a mapping of strings to strings (queue properties). It
// returns nil for null.
func (w *walker) strMap(n *yaml.Node, p pos, what string) map[string]string {
	n, leave, ok := w.enter(n, p)
	if !ok {
		return nil
	}
	defer leave()
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		w.errs.at(p, "expected a mapping (%s), got %s", what, describe(n))
		return nil
	}
	m := map[string]string{}
	for _, e := range w.pairs(n, p) {
		if v, ok := w.str(e.val, childPos(p, e.key, valueLine(e))); ok {
			m[e.key] = v
		}
	}
	return m
}
