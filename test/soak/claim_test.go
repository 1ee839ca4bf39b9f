package main

import (
	"strings"
	"testing"
	"time"
)

// A pod that fits, whose status and the status of the starving pod ahead
// of it both still show their old limits (the status writer lags after a
// config change), waits by policy when the scheduler, asked, says it
// keeps the pod behind that starving pod for a limit the pod counts
// against; an answer that does not check out against the history is a
// violation, asked once per stretch of fitting.
func TestHistoryClaimedBehind(t *testing.T) {
	// testConfig: u011 may run cpu 1625m in root. It runs 1500m; the pod
	// ahead asks for 1000m, the waiting pod for 100m. Both statuses name
	// limits the waiting pod does not count against.
	const (
		userLimit  = `user "u011" would exceed maxresources in root: cpu 1500m+1 > 1625m`
		otherLimit = `held by quota: user "u012" would exceed maxresources in root: cpu 1+1 > 1625m`
	)
	for _, tc := range []struct {
		name   string
		ahead  string        // the pod the scheduler names ("big": the starving one)
		reason string        // its reason, as the scheduler says it now
		age    time.Duration // of the pod ahead
		exempt bool
	}{
		{"behind a starving pod, a limit it counts against", "big", userLimit, 3 * time.Minute, true},
		{"behind no pod", "", "", 3 * time.Minute, false},
		{"behind a pod not starving yet", "big", userLimit, time.Minute, false},
		{"behind a pod held by another user's limit", "big", `user "u012" would exceed maxresources in root: cpu 1+1 > 1625m`, 3 * time.Minute, false},
		{"behind a pod the history does not know", "gone", userLimit, 3 * time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, big, w := behindSetup(t, "1", otherLimit, tc.age)
			var asked []string
			h.askBehind = func(ns, name string) behindClaim {
				if !h.mu.TryLock() {
					t.Error("asked under the history's lock")
				} else {
					h.mu.Unlock()
				}
				asked = append(asked, ns+"/"+name)
				if tc.ahead == "" {
					return behindClaim{}
				}
				return behindClaim{ahead: big.Namespace + "/" + tc.ahead, reason: tc.reason}
			}
			now := h.pods[podPrefix+w.Namespace+"/"+w.Name].refusedAt
			calm := now.Add(-time.Minute)
			// By its status alone, the waiting pod's wait counts.
			if h.waitsByPolicy(h.pods[podPrefix+w.Namespace+"/"+w.Name], h.inForce(now, now), now) {
				t.Fatal("waits by policy before the scheduler was asked")
			}
			for _, after := range []time.Duration{0, 4 * time.Second, 6 * time.Second, 6250 * time.Millisecond, 9 * time.Second} {
				h.checkWaits(now.Add(after), calm, 5*time.Second)
			}
			if len(asked) != 1 || asked[0] != w.Namespace+"/"+w.Name {
				t.Fatalf("asked about %v, want the waiting pod once", asked)
			}
			if got := h.violation == ""; got != tc.exempt {
				t.Fatalf("exempt %v, want %v (violation %q)", got, tc.exempt, h.violation)
			}
			if !tc.exempt {
				return
			}
			if h.c.heldBehind != 1 || h.c.claimsAsked != 1 || h.c.claimsExcused != 1 {
				t.Errorf("heldBehind %d, claims asked %d, excused %d; want 1 each", h.c.heldBehind, h.c.claimsAsked, h.c.claimsExcused)
			}
			// The claim expires: the pod fits again from the next check,
			// and is asked about again once past the wait limit.
			for _, after := range []time.Duration{12 * time.Second, 17500 * time.Millisecond} {
				h.checkWaits(now.Add(after), calm, 5*time.Second)
			}
			if len(asked) != 2 || h.violation != "" {
				t.Fatalf("after the claim expired: asked %v, violation %q", asked, h.violation)
			}
			// Once the pod ahead is gone, the claim excuses nothing.
			del(h, 4, big)
			for _, after := range []time.Duration{18 * time.Second, 24 * time.Second, 24250 * time.Millisecond} {
				h.checkWaits(now.Add(after), calm, 5*time.Second)
			}
			if !strings.Contains(h.violation, "has fitted every limit") {
				t.Fatalf("after the pod ahead went: violation %q", h.violation)
			}
		})
	}
}
