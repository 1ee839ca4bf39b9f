package simulator

import (
	"bytes"
	"container/heap"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/userquota/userquota/pkg/estimate"
)

// The churn trace (testdata/estimates): a closed-loop workload with
// completions, on which the accuracy of wait estimates is measured
// (docs/why-pending.md, "When"). A trace is a fixed list of lines, but a
// pod's completion comes a run time after it is let in, which depends
// on what the quota decides; so the trace is made by driving a replay
// line by line: each pod's release line is written when its run time has
// passed since the replay admitted it. Replaying the file gives the same
// decisions, so `userquotactl simulate --requeue --estimates` on it
// measures what this made. Regenerate with
//
//	go test ./pkg/simulator -run '^TestChurnTrace$' -update
//
// then TestReferenceAccuracy says whether estimate.Reference* must change.

const churnDir = "../../testdata/estimates"

// churnConfig: a batch queue of 32 cpu where each user may use 12, and an
// interactive queue of 8 cpu where the group dev may use 6.
const churnConfig = `# The churn workload's queues (pkg/simulator/churn_test.go): six users
# share root.batch (32 cpu, 128Gi; each user at most 12 cpu, 48Gi); three
# users of group dev share root.interactive (8 cpu; dev at most 6 cpu).
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: batch
            resources:
              max: {vcore: 32, memory: 128Gi}
            limits:
              - limit: each user
                users: ["*"]
                maxresources: {vcore: 12, memory: 48Gi}
          - name: interactive
            resources:
              max: {vcore: 8}
            limits:
              - limit: team
                groups: [dev]
                maxresources: {vcore: 6}
`

// churnHours is how long pods arrive.
const churnHours = 6

// churnPod is one pod of the workload.
type churnPod struct {
	at       time.Duration // arrival, from the start
	name     string
	user     string
	groups   []string
	queue    string
	cpu      int // cores
	memGi    int // 0: none
	priority int32
	run      time.Duration
}

// churnWorkload draws the arrivals: Poisson arrivals whose rate swings
// over a 2-hour period (bursts that outrun the limits, then lulls that
// drain the queues), pod sizes and log-normal run times.
func churnWorkload(seed uint64) []churnPod {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var pods []churnPod
	end := churnHours * time.Hour
	// rate is arrivals per minute at t: mean m, swinging by +-swing.
	arrivals := func(prefix string, m, swing float64, pod func(at time.Duration, name string) churnPod) {
		for t, n := time.Duration(0), 0; ; n++ {
			peak := m + swing // thinning: draw at the peak rate, keep at rate(t)/peak
			t += time.Duration(rng.ExpFloat64() / peak * float64(time.Minute))
			if t >= end {
				return
			}
			rate := m + swing*math.Sin(2*math.Pi*t.Hours()/2)
			if rng.Float64()*peak > rate {
				continue
			}
			pods = append(pods, pod(t.Truncate(time.Second), fmt.Sprintf("%s%04d", prefix, len(pods))))
		}
	}
	logNormal := func(median time.Duration, sigma float64) time.Duration {
		d := time.Duration(float64(median) * math.Exp(sigma*rng.NormFloat64()))
		return max(d.Truncate(time.Second), 10*time.Second)
	}
	arrivals("b", 1.9, 1.2, func(at time.Duration, name string) churnPod {
		p := churnPod{at: at, name: name, user: fmt.Sprintf("u%d", 1+rng.IntN(6)), queue: "root.batch",
			cpu: 1 + rng.IntN(4), run: logNormal(5*time.Minute, 0.8)}
		p.memGi = 2 * p.cpu
		if rng.IntN(10) == 0 {
			p.priority = 10
		}
		return p
	})
	arrivals("i", 2.0, 1.5, func(at time.Duration, name string) churnPod {
		return churnPod{at: at, name: name, user: fmt.Sprintf("d%d", 1+rng.IntN(3)), groups: []string{"dev"},
			queue: "root.interactive", cpu: 1, run: logNormal(2*time.Minute, 0.6)}
	})
	// By arrival, then name: the two streams interleaved.
	sortPods(pods)
	return pods
}

func sortPods(pods []churnPod) {
	for i := 1; i < len(pods); i++ {
		for j := i; j > 0 && (pods[j].at < pods[j-1].at || pods[j].at == pods[j-1].at && pods[j].name < pods[j-1].name); j-- {
			pods[j], pods[j-1] = pods[j-1], pods[j]
		}
	}
}

// due is a release to write: pod name at a time.
type due struct {
	at   time.Duration
	name string
}

