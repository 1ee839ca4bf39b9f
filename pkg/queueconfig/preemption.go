package queueconfig

import (
	"strings"
	"time"
)

// Queue properties of reclaim (docs/reclaim.md): YuniKorn's keys, with
// YuniKorn's values.
const (
	// PropPreemptionPolicy is default, fence or disabled.
	PropPreemptionPolicy = "preemption.policy"
	// PropPreemptionDelay is how long a pod waits, from its first refusal,
	// before it may preempt: a duration such as 30s.
	PropPreemptionDelay = "preemption.delay"

	// PolicyDefault: pods preempt and are preempted as the rules say.
	PolicyDefault = "default"
	// PolicyFence: pods of the queue's subtree take no victims outside it,
	// and pods outside take none inside it.
	PolicyFence = "fence"
	// PolicyDisabled: pods of the queue (and of queues below that set no
	// policy) never preempt; they may still be victims.
	PolicyDisabled = "disabled"
)

// maxPreemptionDelay bounds preemption.delay: a longer wait is a typo, and
// a pod would sit for days before taking back its guaranteed share.
const maxPreemptionDelay = 24 * time.Hour

// Preemption is what one queue (or child template) sets itself; a queue
// that sets nothing takes its parent's (the plugin resolves the nearest
// setting on the way to root).
type Preemption struct {
	// Policy is PolicyDefault, PolicyFence, PolicyDisabled, or "" when the
	// queue does not set preemption.policy.
	Policy string
	// Delay is preemption.delay; DelaySet says whether the queue sets it.
	Delay    time.Duration
	DelaySet bool
}

func (v *validator) checkPreemptionProps(props map[string]string, p pos) {
	if s, ok := props[PropPreemptionPolicy]; ok {
		if _, err := parsePolicy(s); err != "" {
			v.errs.at(childPos(p, PropPreemptionPolicy, p.line), "%s %q: %s", PropPreemptionPolicy, shorten(s), err)
		}
	}
	if s, ok := props[PropPreemptionDelay]; ok {
		if _, err := parseDelay(s); err != "" {
			v.errs.at(childPos(p, PropPreemptionDelay, p.line), "%s %q: %s", PropPreemptionDelay, shorten(s), err)
		}
	}
}

// parsePolicy reads preemption.policy; the error is "" or says what is
// wrong.
func parsePolicy(s string) (string, string) {
	switch p := strings.ToLower(strings.TrimSpace(s)); p {
	case PolicyDefault, PolicyFence, PolicyDisabled:
		return p, ""
	}
	return "", "give default, fence or disabled"
}

// parseDelay reads preemption.delay: a Go duration (30s, 2m, 1h30m), as
// YuniKorn reads it; 0 is allowed (preempt at once).
func parseDelay(s string) (time.Duration, string) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil:
		return 0, "give a duration with a unit, such as 30s, 2m or 1h30m"
	case d < 0:
		return 0, "a delay cannot be negative"
	case d > maxPreemptionDelay:
		return 0, "at most 24h"
	}
	return d, ""
}

// preemption builds the settings of a validated queue or template.
func preemption(props map[string]string) Preemption {
	var out Preemption
	if s, ok := props[PropPreemptionPolicy]; ok {
		out.Policy, _ = parsePolicy(s)
	}
	if s, ok := props[PropPreemptionDelay]; ok {
		out.Delay, _ = parseDelay(s)
		out.DelaySet = true
	}
	return out
}

// isPreemptionProp reports whether key is a property this package acts on
// for reclaim.
func isPreemptionProp(key string) bool {
	return key == PropPreemptionPolicy || key == PropPreemptionDelay
}
