package podmeta

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzExplicitAppID checks that an explicit application id, from a label
// or an annotation, is always a valid label value: never an id the
// scheduler derives from an owner (they contain '/'), never a control
// character. The corpus holds the squats and terminal escapes.
func FuzzExplicitAppID(f *testing.F) {
	for _, s := range []string{"web", "Deployment/alice-web", "pod/0f9d", "Job/pi", "PodGroup/train", "\x1b[2J", "a\x07b", strings.Repeat("a", 64), ""} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, label, annotation string) {
		for _, key := range AppIDKeys {
			id := ExplicitAppID(map[string]string{key: label}, map[string]string{key: annotation})
			if id == "" {
				continue
			}
			if strings.Contains(id, "/") || len(validation.IsValidLabelValue(id)) > 0 {
				t.Fatalf("ExplicitAppID(label %q, annotation %q) = %q: not a valid label value", label, annotation, id)
			}
			if id != label && id != annotation {
				t.Fatalf("ExplicitAppID = %q, neither given", id)
			}
		}
	})
}

// FuzzValidLabelValue checks validLabelValue against apimachinery's
// IsValidLabelValue.
func FuzzValidLabelValue(f *testing.F) {
	for _, s := range []string{"", "a", "-", "a-", "-a", "a.b_c-d", "A9", "a b", "é", "a\x00b", "web/x", strings.Repeat("a", 63), strings.Repeat("a", 64), "a" + strings.Repeat(".", 61) + "a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validLabelValue(s), len(validation.IsValidLabelValue(s)) == 0; got != want {
			t.Fatalf("validLabelValue(%q) = %v, IsValidLabelValue says %v", s, got, want)
		}
	})
}
