package fairshare

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
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

// MaxShardBytes bounds one shard's data: a ConfigMap holds at most 1 MiB
// in all, and the object's metadata needs some of it.
const MaxShardBytes = 1000 * 1024

// TargetShardBytes is how full shards are planned: half a ConfigMap, so
// that the hash's spread never takes one over MaxShardBytes and a shard
// rewritten holds at most about this much.
const TargetShardBytes = 512 * 1024

// Shards encodes recs as JSON lines in n shards, n a power of two at
// least total/target: a record goes to the shard its key hashes to, so
// that a change rewrites only the shards of the keys that changed and
// shards keep their records while n stays. No shard is over max bytes (n
// doubles until none is). Empty recs: one empty shard.
func Shards(recs []Record, target, max int) ([][]byte, error) {
	lines := make([][]byte, len(recs))
	total := 0
	for i := range recs {
		b, err := encodeRecord(&recs[i])
		if err != nil {
			return nil, err
		}
		if len(b) > max {
			return nil, fmt.Errorf("history of %s %q in %s is %d bytes, more than a shard holds", kindName(recs[i].Group), recs[i].Name, recs[i].Queue, len(b))
		}
		lines[i] = b
		total += len(b)
	}
	n := 1
	for n*target < total {
		n *= 2
	}
	for {
		shards := make([][]byte, n)
		over := false
		for i := range recs {
			s := shardOf(recs[i].key(), n)
			shards[s] = append(shards[s], lines[i]...)
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

func kindName(group bool) string {
	if group {
		return "group"
	}
	return "user"
}

// shardOf is the shard of k among n.
func shardOf(k Key, n int) int {
	f := fnv.New32a()
	f.Write([]byte(k.Queue))
	f.Write([]byte{0, boolByte(k.Group), 0})
	f.Write([]byte(k.Name))
	return int(f.Sum32() % uint32(n))
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
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), MaxShardBytes+1)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil || r.Queue == "" || r.Name == "" || !finite(r.Decayed) || !nonNegative(r.Usage) {
			bad++
			continue
		}
		recs = append(recs, r)
	}
	if sc.Err() != nil {
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
