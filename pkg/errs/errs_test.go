package errs

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

type leaf struct{ name string }

func (e *leaf) Error() string { return e.name }

type other struct{}

func (other) Error() string { return "other" }

// matcher says it is a *leaf named "matched" (an As method).
type matcher struct{}

func (matcher) Error() string { return "matcher" }
func (matcher) As(target any) bool {
	if p, ok := target.(**leaf); ok {
		*p = &leaf{name: "matched"}
		return true
	}
	return false
}

// TestAs: the same answer as errors.As for errors with and without
// chains, and no allocation for one without.
func TestAs(t *testing.T) {
	l := &leaf{name: "l"}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"nil", nil},
		{"the type", l},
		{"another type", other{}},
		{"wrapped once", fmt.Errorf("a: %w", l)},
		{"wrapped twice", fmt.Errorf("b: %w", fmt.Errorf("a: %w", l))},
		{"joined", errors.Join(other{}, l)},
		{"wrapping another type", fmt.Errorf("a: %w", other{})},
		{"an As method", matcher{}},
		{"a path error", &fs.PathError{Op: "open", Path: "x", Err: fs.ErrNotExist}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want *leaf
			wantOK := errors.As(tc.err, &want)
			got, ok := As[*leaf](tc.err)
			if ok != wantOK || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("As = %v, %v; errors.As = %v, %v", got, ok, want, wantOK)
			}
		})
	}
	for _, err := range []error{nil, l, other{}} {
		if n := testing.AllocsPerRun(100, func() { _, _ = As[*leaf](err) }); n != 0 {
			t.Errorf("As(%v): %v allocations, want 0", err, n)
		}
	}
}
