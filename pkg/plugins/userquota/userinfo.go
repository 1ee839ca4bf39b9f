package userquota

import (
	"sync"

	"github.com/userquota/userquota/pkg/podmeta"
)

// Parsed user info is kept: the pods of one user carry the same
// annotation, and decoding its JSON was a fifth of the plugin's
// allocations per pod, parsed again at PreEnqueue, at PreFilter and by the
// pod handler (BenchmarkPodPath). The cache holds what ParseUserInfo
// returns, errors included (they name the annotation key, part of the
// cache's key); a value longer than maxCachedUserInfo is parsed each time,
// and the whole cache is dropped when it holds maxUserInfos entries, so
// hostile annotations bound its memory (at most maxUserInfos x
// maxCachedUserInfo bytes of keys). The groups slice it returns is shared
// by every pod of the user: callers never change it.
const (
	maxUserInfos      = 1 << 16
	maxCachedUserInfo = 1024
)

type userInfoKey struct{ key, raw string }

type parsedUserInfo struct {
	ui  podmeta.UserInfo
	err error
}

// userInfos is the cache; its lock guards the map alone.
type userInfos struct {
	max int
	mu  sync.Mutex
	m   map[userInfoKey]parsedUserInfo
}

func newUserInfos(max int) *userInfos {
	return &userInfos{max: max, m: map[userInfoKey]parsedUserInfo{}}
}

var userInfoCache = newUserInfos(maxUserInfos)

// parse is podmeta.ParseUserInfo(key, raw), from the cache when it was
// parsed before.
func (c *userInfos) parse(key, raw string) (podmeta.UserInfo, error) {
	if len(raw) > maxCachedUserInfo {
		return podmeta.ParseUserInfo(key, raw)
	}
	k := userInfoKey{key, raw}
	c.mu.Lock()
	p, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return p.ui, p.err
	}
	ui, err := podmeta.ParseUserInfo(key, raw)
	c.mu.Lock()
	if len(c.m) >= c.max {
		c.m = map[userInfoKey]parsedUserInfo{}
	}
	c.m[k] = parsedUserInfo{ui, err}
	c.mu.Unlock()
	return ui, err
}

// len is the number of cached entries.
func (c *userInfos) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
