package queueconfig

import (
	"errors"
	"strings"
)

// ParentPath is the full path of the parent of the queue at path
// ("root.a" for "root.a.b"); "" for root.
func ParentPath(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

// LeafName is the last element of a queue path ("b" for "root.a.b").
func LeafName(path string) string {
	return path[strings.LastIndexByte(path, '.')+1:]
}

// Problems lists the problems of an error from Parse, one per element: the
// parser's own list when it has one, else the error's lines. A tool prints
// them one per line, a JSON answer lists them.
func Problems(err error) []string {
	var list *Errors
	if errors.As(err, &list) && list.Len() > 0 {
		return list.Strings()
	}
	var out []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}
