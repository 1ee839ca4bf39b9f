package podmeta

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseUserInfo(t *testing.T) {
	tests := []struct {
		name, raw string
		want      UserInfo
		wantErr   string
	}{
		{name: "user and groups", raw: `{"user":"sue","groups":["dev","ops"]}`, want: UserInfo{User: "sue", Groups: []string{"dev", "ops"}}},
		{name: "user only", raw: `{"user":"sue"}`, want: UserInfo{User: "sue"}},
		{name: "blank user", raw: `{"user":"  "}`, wantErr: "has no user"},
		{name: "unknown field", raw: `{"user":"sue","admin":true}`, wantErr: `unknown field "admin"`},
		{name: "trailing data", raw: `{"user":"sue"} {"user":"bob"}`, wantErr: "unexpected data after the JSON object"},
		{name: "not JSON", raw: `sue`, wantErr: "is not valid user info JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseUserInfo(AnnotationUserInfo, tc.raw)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), AnnotationUserInfo) {
					t.Fatalf("error = %v, want one naming %s and saying %q", err, AnnotationUserInfo, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want,+got):\n%s", diff)
			}
			back, err := ParseUserInfo(AnnotationUserInfo, got.String())
			if err != nil || !cmp.Equal(got, back) {
				t.Fatalf("String() = %s does not read back: %v, %v", got.String(), back, err)
			}
		})
	}
}

func TestExplicitAppID(t *testing.T) {
	tests := []struct {
		name                string
		labels, annotations map[string]string
		want                string
	}{
		{name: "none", want: ""},
		{name: "our label", labels: map[string]string{LabelAppID: "web", "applicationId": "other"}, want: "web"},
		{name: "label before annotation of the same key", labels: map[string]string{"applicationId": "l"}, annotations: map[string]string{"applicationId": "a"}, want: "l"},
		{name: "an earlier key's annotation before a later key's label", labels: map[string]string{"spark-app-selector": "l"}, annotations: map[string]string{LabelAppID: "a"}, want: "a"},
		{name: "YuniKorn's", labels: map[string]string{YuniKornAppID: "yk"}, want: "yk"},
		{name: "an owner-derived id in an annotation is skipped", annotations: map[string]string{"applicationId": "Deployment/alice-web"}, want: ""},
		{name: "a pod-derived id is skipped", annotations: map[string]string{LabelAppID: "pod/0f9d"}, want: ""},
		{name: "skipped: the next key counts", annotations: map[string]string{LabelAppID: "Job/pi", "spark-app-selector": "spark-1"}, want: "spark-1"},
		{name: "control characters", annotations: map[string]string{LabelAppID: "a\x1b]0;pwned\x07"}, want: ""},
		{name: "newline", annotations: map[string]string{LabelAppID: "a\nb"}, want: ""},
		{name: "64 characters", annotations: map[string]string{LabelAppID: strings.Repeat("x", 64)}, want: ""},
		{name: "a label the API server would refuse", labels: map[string]string{LabelAppID: "Deployment/web"}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExplicitAppID(tc.labels, tc.annotations); got != tc.want {
				t.Errorf("ExplicitAppID = %q, want %q", got, tc.want)
			}
		})
	}
}
