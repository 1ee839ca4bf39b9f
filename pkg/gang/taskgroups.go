package gang

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/userquota/userquota/pkg/resources"
)

// YuniKorn's gang annotations.
const (
	// AnnotationTaskGroupName names the pod's task group.
	AnnotationTaskGroupName = "yunikorn.apache.org/task-group-name"
	// AnnotationTaskGroups is the application's task groups, a JSON list
	// of {name, minMember, minResource}, minResource per member. YuniKorn
	// reads it from the application's first pod (Spark: the driver);
	// other pods may carry only their group's name.
	AnnotationTaskGroups = "yunikorn.apache.org/task-groups"
	// AnnotationPolicyParameters is a space-separated key=value list:
	// placeholderTimeoutInSeconds, gangSchedulingStyle (Soft, Hard).
	AnnotationPolicyParameters = "yunikorn.apache.org/schedulingPolicyParameters"
)

const (
	paramTimeout = "placeholderTimeoutInSeconds"
	paramStyle   = "gangSchedulingStyle"
	// maxTaskGroups bounds the work one annotation can ask for.
	maxTaskGroups = 64
)

// taskGroup is one entry of the task-groups JSON. YuniKorn's other fields
// (nodeSelector, tolerations, affinity, labels, annotations,
// topologySpreadConstraints) place its placeholders; quota does not read
// them, and they are accepted unread.
type taskGroup struct {
	Name        string            `json:"name"`
	MinMember   int32             `json:"minMember"`
	MinResource map[string]string `json:"minResource"`
}

// TaskGroupsMember reads the YuniKorn form from pod, whose application is
// app: nil when the pod carries neither task-group annotation. The
// Member's Min is set when the pod carries the task groups (the gang's
// definition); otherwise another pod of the application must. Errors name
// the annotation.
func TaskGroupsMember(pod *v1.Pod, app string) (*Member, error) {
	name, named := pod.Annotations[AnnotationTaskGroupName]
	raw, defined := pod.Annotations[AnnotationTaskGroups]
	if !named && !defined {
		return nil, nil
	}
	m := &Member{ID: ID{Namespace: pod.Namespace, Form: FormTaskGroups, Name: app}, TaskGroup: name}
	bad := func(key, format string, args ...any) error {
		return &Error{Gang: m.ID, What: "annotation " + key, Reason: fmt.Sprintf(format, args...)}
	}
	if app == "" {
		return nil, bad(AnnotationTaskGroupName, "the pod names no application (task groups belong to one)")
	}
	if named && name == "" {
		return nil, bad(AnnotationTaskGroupName, "empty")
	}
	if !defined {
		return m, nil
	}
	groups, err := parseTaskGroups(raw)
	if err != nil {
		return nil, bad(AnnotationTaskGroups, "%v", err)
	}
	min := Min{Timeout: DefaultTimeout, Style: Soft}
	found := !named
	for _, g := range groups {
		found = found || g.Name == name
		// Quantities as strings: a hostile one is refused by ParseQuantity
		// in bounded time, not decoded by resource.Quantity's own parser.
		per, err := resources.Parse(g.MinResource)
		if err != nil {
			return nil, bad(AnnotationTaskGroups, "task group %q: minResource: %v", g.Name, err)
		}
		per.Set(resources.Intern(resources.Pods), 1)
		all, err := per.Times(int64(g.MinMember))
		if err == nil {
			err = min.Resources.Add(all)
		}
		if err != nil {
			return nil, bad(AnnotationTaskGroups, "task group %q: %v", g.Name, err)
		}
		min.Members += g.MinMember
	}
	if !found {
		return nil, bad(AnnotationTaskGroupName, "task group %q is not in annotation %s", name, AnnotationTaskGroups)
	}
	if p, ok := pod.Annotations[AnnotationPolicyParameters]; ok {
		if min.Timeout, min.Style, err = parsePolicy(p); err != nil {
			return nil, bad(AnnotationPolicyParameters, "%v", err)
		}
	}
	m.Min = &min
	return m, nil
}

// parseTaskGroups decodes the task-groups JSON strictly where YuniKorn is
// strict (a name and a positive minMember per group) and also refuses
// what YuniKorn would take by accident: duplicate names, trailing data,
// more than maxTaskGroups groups.
func parseTaskGroups(raw string) ([]taskGroup, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	var groups []taskGroup
	if err := dec.Decode(&groups); err != nil {
		return nil, fmt.Errorf("not a JSON list of task groups: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the JSON list")
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("no task groups")
	}
	if len(groups) > maxTaskGroups {
		return nil, fmt.Errorf("%d task groups, at most %d", len(groups), maxTaskGroups)
	}
	seen := map[string]bool{}
	for i, g := range groups {
		switch {
		case g.Name == "":
			return nil, fmt.Errorf("task group %d has no name", i)
		case seen[g.Name]:
			return nil, fmt.Errorf("task group %q is named twice", g.Name)
		case g.MinMember <= 0:
			return nil, fmt.Errorf("task group %q: minMember %d, want at least 1", g.Name, g.MinMember)
		}
		seen[g.Name] = true
	}
	return groups, nil
}

// parsePolicy reads schedulingPolicyParameters. YuniKorn logs and skips
// a malformed entry or an unknown style and falls back to its defaults;
// here they are errors the pod is held with (docs/gangs.md), so that a
// typo does not silently turn a Hard gang Soft. Unknown keys are skipped,
// as YuniKorn does. A timeout of 0 is the default, as in YuniKorn.
func parsePolicy(s string) (time.Duration, Style, error) {
	timeout, style := DefaultTimeout, Soft
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" || strings.Contains(v, "=") {
			return 0, "", fmt.Errorf("%q is not key=value", f)
		}
		switch k {
		case paramTimeout:
			sec, err := strconv.ParseInt(v, 10, 64)
			if err != nil || sec < 0 || sec > int64(24*365*time.Hour/time.Second) {
				return 0, "", fmt.Errorf("%s=%q: want whole seconds from 0 (the default, %s) to a year", paramTimeout, v, DefaultTimeout)
			}
			if sec > 0 {
				timeout = time.Duration(sec) * time.Second
			}
		case paramStyle:
			switch Style(v) {
			case Soft, Hard:
				style = Style(v)
			default:
				return 0, "", fmt.Errorf("%s=%q: want %s or %s", paramStyle, v, Soft, Hard)
			}
		}
	}
	return timeout, style, nil
}
