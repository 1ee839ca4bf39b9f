package queueconfig

import "strings"

// Queue property of the order of pods waiting for quota (docs/design.md):
// YuniKorn's key, with YuniKorn's values.
const (
	// PropAppSortPolicy is fifo or fair; YuniKorn's deprecated stateaware
	// is read as fifo.
	PropAppSortPolicy = "application.sort.policy"

	// AppSortFIFO: a queue's applications go in the order they came
	// (YuniKorn's default).
	AppSortFIFO = "fifo"
	// AppSortFair: the application using least of the queue goes first.
	AppSortFair = "fair"

	// appSortStateAware is YuniKorn's deprecated policy; YuniKorn itself
	// now reads it as fifo, and so do we, with a notice.
	appSortStateAware = "stateaware"
)

// noticeStateAware is the notice for a stateaware policy.
const noticeStateAware = appSortStateAware + " is deprecated in YuniKorn and treated as " + AppSortFIFO + " here"

func (v *validator) checkAppSortProp(props map[string]string, p pos) {
	if s, ok := props[PropAppSortPolicy]; ok {
		if _, _, err := parseAppSort(s); err != "" {
			v.errs.at(childPos(p, PropAppSortPolicy, p.line), "%s %q: %s", PropAppSortPolicy, shorten(s), err)
		}
	}
}

// parseAppSort reads application.sort.policy, ignoring case and spaces
// around it: the policy, whether it was given as the deprecated stateaware,
// and "" or what is wrong.
func parseAppSort(s string) (policy string, stateAware bool, err string) {
	switch p := strings.ToLower(strings.TrimSpace(s)); p {
	case AppSortFIFO, AppSortFair:
		return p, false, ""
	case appSortStateAware:
		return AppSortFIFO, true, ""
	}
	return "", false, "give fifo, fair or stateaware"
}

// appSort is what a validated queue or template sets: "" when it does not
// set application.sort.policy.
func appSort(props map[string]string) string {
	s, ok := props[PropAppSortPolicy]
	if !ok {
		return ""
	}
	p, _, _ := parseAppSort(s)
	return p
}

// isStateAware reports whether props set the deprecated stateaware policy.
func isStateAware(props map[string]string) bool {
	s, ok := props[PropAppSortPolicy]
	if !ok {
		return false
	}
	_, sa, _ := parseAppSort(s)
	return sa
}

// AppSortPolicy is the application.sort.policy in force for the queue at
// leaf (a full path): the nearest setting on the way from leaf to root, as
// preemption.* is resolved (pkg/plugins/userquota/reclaim). A queue not in
// the config (dynamic) takes, when it is leaf itself, the setting of the
// child template of its nearest configured ancestor that has one; a dynamic
// queue above leaf sets nothing. Without any setting, or without a
// partition, it is AppSortFIFO, YuniKorn's default.
func AppSortPolicy(p *Partition, leaf string) string {
	if p == nil {
		return AppSortFIFO
	}
	for path := leaf; path != ""; path = ParentPath(path) {
		if s := appSortAt(p, path, leaf); s != "" {
			return s
		}
	}
	return AppSortFIFO
}

// appSortAt is what the queue at path sets itself ("" nothing).
func appSortAt(p *Partition, path, leaf string) string {
	if q := p.Queue(path); q != nil {
		return q.AppSort
	}
	if path != leaf {
		return ""
	}
	for a := ParentPath(path); a != ""; a = ParentPath(a) {
		if q := p.Queue(a); q != nil && q.ChildTemplate != nil {
			return q.ChildTemplate.AppSort
		}
	}
	return ""
}
