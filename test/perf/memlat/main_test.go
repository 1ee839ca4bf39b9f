package main

import (
	"math/rand"
	"strings"
	"testing"
)

// TestCycleVisitsEveryLine: a walk that skipped lines would time a
// smaller buffer than it names.
func TestCycleVisitsEveryLine(t *testing.T) {
	for _, lines := range []int{1, 2, 7, 1024} {
		buf := cycle(lines, rand.New(rand.NewSource(int64(lines))))
		seen := map[uint64]bool{}
		p := uint64(0)
		for range lines {
			if p%line != 0 || p >= uint64(len(buf)) {
				t.Fatalf("%d lines: index %d is not a line's start", lines, p)
			}
			if seen[p] {
				t.Fatalf("%d lines: back at %d after %d of %d lines", lines, p, len(seen), lines)
			}
			seen[p] = true
			p = buf[p]
		}
		if p != 0 {
			t.Errorf("%d lines: the cycle does not close (ends at %d)", lines, p)
		}
	}
}

func TestTable(t *testing.T) {
	var b strings.Builder
	if err := table(&b, []int{1}, 1000, 3); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(rows) != 3 || !strings.HasPrefix(rows[2], "| 1 | ") {
		t.Errorf("table = %q, want a header and one row for 1 MiB", b.String())
	}
}