type dueHeap []due

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].name < h[j].name
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)   { *h = append(*h, x.(due)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// churnTrace drives a replay of the workload under --requeue and returns
// the trace it wrote.
func churnTrace(t *testing.T, pods []churnPod) []byte {
	t.Helper()
	s, err := newSim([]byte(churnConfig), Options{Requeue: true, Starvation: DefaultStarvation}, discard{})
	if err != nil {
		t.Fatal(err)
	}
	var trace bytes.Buffer
	n := 0
	write := func(v any) {
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		n++
		trace.Write(line)
		trace.WriteByte('\n')
		if err := s.step(n, line); err != nil {
			t.Fatal(err)
		}
	}
	runs := map[string]time.Duration{}
	waiting := map[string]bool{} // allocated, not yet admitted
	var releases dueHeap
	now := time.Duration(0)
	// admitted schedules the release of every pod admitted since the last
	// look, its run time from now.
	admitted := func() {
		for name := range waiting {
			if _, live := s.ledger.Get(name); live {
				delete(waiting, name)
				heap.Push(&releases, due{at: now + runs[name], name: name})
			}
		}
	}
	for i := 0; i < len(pods) || releases.Len() > 0; {
		next := time.Duration(math.MaxInt64)
		if i < len(pods) {
			next = pods[i].at
		}
		if releases.Len() > 0 && releases[0].at < next {
			next = releases[0].at
		}
		if next > now {
			write(map[string]string{"op": "time", "advance": (next - now).String()})
			now = next
		}
		for releases.Len() > 0 && releases[0].at == now {
			write(map[string]string{"op": "release", "pod": heap.Pop(&releases).(due).name})
			admitted()
		}
		for ; i < len(pods) && pods[i].at == now; i++ {
			p := pods[i]
			res := map[string]string{"cpu": fmt.Sprint(p.cpu)}
			if p.memGi > 0 {
				res["memory"] = fmt.Sprintf("%dGi", p.memGi)
			}
			line := map[string]any{"op": "allocate", "pod": p.name, "user": p.user, "queue": p.queue, "resources": res}
			if len(p.groups) > 0 {
				line["groups"] = p.groups
			}
			if p.priority != 0 {
				line["priority"] = p.priority
			}
			runs[p.name] = p.run
			waiting[p.name] = true
			write(line)
			admitted()
		}
	}
	if len(waiting) > 0 {
		t.Fatalf("%d pods never admitted", len(waiting))
	}
	return trace.Bytes()
}

// TestChurnTrace checks that testdata/estimates holds the churn trace
// this code makes (-update writes it).
func TestChurnTrace(t *testing.T) {
	trace := churnTrace(t, churnWorkload(22))
	cfgPath, tracePath := filepath.Join(churnDir, "churn.yaml"), filepath.Join(churnDir, "churn.jsonl")
	if *update {
		if err := os.MkdirAll(churnDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfgPath, []byte(churnConfig), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tracePath, trace, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := mustRead(t, cfgPath); string(got) != churnConfig {
		t.Errorf("%s differs from the churn config: go test ./pkg/simulator -run '^TestChurnTrace$' -update", cfgPath)
	}
	if got := mustRead(t, tracePath); !bytes.Equal(got, trace) {
		t.Errorf("%s differs from the churn trace this code makes: go test ./pkg/simulator -run '^TestChurnTrace$' -update", tracePath)
	}
}

// TestReferenceAccuracy measures the estimates on the churn trace and
// checks estimate.Reference*, which a pod's explanation quotes, against
// it: a change of the estimator (or of the quota decisions) that moves
// the accuracy fails here until the constants and docs/why-pending.md
// say the new numbers.
func TestReferenceAccuracy(t *testing.T) {
	cfg := mustRead(t, filepath.Join(churnDir, "churn.yaml"))
	trace := mustRead(t, filepath.Join(churnDir, "churn.jsonl"))
	compared, p50, p90, err := Reference(cfg, trace, Options{Starvation: DefaultStarvation})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("churn trace: %d estimates compared, absolute error p50 %s, p90 %s", compared, p50, p90)
	if compared != estimate.ReferenceCompared || p50.Round(time.Second) != estimate.ReferenceP50 || p90.Round(time.Second) != estimate.ReferenceP90 {
		t.Errorf("measured %d compared, p50 %s, p90 %s; estimate.Reference* say %d, %s, %s: update them and docs/why-pending.md",
			compared, p50.Round(time.Second), p90.Round(time.Second), estimate.ReferenceCompared, estimate.ReferenceP50, estimate.ReferenceP90)
	}
}
