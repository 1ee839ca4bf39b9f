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
