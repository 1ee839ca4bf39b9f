package queueconfig

// Name checks other packages share with the validator, so that placement
// (pkg/placement) judges generated queue names and filter entries exactly
// as a config is judged when it loads.

// IsQueueName reports whether s is a valid name for one level of a queue
// path: 1 to 64 letters, digits and _ - : # / @ (no dot).
func IsQueueName(s string) bool { return queueNameRE.MatchString(s) }

// IsUserName reports whether s is a valid user name in a limit or a
// placement filter.
func IsUserName(s string) bool { return userRE.MatchString(s) }

// IsGroupName reports whether s is a valid group name in a limit or a
// placement filter.
func IsGroupName(s string) bool { return groupRE.MatchString(s) }

// IsFilterRegexp reports whether a single placement filter entry is a
// regular expression rather than a name: it holds a character no user or
// group name may hold (YuniKorn's rule). The validator has made sure it
// compiles.
func IsFilterRegexp(s string) bool { return specialRE.MatchString(s) }
