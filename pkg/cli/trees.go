package cli

import (
	"fmt"
	"os"
	"strings"
)

// treeFiles is a repeated --tree FILE flag: quota trees beside a queue
// config (docs/forests.md).
type treeFiles []string

func (t *treeFiles) String() string { return strings.Join(*t, ",") }

func (t *treeFiles) Set(path string) error {
	if path == "" {
		return fmt.Errorf("empty file name")
	}
	*t = append(*t, path)
	return nil
}

// read returns each file's JSON keyed by its path (nil: no --tree).
func (t treeFiles) read() (map[string]string, error) {
	if len(t) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(t))
	for _, path := range t {
		if _, dup := out[path]; dup {
			return nil, fmt.Errorf("--tree %s is given twice", path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out[path] = string(data)
	}
	return out, nil
}
