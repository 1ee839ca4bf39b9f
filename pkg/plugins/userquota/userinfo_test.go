package userquota

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/podmeta"
)

// TestUserInfoCache: the cache answers what ParseUserInfo answers, errors
// included, parses a value once, leaves long values out and stays within
// its bound.
func TestUserInfoCache(t *testing.T) {
	long := `{"user":"sue","groups":["` + strings.Repeat("g", maxCachedUserInfo) + `"]}`
	for _, tc := range []struct {
		name, key, raw string
		cached         bool
	}{
		{name: "ours", key: podmeta.AnnotationUserInfo, raw: `{"user":"sue","groups":["dev","ops"]}`, cached: true},
		{name: "yunikorn's", key: podmeta.UserInfoKeys[1], raw: `{"user":"bob"}`, cached: true},
		{name: "malformed", key: podmeta.AnnotationUserInfo, raw: `{"user":`, cached: true},
		{name: "no user", key: podmeta.AnnotationUserInfo, raw: `{"groups":["dev"]}`, cached: true},
		{name: "trailing data", key: podmeta.AnnotationUserInfo, raw: `{"user":"sue"} {}`, cached: true},
		{name: "too long to keep", key: podmeta.AnnotationUserInfo, raw: long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newUserInfos(10)
			want, wantErr := podmeta.ParseUserInfo(tc.key, tc.raw)
			for i := range 2 {
				got, err := c.parse(tc.key, tc.raw)
				if !reflect.DeepEqual(got, want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("parse #%d = %+v, %v; want %+v, %v", i+1, got, err, want, wantErr)
				}
			}
			if n := c.len(); (n == 1) != tc.cached {
				t.Errorf("%d entries cached, want cached %v", n, tc.cached)
			}
		})
	}
}

// TestUserInfoCacheBounded: distinct values past the bound drop the whole
// cache instead of growing it.
func TestUserInfoCacheBounded(t *testing.T) {
	c := newUserInfos(100)
	for i := range 1000 {
		raw := fmt.Sprintf(`{"user":"user-%d"}`, i)
		ui, err := c.parse(podmeta.AnnotationUserInfo, raw)
		if err != nil || ui.User != fmt.Sprintf("user-%d", i) {
			t.Fatalf("parse(%s) = %+v, %v", raw, ui, err)
		}
		if n := c.len(); n > 100 {
			t.Fatalf("%d entries after %d values, want at most 100", n, i+1)
		}
	}
}
