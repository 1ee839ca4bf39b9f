package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/userquota/userquota/pkg/rest/dao"
)

func TestWhyLine(t *testing.T) {
	since := time.Date(2026, 11, 27, 22, 34, 59, 0, time.UTC)
	behind := dao.PodExplanation{Pod: "soak-a/w", State: dao.StateHeld, Message: "held",
		Held: &dao.HeldExplanation{Kind: "Behind", Since: since, Position: 2, QueueHeld: 5,
			Reason: "waiting behind pod soak-b/big, held since 22:34:59 (longer than the starvation wait): ..."}}
	limit := dao.PodExplanation{Pod: "soak-a/w", State: dao.StateHeld, Message: "held",
		Held: &dao.HeldExplanation{Kind: "User", Since: since, Reason: `user "u1" would exceed maxresources in root`}}
	for _, tc := range []struct {
		name      string
		body      []byte
		want      []string
		wantAhead string
	}{
		{"held behind a pod", mustJSON(t, behind), []string{"Held: held", "held Behind since 22:34:59.000", "2 of 5 held", "waiting behind pod soak-b/big"}, "soak-b/big"},
		{"held by a limit", mustJSON(t, limit), []string{"held User since", `user "u1"`}, ""},
		{"admitted", mustJSON(t, dao.PodExplanation{State: dao.StateAdmitted, Message: "let in"}), []string{"Admitted: let in"}, ""},
		{"not JSON", []byte("<html>"), []string{"unreadable answer", "<html>"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line, ahead := whyLine(tc.body)
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("line %q lacks %q", line, w)
				}
			}
			if ahead != tc.wantAhead {
				t.Errorf("ahead %q, want %q", ahead, tc.wantAhead)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A wait violation's report carries what the scheduler says of the pod,
// asked outside the history's lock; the history keeps its own message.
func TestWaitViolationExplained(t *testing.T) {
	c := testConfig(t)
	got := make(chan string, 1)
	h := newHistory(c, func(msg string) { got <- msg })
	h.explainWait = func(ns, name string) string {
		if !h.mu.TryLock() {
			return "asked under the history's lock"
		}
		h.mu.Unlock()
		return "\n  the scheduler says of " + ns + "/" + name + ": lost"
	}
	v := h.addVersion(c)
	v.applied = time.Now()
	p := testPod("w", "u011", []string{"g1"}, "root.alpha.a1", "100m")
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable", Message: "user u011 is at a limit"}}
	put(t, h, 1, p)
	now := h.pods[podPrefix+p.Namespace+"/"+p.Name].refusedAt
	h.checkWaits(now, now.Add(-time.Minute), 5*time.Second)
	h.checkWaits(now.Add(6*time.Second), now.Add(-time.Minute), 5*time.Second)
	select {
	case msg := <-got:
		if !strings.Contains(msg, "has fitted every limit") || !strings.HasSuffix(msg, "the scheduler says of soak-a/w: lost") {
			t.Errorf("report %q", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no violation reported")
	}
	if strings.Contains(h.violation, "scheduler says") {
		t.Errorf("history's message has the explanation: %q", h.violation)
	}
}
