package fairshare

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/userquota/userquota/pkg/cmshard"
)

// Record is one history as kept across restarts: a JSON line of a shard
// (docs/fairness.md, "Usage history that survives").
type Record struct {
	Queue string `json:"q"`
	Group bool   `json:"g,omitempty"`
	Name  string `json:"n"`
	// At is the time of the history's last event, in Unix milliseconds.
	At int64 `json:"t"`
	// Usage is what ran then (base units by resource name), standing for
	// what runs until the history's next event after a restore.
	Usage map[string]int64 `json:"u,omitempty"`
	// Decayed is the decayed usage as of At, by resource name, to six
	// significant digits.
	Decayed map[string]float64 `json:"h"`
}

func (r *Record) key() Key { return Key{Queue: r.Queue, Group: r.Group, Name: r.Name} }

func (k Key) less(o Key) bool {
	if k.Queue != o.Queue {
		return k.Queue < o.Queue
	}
	if k.Group != o.Group {
		return !k.Group
	}
	return k.Name < o.Name
}

// MaxShardBytes and TargetShardBytes are cmshard's: one shard's data at
// most, and how full shards are planned.
const (
	MaxShardBytes    = cmshard.MaxShardBytes
	TargetShardBytes = cmshard.TargetShardBytes
)

// Shards encodes recs as JSON lines in n shards, n a power of two at
// least total/target: a record goes to the shard its key hashes to, so
// that a change rewrites only the shards of the keys that changed and
// shards keep their records while n stays (cmshard.Shards). No shard is
// over max bytes. Empty recs: one empty shard.
func Shards(recs []Record, target, max int) ([][]byte, error) {
	lines := make([]cmshard.Line, len(recs))
	for i := range recs {
		b, err := encodeRecord(&recs[i])
		if err != nil {
			return nil, err
		}
		lines[i] = cmshard.Line{Hash: shardHash(recs[i].key()), Data: b}
	}
	return cmshard.Shards(lines, target, max, func(i int) string {
		return fmt.Sprintf("history of %s %q in %s", kindName(recs[i].Group), recs[i].Name, recs[i].Queue)
	})
}

func kindName(group bool) string {
	if group {
		return "group"
	}
	return "user"
}

// shardHash is the hash of k that picks its shard.
func shardHash(k Key) uint32 {
	return cmshard.Hash(k.Queue, string([]byte{boolByte(k.Group)}), k.Name)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// encodeRecord is one JSON line, the decayed usage rounded to six
// significant digits (far below the error a failover brings).
func encodeRecord(r *Record) ([]byte, error) {
	out := *r
	out.Decayed = make(map[string]float64, len(r.Decayed))
	for name, x := range r.Decayed {
		out.Decayed[name] = round6(x)
	}
	b, err := json.Marshal(&out)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func round6(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	y, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return y
}

// Decode reads the records of one shard. A line that does not decode is
// skipped and counted in bad: a torn or hand-edited shard loses only its
// bad lines.
func Decode(data []byte) (recs []Record, bad int) {
	ok := cmshard.Lines(data, func(line []byte) {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil || r.Queue == "" || r.Name == "" || !finite(r.Decayed) || !nonNegative(r.Usage) {
			bad++
			return
		}
		recs = append(recs, r)
	})
	if !ok {
		bad++
	}
	return recs, bad
}

func nonNegative(m map[string]int64) bool {
	for _, x := range m {
		if x < 0 {
			return false
		}
	}
	return true
}

func finite(m map[string]float64) bool {
	for _, x := range m {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return false
		}
	}
	return true
}
