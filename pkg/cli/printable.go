package cli

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// printable returns s with every character a terminal may act on written
// as an escape instead, so that names and messages from the cluster (user
// and group names from pod annotations, application ids, queue names,
// the server's error text) cannot move the cursor, retitle the window,
// hide text or reorder it: C0 controls (ESC, BEL, CR, backspace, ...) and
// DEL, C1 controls (U+0080-U+009F; CSI is U+009B), and the bidirectional
// overrides and isolates (U+202A-U+202E, U+2066-U+2069) as \uXXXX, and a
// byte that is not UTF-8 as \xNN. Newline and tab are escaped too unless
// layout is set (text we lay out ourselves, such as indented JSON, where
// they cannot come from inside a JSON string). The \uXXXX form is also a
// JSON escape, so escaped JSON stays JSON.
func printable(s string, layout bool) string {
	i := strings.IndexFunc(s, func(r rune) bool { return unsafeRune(r, layout) })
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for j := i; j < len(s); {
		r, size := utf8.DecodeRuneInString(s[j:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[j])
		case unsafeRune(r, layout):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[j : j+size])
		}
		j += size
	}
	return b.String()
}

// unsafeRune reports whether printable escapes r.
func unsafeRune(r rune, layout bool) bool {
	switch {
	case layout && (r == '\n' || r == '\t'):
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == utf8.RuneError:
		return true // a byte that is not UTF-8 (a literal U+FFFD is escaped too)
	}
	return false
}
