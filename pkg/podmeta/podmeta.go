// Package podmeta is the contract between a pod and userquota: the
// annotation and label keys that say who a pod runs as, where it runs and
// which application it belongs to (ours and Apache YuniKorn's, so pods
// written for YuniKorn work unchanged), and the JSON of the user info. The
// admission webhook writes the user info, the scheduler plugin reads it
// all; both take the keys from here so that they cannot drift apart.
package podmeta

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Keys of ours.
const (
	// AnnotationUserInfo carries the user and groups a pod runs as, as
	// UserInfo JSON: {"user":"sue","groups":["dev"]}. The webhook stamps
	// it from the authenticated requester.
	AnnotationUserInfo = "userquota.io/user-info"
	// LabelQueue names the pod's queue (a full path or a leaf name); the
	// scheduler reads it as an annotation too.
	LabelQueue = "userquota.io/queue"
	// LabelAppID names the pod's application within its namespace.
	LabelAppID = "userquota.io/app-id"
	// LabelPreemptible "false" marks a pod that must never be preempted:
	// in an elastic queue it may then only use guaranteed capacity
	// (docs/reclaim.md).
	LabelPreemptible = "userquota.io/preemptible"
	// LabelTreePrefix starts the label that names a pod's node in a quota
	// tree: TreeLabel(tree) (docs/forests.md).
	LabelTreePrefix = "tree.userquota.io/"
)

// TreeLabel is the label whose value names a pod's node in the quota tree
// named tree: "tree.userquota.io/" + tree.
func TreeLabel(tree string) string { return LabelTreePrefix + tree }

// YuniKorn's keys, honoured after ours.
const (
	YuniKornUserInfo = "yunikorn.apache.org/user.info"
	YuniKornQueue    = "yunikorn.apache.org/queue"
	YuniKornAppID    = "yunikorn.apache.org/app-id"
)

// MetaKey is a key of a pod's labels (Annotation false) or annotations.
type MetaKey struct {
	Annotation bool
	Key        string
}

// String is "label KEY" or "annotation KEY", for messages.
func (k MetaKey) String() string {
	if k.Annotation {
		return "annotation " + k.Key
	}
	return "label " + k.Key
}

// In returns the key's value in the pod's labels or annotations.
func (k MetaKey) In(labels, annotations map[string]string) (string, bool) {
	if k.Annotation {
		v, ok := annotations[k.Key]
		return v, ok
	}
	v, ok := labels[k.Key]
	return v, ok
}

// QueueKeys name a pod's queue, in the order the scheduler reads them:
// ours and YuniKorn's, each as an annotation then a label, then the label
// YuniKorn's admission controller reads.
var QueueKeys = [...]MetaKey{{true, LabelQueue}, {false, LabelQueue}, {true, YuniKornQueue}, {false, YuniKornQueue}, {false, "queue"}}

// AppIDKeys name a pod's application explicitly, in the order the
// scheduler reads them: each as a label, then as an annotation, before
// the gang object or the controller the pod belongs to.
var AppIDKeys = [...]string{LabelAppID, "applicationId", YuniKornAppID, "spark-app-selector"}

// ExplicitAppID is the application id a pod names with AppIDKeys, or ""
// when it names none. A value counts only when it is a valid label value
// (IsValidLabelValue: at most 63 characters of letters, digits, '-', '_'
// and '.'); another is skipped as if absent. The API server already holds
// labels to that; annotations it does not, so this is what keeps an
// annotation from naming an id the scheduler derives from the pod's owner
// ("Deployment/web", "Job/pi", "PodGroup/train", "pod/<uid>"): those all
// contain '/', which no valid label value does, so a pod cannot join
// another workload's application by naming it (docs/design.md,
// Applications), nor carry control characters into messages and
// `userquotactl` output.
func ExplicitAppID(labels, annotations map[string]string) string {
	for _, key := range AppIDKeys {
		for _, m := range [2]map[string]string{labels, annotations} {
			if v := m[key]; v != "" && validLabelValue(v) {
				return v
			}
		}
	}
	return ""
}

// validLabelValue is len(validation.IsValidLabelValue(v)) == 0 without
// its regular expression (3 % of the pod handler's time in a restart's
// rebuild, BenchmarkRecovery): at most 63 bytes of ASCII letters,
// digits, '-', '_' and '.', the first and the last a letter or digit.
// FuzzValidLabelValue checks it against IsValidLabelValue.
func validLabelValue(v string) bool {
	if len(v) > validation.LabelValueMaxLength {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			continue
		}
		if i == 0 || i == len(v)-1 || c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// UserInfoKeys are the user-info annotations in the order the scheduler
// reads them: the first one present decides.
var UserInfoKeys = [...]string{AnnotationUserInfo, YuniKornUserInfo}

// UserInfo is the JSON of the user-info annotations (ours and YuniKorn's).
type UserInfo struct {
	User   string   `json:"user"`
	Groups []string `json:"groups"`
}

// ParseUserInfo decodes the annotation key's value strictly: one JSON
// object with a non-empty user, no unknown fields, nothing after it (as
// YuniKorn's json.Unmarshal refuses trailing data). The error names the
// annotation.
func ParseUserInfo(key, raw string) (UserInfo, error) {
	var ui UserInfo
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&ui)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("unexpected data after the JSON object")
		}
	}
	if err != nil {
		return UserInfo{}, fmt.Errorf("annotation %s is not valid user info JSON ({\"user\":\"name\",\"groups\":[...]}): %v", key, err)
	}
	if strings.TrimSpace(ui.User) == "" {
		return UserInfo{}, fmt.Errorf("annotation %s has no user", key)
	}
	return ui, nil
}

// String is the annotation value for u.
func (u UserInfo) String() string {
	b, _ := json.Marshal(u)
	return string(b)
}
