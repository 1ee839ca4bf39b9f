// Package cmshard spreads lines of state over shards of bounded size, each
// the data of one ConfigMap (a ConfigMap holds at most 1 MiB in all): the
// usage history of fair order (pkg/fairshare) and the books of
// resource-seconds (pkg/accounting) are kept across restarts this way.
//
// A line goes to the shard its key hashes to, among a power-of-two number
// of shards planned at a target size, so that a change rewrites only the
// shards of the keys that changed and shards keep their lines while the
// number of shards stays.
package cmshard

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/fnv"
)

// MaxShardBytes bounds one shard's data: a ConfigMap holds at most 1 MiB
// in all, and the object's metadata needs some of it.
const MaxShardBytes = 1000 * 1024

// TargetShardBytes is how full shards are planned: half a ConfigMap, so
// that the hash's spread never takes one over MaxShardBytes and a shard
// rewritten holds at most about this much.
const TargetShardBytes = 512 * 1024

// Line is one line of a shard: its data (ending in a newline) and the hash
// of its key (Hash), which decides its shard.
type Line struct {
	Hash uint32
	Data []byte
}

// Hash is the FNV-1a hash of parts joined by a 0 byte: a line's key.
func Hash(parts ...string) uint32 {
	f := fnv.New32a()
	for i, p := range parts {
		if i > 0 {
			f.Write([]byte{0})
		}
		f.Write([]byte(p))
	}
	return f.Sum32()
}

// Shards puts lines in n shards, n a power of two at least total/target:
// a line goes to shard Hash % n. No shard is over max bytes (n doubles
// until none is); a line longer than max is an error naming it by what
// (what(i) describes line i). Empty lines: one empty shard.
func Shards(lines []Line, target, max int, what func(i int) string) ([][]byte, error) {
	total := 0
	for i, l := range lines {
		if len(l.Data) > max {
			return nil, fmt.Errorf("%s is %d bytes, more than a shard holds", what(i), len(l.Data))
		}
		total += len(l.Data)
	}
	n := 1
	for n*target < total {
		n *= 2
	}
	for {
		shards := make([][]byte, n)
		over := false
		for _, l := range lines {
			s := int(l.Hash % uint32(n))
			shards[s] = append(shards[s], l.Data...)
			if len(shards[s]) > max {
				over = true
			}
		}
		if !over {
			return shards, nil
		}
		n *= 2
	}
}

// Lines calls fn with each line of a shard that is not blank, trimmed. It
// returns false when the shard could not be read to its end (a line
// longer than MaxShardBytes).
func Lines(data []byte, fn func(line []byte)) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), MaxShardBytes+1)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			fn(line)
		}
	}
	return sc.Err() == nil
}
