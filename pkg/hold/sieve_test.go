package hold

import (
	"errors"
	"testing"

	"github.com/userquota/userquota/pkg/ugm"
)

func TestSieve(t *testing.T) {
	queueCPU := func(req int64) error {
		return &ugm.Refusal{Who: ugm.WhoQueue, Name: "root.q", Queue: "root.q", Limit: ugm.LimitResources, Resource: "cpu", Usage: 3000, Request: req, Max: 4000}
	}
	userCPU := &ugm.Refusal{Who: ugm.WhoUser, Name: "sue", Queue: "root.q", Limit: ugm.LimitResources, Resource: "cpu", Request: 2000, Max: 4000}
	s := Sieve{}
	if s.Skip(queueCPU(2000)) {
		t.Fatal("skips before any refusal")
	}
	s.Refused(queueCPU(2000))
	for _, tc := range []struct {
		name   string
		reason error
		want   bool
	}{
		{"same limit, same request", queueCPU(2000), true},
		{"same limit, larger request", queueCPU(3000), true},
		{"same limit, smaller request", queueCPU(1000), false},
		{"another limit", userCPU, false},
		{"not a refusal", errors.New("no queue"), false},
		{"a wrapped refusal", &BehindError{Pod: &Pod{Reason: queueCPU(2000)}}, false},
	} {
		if got := s.Skip(tc.reason); got != tc.want {
			t.Errorf("%s: Skip = %v, want %v", tc.name, got, tc.want)
		}
	}
	s.Refused(queueCPU(500))
	if !s.Skip(queueCPU(1000)) {
		t.Error("a smaller refusal does not lower the bar")
	}
	s.Refused(queueCPU(3000))
	if s.Skip(queueCPU(400)) {
		t.Error("a larger refusal raised the bar")
	}
}
