// Package errs reads error chains on hot paths. errors.As takes its
// target's address, so the target escapes: one allocation a call, even
// when the error is not of the type asked for. Most errors the scheduler
// reads on its paths (ugm's refusals, the hold book's reasons) have no
// chain, and for those a type assertion is the whole answer.
package errs

import "errors"

// As is errors.As returning the target: the same answer, without an
// allocation for an error that has no chain (no Unwrap, no As method).
func As[T error](err error) (T, bool) {
	if t, ok := err.(T); ok || !chained(err) {
		return t, ok
	}
	return inChain[T](err)
}

// chained reports whether errors.As could find more in err than err
// itself: it wraps other errors or says what it matches.
func chained(err error) bool {
	switch err.(type) {
	case interface{ Unwrap() error }, interface{ Unwrap() []error }, interface{ As(any) bool }:
		return true
	}
	return false
}

// inChain is errors.As: kept out of As, so that only a chained error pays
// for the target's allocation.
func inChain[T error](err error) (T, bool) {
	var t T
	ok := errors.As(err, &t)
	return t, ok
}
