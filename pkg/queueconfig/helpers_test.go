package queueconfig

import (
	"errors"
	"strings"
	"testing"
)

// mustParse parses a config that must be valid.
func mustParse(t *testing.T, text string) *Config {
	t.Helper()
	cfg, err := Parse([]byte(text))
	if err != nil {
		t.Fatalf("unexpected error:\n%v\nconfig:\n%s", err, text)
	}
	if cfg == nil {
		t.Fatal("nil config without an error")
	}
	return cfg
}

// mustFail parses a config that must be refused and returns its errors,
// checking that every want appears in some error line.
func mustFail(t *testing.T, text string, want ...string) *Errors {
	t.Helper()
	cfg, err := Parse([]byte(text))
	if err == nil {
		t.Fatalf("config accepted, want errors %q\nconfig:\n%s", want, text)
	}
	if cfg != nil {
		t.Fatal("a config was returned with the error")
	}
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error is %T, want *Errors", err)
	}
	if errs.Len() == 0 {
		t.Fatal("*Errors with no errors")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("no error contains %q; got:\n%v", w, err)
		}
	}
	return errs
}

// root wraps queue lines (already indented by 8) under partitions/default/root.
func underRoot(lines string) string {
	return "partitions:\n  - name: default\n    queues:\n      - name: root\n" + lines
}
