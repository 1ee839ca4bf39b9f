package perf

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// recoveryResult is one start of the scheduler over many bound pods.
type recoveryResult struct {
	Profile string `json:"profile"`
	Run     int    `json:"run"`
	Pods    int    `json:"boundPods"`
	// FirstDecision is from the process start to the probe pod seen bound.
	FirstDecision float64 `json:"startToFirstDecisionSeconds"`
	CPU           float64 `json:"schedulerCPUSecondsToFirstDecision"`
	RSS           float64 `json:"rssBytes"`
	HeapInuse     float64 `json:"heapInuseBytes"`
	Charged       float64 `json:"podsChargedRunning"`
}

// TestRecovery creates -recovery-pods pods already bound to nodes (as
// after a scheduler restart: they run, the new scheduler must account
// them), then starts the scheduler -recovery-runs times per profile and
// measures the time from process start to its first decision: a new
// pending pod bound. With UserQuota, PreFilter waits until the plugin has
// charged every bound pod, so the difference to the baseline is the
// plugin's recovery. Memory is read at that moment.
func TestRecovery(t *testing.T) {
	if !*perfFlag || *recoveryPods <= 0 {
		t.Skip("run with -perf and -recovery-pods > 0 (make bench-scheduler)")
	}
	n := *recoveryPods
	// At most 100 bound pods a node (110 fit), so the probe always fits.
	nodes := max(*nodesFlag, (n+99)/100)
	c := newCluster(t, "perf-recovery", nodes)
	w := workload{queueconfigtest.Synthetic{Users: *usersFlag, Queues: *queuesFlag, Groups: *groupsFlag, Levels: *levelsFlag}}
	c.setQueueConfig(w.queueConfig(n, 0))
	created := c.createPods(w, n, func(i int, pod *v1.Pod) { pod.Spec.NodeName = fmt.Sprintf("node-%04d", i%nodes) })
	serverRSS := procRSS(os.Getpid())
	fmt.Printf("created %d bound pods in %.1fs (%.0f pods/s); API server+etcd process RSS %.0f MiB\n", n, created.Seconds(), float64(n)/created.Seconds(), serverRSS/(1<<20))
	env := describeMachine()

	var results []*recoveryResult
	profiles := []profile{baseline, withQuota}
	for run := 0; run < *recoveryRuns; run++ {
		for k := range profiles {
			p := profiles[(run+k)%len(profiles)]
			r := c.recoverOnce(t, w, p, run+1, n)
			results = append(results, r)
			fmt.Printf("recovery run %d %-9s: first decision after %.2fs (CPU %.2fs), RSS %.0f MiB, heap in use %.0f MiB, %.0f pods charged at start",
				run+1, p, r.FirstDecision, r.CPU, r.RSS/(1<<20), r.HeapInuse/(1<<20), r.Charged)
			fmt.Println()
		}
	}
	rep := &report{Machine: env, Flags: flagsLine(), Binary: binary.sum, Recovery: results,
		RecoveryCreate: created.Seconds(), ServerRSS: serverRSS}
	text := rep.recoveryMarkdown()
	fmt.Printf("\n%s\n", text)
	writeOut(t, "recovery.md", text, rep)
	for _, r := range results {
		if r.Profile == string(withQuota) && int(r.Charged) != n {
			t.Errorf("run %d: UserQuota charged %v running pods at start, want %d", r.Run, r.Charged, n)
		}
	}
}

// recoverOnce creates a pending probe pod, starts the scheduler and waits
// until the probe is bound.
func (c *cluster) recoverOnce(t *testing.T, w workload, p profile, run, n int) *recoveryResult {
	t.Helper()
	probe := w.pod(n + run)
	probe.Name = fmt.Sprintf("probe-%d-%s", run, p)
	pods := c.client.CoreV1().Pods(podNamespace)
	if _, err := pods.Create(c.ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := runDir(t, fmt.Sprintf("recovery%d-%s", run, p))
	s := c.startScheduler(p, dir)
	r := &recoveryResult{Profile: string(p), Run: run, Pods: n}
	err := wait.PollUntilContextTimeout(c.ctx, 20*time.Millisecond, *runTimeout, true, func(ctx context.Context) (bool, error) {
		if !s.Running() {
			return false, fmt.Errorf("scheduler exited: %v", s.ExitStatus())
		}
		got, err := pods.Get(ctx, probe.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return got.Spec.NodeName != "", nil
	})
	if err != nil {
		t.Fatalf("recovery run %d %s: probe pod not bound: %v\n%s", run, p, err, s.LogTail(40))
	}
	r.FirstDecision = time.Since(s.StartedAt()).Seconds()
	r.CPU, _ = s.cpuSeconds()
	r.RSS = s.rssBytes()
	_, m, err := s.metrics(c.ctx)
	if err != nil {
		t.Errorf("recovery run %d %s: scraping /metrics: %v", run, p, err)
	} else {
		r.HeapInuse = m.sum("go_memstats_heap_inuse_bytes", nil)
		r.Charged = m.sum("userquota_increases_total", map[string]string{"source": "running"})
	}
	s.stop()
	if err := pods.Delete(c.ctx, probe.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(c.ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, probe.Name, metav1.GetOptions{})
		return err != nil, nil
	})
	if err != nil {
		t.Fatalf("probe pod not deleted: %v", err)
	}
	return r
}

func (rep *report) recoveryMarkdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s.\n\nFlags: `%s`; scheduler binary sha256 %s.\n\n", rep.Machine, rep.Flags, rep.Binary)
	if len(rep.Recovery) > 0 {
		fmt.Fprintf(&b, "%d bound pods created in %.0f s; the API server+etcd process then held %.0f MiB (RSS).\n\n",
			rep.Recovery[0].Pods, rep.RecoveryCreate, rep.ServerRSS/(1<<20))
	}
	b.WriteString("| profile | starts | bound pods in the API server | start → first decision s | scheduler CPU s to it | RSS MiB | heap in use MiB | pods UserQuota charged at start |\n|---|---|---|---|---|---|---|---|\n")
	for _, p := range []profile{baseline, withQuota} {
		var first, cpu, rss, heap, charged []float64
		pods := 0
		for _, r := range rep.Recovery {
			if r.Profile != string(p) {
				continue
			}
			pods = r.Pods
			first = append(first, r.FirstDecision)
			cpu = append(cpu, r.CPU)
			rss = append(rss, r.RSS/(1<<20))
			heap = append(heap, r.HeapInuse/(1<<20))
			charged = append(charged, r.Charged)
		}
		if len(first) == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %s |\n", p, len(first), pods,
			spread(first, "%.1f"), spread(cpu, "%.1f"), spread(rss, "%.0f"), spread(heap, "%.0f"), spread(charged, "%.0f"))
	}
	return b.String()
}
