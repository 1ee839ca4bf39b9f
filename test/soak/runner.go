package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/userquota/userquota/pkg/ugm"
	"github.com/userquota/userquota/test/internal/controlplane"
)

func nprocs() int { return runtime.NumCPU() }

// runner drives one soak run.
type runner struct {
	o *options
	c *cluster
	h *history
	w *workload
	// rng is the main loop's (the plan, the faults); cfgRng the config
	// changer's (rand.Rand is not safe for concurrent use).
	rng, cfgRng *rand.Rand

	logFile *os.File
	logMu   sync.Mutex

	violation   atomic.Pointer[string]
	interrupted atomic.Bool
	cancel      func()

	// disturbed > 0 while a fault is under way; calmFrom is when waits
	// count again.
	disturbed atomic.Int32
	calmFrom  atomic.Int64

	figMu   sync.Mutex
	fig     figures
	version int
}

func newRunner(o *options) *runner {
	return &runner{o: o, rng: rand.New(rand.NewSource(o.seed)), cfgRng: rand.New(rand.NewSource(o.seed + 2))}
}

func (r *runner) logf(format string, a ...any) {
	line := fmt.Sprintf("%s soak: %s", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Println(line)
	if r.logFile != nil {
		fmt.Fprintln(r.logFile, line)
	}
}

// violate records the first violation and stops the run.
func (r *runner) violate(msg string) {
	if r.violation.CompareAndSwap(nil, &msg) {
		r.logf("VIOLATION: %s", msg)
		if r.cancel != nil {
			r.cancel()
		}
	}
}

func (r *runner) disturb() { r.disturbed.Add(1) }

func (r *runner) undisturb() {
	r.calmFrom.Store(time.Now().Add(r.o.calmGrace).UnixNano())
	r.disturbed.Add(-1)
}

func (r *runner) run(ctx context.Context, cancel func()) int {
	r.cancel = cancel
	o := r.o
	var err error
	if r.logFile, err = os.Create(filepath.Join(o.out, "soak.log")); err != nil {
		fail("%v", err)
	}
	defer r.logFile.Close()
	r.fig.Command = strings.Join(os.Args, " ")
	r.fig.Machine = machine()
	r.fig.Seed = o.seed
	r.fig.Started = time.Now()
	r.fig.LoadStart = loadavg()
	r.fig.Targets = fmt.Sprintf("%d lifecycles, %d kills, %d API server restarts, %d no-scheduler windows, %d follower freezes", o.lifecycles, o.kills, o.apiRestarts, o.noScheduler, o.freezes)
	r.logf("seed %d, out %s; %s; %s", o.seed, o.out, r.fig.Targets, r.fig.Machine)

	// Run a copy of the scheduler binary: a `make build` elsewhere during
	// a long run must not change the binary restarts execute.
	copyPath := filepath.Join(o.out, "userquota-scheduler")
	sum, err := controlplane.CopyBinary(o.schedulerBin, copyPath)
	if err != nil {
		fail("%v", err)
	}
	o.schedulerBin = copyPath
	r.fig.Binary = fmt.Sprintf("bin/userquota-scheduler (sha256 %s)", sum)
	r.fig.Source = sourceVersion(o.repoRoot)
	r.logf("scheduler: %s; source: %s", r.fig.Binary, r.fig.Source)

	first := r.nextConfig()
	r.h = newHistory(first, r.violate)
	r.h.explainWait = r.explainWait
	r.h.askBehind = r.behindClaim
	r.h.addVersion(first)
	switch o.selftest {
	case "":
	case "bind":
		r.h.skew = func(c *qconfig) *qconfig { return c.adjusted(-1) }
	case "wait":
		r.h.skew = func(c *qconfig) *qconfig { return c.adjusted(2) }
	case "drift", "tree":
	default:
		fail("-selftest: want drift, tree, bind or wait")
	}
	if o.selftest != "" {
		r.logf("SELF-TEST %q: the checks get wrong data on purpose; this run must fail", o.selftest)
	}
	if r.c, err = newCluster(o, o.out); err != nil {
		fail("%v", err)
	}
	code := r.drive(ctx, first)
	cancel()
	r.c.stopAll()
	r.fig.Ended = time.Now()
	r.fig.LoadEnd = loadavg()
	r.finishFigures()
	report := r.fig.markdown(o)
	fmt.Println()
	fmt.Println(report)
	_ = os.WriteFile(filepath.Join(o.out, "report.md"), []byte(report), 0o644)
	if b, err := json.MarshalIndent(r.fig, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(o.out, "report.json"), b, 0o644)
	}
	if o.report != "" {
		_ = os.WriteFile(o.report, []byte(report), 0o644)
	}
	r.logf("logs and report in %s", o.out)
	return code
}

// nextConfig draws the next config version and checks the scheduler will
// take it.
func (r *runner) nextConfig() *qconfig {
	r.version++
	var err error
	for try := 0; try < 100; try++ {
		cfg := newConfig(r.cfgRng, r.version, r.o.users, r.o.groups, vipUsers())
		if err = cfg.validate(); err == nil {
			return cfg
		}
	}
	fail("generated queue config %d is invalid (a harness bug): %v", r.version, err)
	return nil
}

func (r *runner) drive(ctx context.Context, first *qconfig) int {
	o := r.o
	r.logf("starting the control plane")
	t0 := time.Now()
	if err := r.c.start(ctx, first); err != nil {
		r.logf("bring-up failed: %v", err)
		r.fig.Violation = "bring-up failed: " + err.Error()
		return 2
	}
	r.logf("control plane, %d nodes and %d scheduler replicas up in %.1fs", o.nodes, o.replicas, time.Since(t0).Seconds())
	ready := make(chan struct{})
	go func() {
		if err := r.h.run(ctx, r.c.etcdURL, ready); err != nil && ctx.Err() == nil {
			r.violate("the etcd history failed (harness): " + err.Error())
		}
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		return r.exitCode()
	}
	r.h.mu.Lock()
	r.h.versions[0].applied = time.Now()
	r.h.mu.Unlock()
	r.w = newWorkload(o, r.c, r.h, o.seed+1)
	r.w.run(ctx)
	go r.supervise(ctx)
	go r.checkWaits(ctx)
	go r.changeConfigs(ctx)

	plan := makePlan(o, r.rng)
	r.logf("plan: %d cycles, each ending in a quiet check", len(plan))
	deadline := time.Time{}
	if o.duration > 0 {
		deadline = time.Now().Add(o.duration)
	}
	lastProgress, lastCount := time.Now(), 0
	for i, cyc := range plan {
		next := 0
		for {
			if ctx.Err() != nil {
				return r.exitCode()
			}
			n := r.h.counters().lifecycles
			if n != lastCount {
				lastProgress, lastCount = time.Now(), n
			}
			if time.Since(lastProgress) > 3*time.Minute {
				r.violate(fmt.Sprintf("no pod lifecycle completed for 3 minutes (stuck at %d)", n))
				return r.exitCode()
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				r.logf("-duration %s reached in cycle %d/%d: final quiet check", o.duration, i+1, len(plan))
				r.fig.StoppedByDuration = true
				r.quiet(ctx, "final", nil)
				return r.exitCode()
			}
			for next < len(cyc.faults) && cyc.faults[next].at <= n && !cyc.faults[next].last {
				r.fault(ctx, cyc.faults[next].kind)
				next++
			}
			if n >= cyc.end && next == len(cyc.faults)-1 && cyc.faults[next].last {
				end := r.fault(ctx, cyc.faults[next].kind)
				next++
				if ctx.Err() == nil {
					r.quiet(ctx, fmt.Sprintf("cycle %d/%d, right after: %s", i+1, len(plan), cyc.faults[next-1].kind), &end)
				}
				break
			}
			if n >= cyc.end && next == len(cyc.faults) {
				name := fmt.Sprintf("cycle %d/%d", i+1, len(plan))
				if i == len(plan)-1 {
					name = "final"
				}
				r.quiet(ctx, name, nil)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if r.violation.Load() != nil {
			return r.exitCode()
		}
		c := r.h.counters()
		r.logf("cycle %d/%d done: %d lifecycles, %d pods created, %d refused at least once, %d held by a quota tree's node", i+1, len(plan), c.lifecycles, c.created, c.refusedPods, c.treeHeld)
	}
	// The trees must have been tight enough to hold pods, or the run did
	// not test holds and let-ins on them.
	if c := r.h.counters(); o.selftest == "" && c.treeHeld == 0 {
		r.violate(fmt.Sprintf("no pod was held by a quota tree's node in %d lifecycles: the soak's trees (forest.go) are too loose to test the forest's holds", c.lifecycles))
	}
	return r.exitCode()
}

func (r *runner) exitCode() int {
	if v := r.violation.Load(); v != nil {
		r.fig.Violation = *v
		return 1
	}
	if r.interrupted.Load() {
		r.fig.Violation = "interrupted"
		return 130
	}
	if r.fig.StoppedByDuration {
		return 3
	}
	return 0
}

// faultEnd is when a fault's restart completed: the process started (API
// server ready; scheduler started) or, for a failover, the kill.
type faultEnd struct {
	kind faultKind
	at   time.Time
}

func (r *runner) fault(ctx context.Context, k faultKind) faultEnd {
	r.disturb()
	defer r.undisturb()
	switch k {
	case faultKill:
		return r.killLeader(ctx)
	case faultAPIServer:
		return r.restartAPIServer(ctx)
	case faultFreeze:
		return r.freezeFollower(ctx)
	default:
		return r.noSchedulerWindow(ctx)
	}
}

func (r *runner) sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (r *runner) killLeader(ctx context.Context) faultEnd {
	l, err := r.c.waitLeader(ctx, 2*time.Minute)
	if err != nil {
		r.violate("before a kill: " + err.Error())
		return faultEnd{kind: faultKill, at: time.Now()}
	}
	t0 := time.Now()
	l.Kill()
	r.figMu.Lock()
	r.fig.Kills++
	r.figMu.Unlock()
	r.logf("SIGKILL scheduler-%s (the leader)", l.slot)
	if len(r.c.replicas) > 1 {
		nl, err := r.c.waitLeader(ctx, 2*time.Minute)
		if err != nil {
			r.violate("after killing the leader, no other replica took over: " + err.Error())
			return faultEnd{kind: faultKill, at: t0}
		}
		d := time.Since(t0)
		r.figMu.Lock()
		r.fig.Failovers++
		r.fig.FailoverSeconds = append(r.fig.FailoverSeconds, d.Seconds())
		r.figMu.Unlock()
		r.logf("scheduler-%s took over in %.1fs", nl.slot, d.Seconds())
		r.sleep(ctx, time.Duration(r.rng.Intn(3000))*time.Millisecond)
		r.startReplica(l)
		return faultEnd{kind: faultKill, at: t0}
	}
	r.sleep(ctx, time.Duration(r.rng.Intn(3000))*time.Millisecond)
	start := time.Now()
	r.startReplica(l)
	if _, err := r.c.waitLeader(ctx, 2*time.Minute); err != nil {
		r.violate("the restarted scheduler did not lead: " + err.Error())
	}
	return faultEnd{kind: faultKill, at: start}
}

// freezeFollower stops the follower (SIGSTOP) for 5-15 s while the
// workload goes on, then lets it run again: its watches stall, the API
// server drops them, and it resumes or relists. As the follower it must
// still track usage exactly (the quiet check compares it too), and it may
// lead after the next kill.
func (r *runner) freezeFollower(ctx context.Context) faultEnd {
	var f *replica
	for _, rep := range r.c.replicas {
		if rep.Running() && !rep.leading() {
			f = rep
		}
	}
	if f == nil {
		r.logf("no follower to freeze")
		return faultEnd{kind: faultFreeze, at: time.Now()}
	}
	d := time.Duration(5000+r.rng.Intn(10000)) * time.Millisecond
	if err := f.Signal(syscall.SIGSTOP); err != nil {
		r.logf("SIGSTOP scheduler-%s: %v", f.slot, err)
		return faultEnd{kind: faultFreeze, at: time.Now()}
	}
	r.logf("SIGSTOP scheduler-%s (the follower) for %.1fs", f.slot, d.Seconds())
	r.sleep(ctx, d)
	_ = f.Signal(syscall.SIGCONT)
	r.figMu.Lock()
	r.fig.Freezes++
	r.figMu.Unlock()
	return faultEnd{kind: faultFreeze, at: time.Now()}
}

func (r *runner) startReplica(rep *replica) {
	if err := r.c.startReplica(rep); err != nil {
		r.violate("starting a scheduler: " + err.Error())
		return
	}
	r.figMu.Lock()
	r.fig.SchedulerStarts++
	r.figMu.Unlock()
}

func (r *runner) restartAPIServer(ctx context.Context) faultEnd {
	r.figMu.Lock()
	graceful := r.fig.APIRestarts%2 == 0
	r.figMu.Unlock()
	t0 := time.Now()
	how := "SIGKILL"
	if graceful {
		// kube-apiserver stops listening at once but waits for its
		// watches to drain; like a kubelet, give it a grace period.
		how = "SIGTERM"
		r.c.apiserver.Stop(10 * time.Second)
	} else {
		r.c.apiserver.Kill()
	}
	r.logf("kube-apiserver stopped (%s)", how)
	r.sleep(ctx, time.Duration(r.rng.Intn(2000))*time.Millisecond)
	if err := r.c.startAPIServer(ctx); err != nil {
		r.violate("restarting kube-apiserver: " + err.Error())
		return faultEnd{kind: faultAPIServer, at: time.Now()}
	}
	ready := time.Now()
	down := ready.Sub(t0)
	r.figMu.Lock()
	r.fig.APIRestarts++
	r.fig.APIDownSeconds = append(r.fig.APIDownSeconds, down.Seconds())
	r.figMu.Unlock()
	r.logf("kube-apiserver ready again after %.1fs (%s)", down.Seconds(), how)
	if _, err := r.c.waitLeader(ctx, 2*time.Minute); err != nil {
		r.violate("after the API server restart: " + err.Error())
	}
	return faultEnd{kind: faultAPIServer, at: ready}
}

func (r *runner) noSchedulerWindow(ctx context.Context) faultEnd {
	for _, rep := range r.c.replicas {
		rep.Kill()
	}
	r.h.setNoScheduler(true)
	r.logf("every scheduler replica killed")
	n := r.w.deleteSome(ctx, 0.3)
	r.sleep(ctx, time.Duration(3000+r.rng.Intn(3000))*time.Millisecond)
	r.h.setNoScheduler(false)
	start := time.Now()
	for _, rep := range r.c.replicas {
		r.startReplica(rep)
	}
	r.figMu.Lock()
	r.fig.NoSchedulerWindows++
	r.fig.DeletedNoScheduler += n
	r.figMu.Unlock()
	r.logf("deleted %d bound pods with no scheduler running; replicas started again", n)
	if _, err := r.c.waitLeader(ctx, 2*time.Minute); err != nil {
		r.violate("after the no-scheduler window: " + err.Error())
	}
	return faultEnd{kind: faultNoScheduler, at: start}
}

// supervise restarts any process that exits without the harness asking:
// a scheduler that lost its Lease (kube-scheduler exits then, e.g. while
// the API server restarts), the controllers, kwok.
func (r *runner) supervise(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, rep := range r.c.replicas {
			if !rep.ExitedUnexpectedly() {
				continue
			}
			tail := rep.LogTail(40)
			why := "exited: " + rep.ExitStatus()
			if strings.Contains(strings.ToLower(tail), "leaderelection lost") {
				why = "lost the Lease (" + rep.ExitStatus() + ")"
			}
			r.logf("scheduler-%s %s; starting it again", rep.slot, why)
			r.figMu.Lock()
			r.fig.UnplannedExits++
			r.fig.UnplannedExitReasons = append(r.fig.UnplannedExitReasons, why)
			r.figMu.Unlock()
			r.calmFrom.Store(time.Now().Add(r.o.calmGrace).UnixNano())
			r.startReplica(rep)
		}
		for _, p := range []*controlplane.Process{r.c.kcm, r.c.kwok, r.c.apiserver} {
			if p.ExitedUnexpectedly() {
				r.logf("%s exited unexpectedly (%s):\n%s", p.Name, p.ExitStatus(), p.LogTail(20))
				if p == r.c.apiserver {
					r.violate("kube-apiserver exited on its own")
					return
				}
				r.figMu.Lock()
				r.fig.OtherRestarts++
				r.figMu.Unlock()
				_ = p.Start()
			}
		}
	}
}

// checkWaits runs the wait invariant every 250 ms.
func (r *runner) checkWaits(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		if r.disturbed.Load() > 0 || r.c.leader() == nil || !r.c.apiserver.Running() {
			r.calmFrom.Store(now.Add(r.o.calmGrace).UnixNano())
		}
		r.h.checkWaits(now, time.Unix(0, r.calmFrom.Load()), r.o.maxWait)
	}
}

// changeConfigs writes a new queue config version now and then.
func (r *runner) changeConfigs(ctx context.Context) {
	for {
		d := time.Duration(float64(r.o.configEvery) * (0.5 + r.cfgRng.Float64()))
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		r.w.act(func() {
			cfg := r.nextConfig()
			v := r.h.addVersion(cfg)
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			data := cfg.data()
			if err := controlplane.SetConfigData(cctx, r.c.client, systemNamespace, data); err != nil {
				// Unknown outcome: keep the version only if it got in.
				cm, gerr := r.c.client.CoreV1().ConfigMaps(systemNamespace).Get(cctx, controlplane.QueueConfigMap, metav1.GetOptions{})
				if gerr != nil || !maps.Equal(cm.Data, data) {
					r.h.dropVersion(v)
					return
				}
			}
			r.figMu.Lock()
			r.fig.ConfigChanges++
			r.figMu.Unlock()
			go r.watchApplied(ctx, v)
		})
	}
}

// watchApplied marks a version applied once every running replica serves
// it on /ws/v1/config.
func (r *runner) watchApplied(ctx context.Context, v *cfgVersion) {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		all, any := true, false
		for _, rep := range r.c.replicas {
			if !rep.Running() {
				continue
			}
			code, body, err := r.c.restGet(rep, "/ws/v1/config")
			var got struct {
				Checksum string `json:"checksum"`
			}
			if err != nil || code != http.StatusOK || json.Unmarshal(body, &got) != nil || got.Checksum != v.cfg.sum {
				all = false
				break
			}
			any = true
		}
		if all && any {
			r.h.setApplied(v, time.Now())
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// usageOf reads a replica's usage: users, groups, queues.
func (r *runner) usageOf(rep *replica) (snap, error) {
	var users []ugm.UserUsage
	var groups []ugm.GroupUsage
	var queues ugm.QueueUsage
	for _, x := range []struct {
		path string
		into any
	}{{"users", &users}, {"groups", &groups}, {"queues", &queues}} {
		// ?local=true: each replica's own usage, the follower's too.
		code, body, err := r.c.restGet(rep, "/ws/v1/partition/default/usage/"+x.path+"?local=true")
		if err != nil {
			return snap{}, err
		}
		if code != http.StatusOK {
			return snap{}, fmt.Errorf("GET usage/%s: %d %.200s", x.path, code, body)
		}
		if err := json.Unmarshal(body, x.into); err != nil {
			return snap{}, fmt.Errorf("GET usage/%s: %v", x.path, err)
		}
	}
	s := restSnap(users, groups, &queues)
	code, body, err := r.c.restGet(rep, "/ws/v1/partition/default/trees?local=true")
	if err != nil {
		return snap{}, err
	}
	if code != http.StatusOK {
		return snap{}, fmt.Errorf("GET trees: %d %.200s", code, body)
	}
	if err := addRESTTrees(s, body); err != nil {
		return snap{}, fmt.Errorf("GET trees: %v", err)
	}
	return s, nil
}

// apiModel recomputes usage from a list of every pod from the API server.
func (r *runner) apiModel(ctx context.Context) (*usageModel, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := r.c.client.CoreV1().Pods("").List(cctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	r.h.mu.Lock()
	m := newUsageModel(r.h.current())
	r.h.mu.Unlock()
	skipped := r.o.selftest != "drift"
	treeSkipped := r.o.selftest != "tree"
	for i := range list.Items {
		if chargedNow(&list.Items[i]) {
			if !skipped {
				skipped = true // self-test: miss one pod
				continue
			}
			c := chargeOf(&list.Items[i])
			if !treeSkipped && len(c.trees) > 0 {
				treeSkipped = true // self-test: miss one pod's tree charges
				c.trees = nil
			}
			m.charge(c)
		}
	}
	m.reserve(list.Items)
	return m, nil
}

// quiet stops the workload and kwok, waits until the leader's usage equals
// the usage recomputed from the API server's pods, checks the follower and
// the limits, and starts them again. after is the fault right before it.
func (r *runner) quiet(ctx context.Context, name string, after *faultEnd) {
	t0 := time.Now()
	r.w.pause()
	defer r.w.resume()
	r.c.kwok.Stop(10 * time.Second)
	defer func() {
		if ctx.Err() == nil {
			if err := r.c.kwok.Start(); err != nil {
				r.violate("starting kwok: " + err.Error())
			}
		}
	}()
	r.logf("quiet check (%s): workload and kwok stopped", name)
	var lines, hlines, apps []string
	var entries, hentries int
	var maxPods int64
	first := -1
	for {
		if ctx.Err() != nil {
			return
		}
		// Each round reads the leader, the API server and the history
		// afresh: the scheduler may still bind a pod it (rightly) finds
		// room for.
		l := r.c.leader()
		if l != nil {
			s, err := r.usageOf(l)
			m, merr := r.apiModel(ctx)
			if err == nil && merr == nil {
				ms := m.snap()
				lines, entries, maxPods = diff(s, ms)
				apps = driftApps(s, ms)
				if first < 0 {
					first = entries
				}
				hs, _ := r.h.modelSnap()
				// The history keeps no reservations: usage only.
				hlines, hentries, _ = diff(hs, withoutReserved(m.snap()))
				if entries == 0 && hentries == 0 && len(r.h.fittingPending()) == 0 {
					// Exact: confirm on a second read (nothing moved).
					s2, err2 := r.usageOf(l)
					m2, merr2 := r.apiModel(ctx)
					if err2 == nil && merr2 == nil {
						if _, e2, _ := diff(s2, m2.snap()); e2 == 0 {
							r.settled(ctx, name, t0, after, first, l, m2)
							return
						}
					}
				}
			}
		}
		if time.Since(t0) > r.o.settleTimeout {
			if entries == 0 && hentries > 0 {
				r.violate(fmt.Sprintf("quiet check %s: the etcd history disagrees with the API server's pods (a harness bug; history first):\n  %s",
					name, strings.Join(hlines, "\n  ")))
				return
			}
			r.figMu.Lock()
			if entries > r.fig.MaxDriftAfterSettle {
				r.fig.MaxDriftAfterSettle, r.fig.MaxDriftPodsAfterSettle = entries, maxPods
			}
			r.figMu.Unlock()
			who := "no leader"
			if l != nil {
				who = "scheduler-" + l.slot
			}
			fitting := r.h.fittingPending()
			msg := fmt.Sprintf("quiet check %s: after %s the leader's usage (%s) still differs from the usage recomputed from the API server's pods on %d entries (largest: %d pods):\n  %s\n  pending pods that fit: %v%s\nthe pods of the applications in question (etcd history):\n%s%s",
				name, r.o.settleTimeout, who, entries, maxPods, strings.Join(lines, "\n  "), fitting, r.explainPending(fitting), r.h.explain(apps), r.h.explainTrees(lines))
			r.violate(msg)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (r *runner) settled(ctx context.Context, name string, t0 time.Time, after *faultEnd, first int, l *replica, m *usageModel) {
	now := time.Now()
	r.figMu.Lock()
	r.fig.QuietChecks++
	r.fig.SettleSeconds = append(r.fig.SettleSeconds, now.Sub(t0).Seconds())
	if first > r.fig.MaxDriftAtQuietStart {
		r.fig.MaxDriftAtQuietStart = first
	}
	if after != nil {
		r.fig.SettleAfterRestart = append(r.fig.SettleAfterRestart, restartSettle{Kind: after.kind.String(), Seconds: now.Sub(after.at).Seconds()})
	}
	r.figMu.Unlock()
	// No user, group or queue above a limit that was in force.
	_, oldest := r.h.modelSnap()
	if why := r.h.staticCheck(m, oldest); why != "" {
		r.violate(fmt.Sprintf("quiet check %s: %s", name, why))
		return
	}
	// The follower's usage (it tracks usage from its informers; a failover
	// makes it the leader) must be exact too.
	for _, rep := range r.c.replicas {
		if rep == l || !rep.Running() {
			continue
		}
		var lines []string
		var apps []string
		exact := false
		for i := 0; i < 60 && !exact && ctx.Err() == nil; i++ {
			s, err := r.usageOf(rep)
			fm, merr := r.apiModel(ctx)
			if err == nil && merr == nil {
				var e int
				// Usage only: a follower's scheduling queue runs PreEnqueue
				// too, so it reserves for gangs whose pods it admits but
				// never binds (only the leader schedules); its
				// reservations are its own decisions, not the cluster's.
				s, ms := withoutReserved(s), withoutReserved(fm.snap())
				lines, e, _ = diff(s, ms)
				exact = e == 0
				apps = driftApps(s, ms)
			}
			if !exact {
				time.Sleep(250 * time.Millisecond)
			}
		}
		if !exact {
			r.violate(fmt.Sprintf("quiet check %s: the follower scheduler-%s (process started %s) usage differs from the usage recomputed from the API server's pods:\n  %s\nthe pods of the applications in question (etcd history):\n%s%s",
				name, rep.slot, rep.StartedAt().Format("15:04:05.000"), strings.Join(lines, "\n  "), r.h.explain(apps), r.h.explainTrees(lines)))
			return
		}
	}
	c := r.h.counters()
	extra := ""
	if after != nil {
		extra = fmt.Sprintf(", %.1fs after the restart (%s)", now.Sub(after.at).Seconds(), after.kind)
	}
	r.logf("quiet check %s passed: usage exact in %.1fs%s (%d entries differed at first); %d users, %d groups with usage; %d lifecycles so far",
		name, now.Sub(t0).Seconds(), extra, first, len(m.users), len(m.groups), c.lifecycles)
}

type restartSettle struct {
	Kind    string  `json:"kind"`
	Seconds float64 `json:"seconds"`
}

// figures are what a run reports.
type figures struct {
	Command, Machine, Targets string
	Binary, Source            string
	Seed                      int64
	Started, Ended            time.Time
	LoadStart, LoadEnd        string
	StoppedByDuration         bool

	Created, Bound, Lifecycles, Succeeded, Failed int
	DeletedBound, DeletedPending, Refused         int
	JobsCreated, DeploymentScales, Rollouts       int64
	GangJobsCreated                               int64
	GangFirstBinds, GangsWhole                    int
	StatefulSetDeletes                            int64
	Submitted, CreateErrors, DeletesSent          int64
	ConfigChanges                                 int

	Kills, Failovers     int
	FailoverSeconds      []float64
	SchedulerStarts      int
	UnplannedExits       int
	AuditRepairs         []string
	UnplannedExitReasons []string
	OtherRestarts        int
	APIRestarts          int
	APIDownSeconds       []float64
	NoSchedulerWindows   int
	DeletedNoScheduler   int
	Freezes              int

	QuietChecks             int
	MaxDriftAfterSettle     int
	MaxDriftPodsAfterSettle int64
	MaxDriftAtQuietStart    int
	SettleSeconds           []float64
	SettleAfterRestart      []restartSettle
	BindChecks              int
	LongestFitWaitSeconds   float64
	LongestFitWaitPod       string
	HeldBehind              int
	ClaimsAsked             int
	ClaimsExcused           int
	HistoryEvents           int
	HistoryResyncs          int
	TreeBound, TreeHeld     int

	Violation string
}

func (r *runner) finishFigures() {
	if r.h == nil {
		return
	}
	c := r.h.counters()
	f := &r.fig
	f.Created, f.Bound, f.Lifecycles, f.Succeeded, f.Failed = c.created, c.bound, c.lifecycles, c.succeeded, c.failed
	f.DeletedBound, f.DeletedPending, f.Refused = c.deletedBound, c.deletedPending, c.refusedPods
	f.BindChecks, f.LongestFitWaitSeconds, f.LongestFitWaitPod = c.bindChecks, c.longestFitWait.Seconds(), c.longestFitWaitPod
	f.HeldBehind, f.ClaimsAsked, f.ClaimsExcused = c.heldBehind, c.claimsAsked, c.claimsExcused
	f.GangFirstBinds, f.GangsWhole = c.gangFirstBinds, c.gangsWhole
	f.HistoryEvents, f.HistoryResyncs = c.historyEvents, c.historyResyncs
	f.TreeBound, f.TreeHeld = c.treeBound, c.treeHeld
	if r.c != nil {
		f.AuditRepairs = r.c.audits.all()
	}
	if r.w != nil {
		f.JobsCreated, f.DeploymentScales, f.Rollouts = r.w.jobsMade.Load(), r.w.scales.Load(), r.w.rollouts.Load()
		f.StatefulSetDeletes = r.w.stsDeletes.Load()
		f.GangJobsCreated = r.w.gangJobsMade.Load()
		f.Submitted, f.CreateErrors, f.DeletesSent = r.w.submitted.Load(), r.w.createErrs.Load(), r.w.deletesSent.Load()
	}
	if v := r.violation.Load(); v != nil {
		f.Violation = *v
	}
}

func stats(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return fmt.Sprintf("median %.1fs, max %.1fs (n=%d)", s[(len(s)-1)/2], s[len(s)-1], len(s))
}

func (f *figures) markdown(o *options) string {
	var b strings.Builder
	verdict := "PASS"
	switch {
	case f.Violation != "":
		verdict = "FAIL"
	case f.StoppedByDuration:
		verdict = "INCOMPLETE (stopped by -duration before the targets)"
	}
	var after []float64
	byKind := map[string][]float64{}
	for _, s := range f.SettleAfterRestart {
		after = append(after, s.Seconds)
		byKind[s.Kind] = append(byKind[s.Kind], s.Seconds)
	}
	fmt.Fprintf(&b, "## Soak run: %s\n\n", verdict)
	fmt.Fprintf(&b, "- command: `%s`\n", f.Command)
	fmt.Fprintf(&b, "- machine: %s; load average at start %s, at end %s\n", f.Machine, f.LoadStart, f.LoadEnd)
	fmt.Fprintf(&b, "- started %s, wall time %s, seed %d\n", f.Started.Format(time.RFC3339), f.Ended.Sub(f.Started).Round(time.Second), f.Seed)
	fmt.Fprintf(&b, "- targets: %s\n", f.Targets)
	fmt.Fprintf(&b, "- scheduler: %s, built from %s\n\n", f.Binary, f.Source)
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	row := func(k string, v any) { fmt.Fprintf(&b, "| %s | %v |\n", k, v) }
	row("pod lifecycles (bound, then released by completion or deletion)", f.Lifecycles)
	row("lifecycles per second (whole run, quiet checks and faults included)", fmt.Sprintf("%.1f", float64(f.Lifecycles)/f.Ended.Sub(f.Started).Seconds()))
	row("pods created / bound", fmt.Sprintf("%d / %d", f.Created, f.Bound))
	row("pods refused at least once (quota)", fmt.Sprintf("%d (%.0f%% of created)", f.Refused, pct(f.Refused, f.Created)))
	row("ended: Succeeded / Failed (kwok) / deleted while bound / deleted while pending", fmt.Sprintf("%d / %d / %d / %d", f.Succeeded, f.Failed, f.DeletedBound, f.DeletedPending))
	row("Jobs created; Deployment scalings; rollouts", fmt.Sprintf("%d; %d; %d", f.JobsCreated, f.DeploymentScales, f.Rollouts))
	row("StatefulSet pods deleted and created again under their name", fmt.Sprint(f.StatefulSetDeletes))
	row("gang Jobs created; gangs whose first pod bound (its whole minimum checked); gangs that ran their whole minimum", fmt.Sprintf("%d; %d; %d", f.GangJobsCreated, f.GangFirstBinds, f.GangsWhole))
	row("queue config changes (each with new quota tree quotas)", f.ConfigChanges)
	row("bindings of pods naming a quota tree node; pods held by a tree's node at least once", fmt.Sprintf("%d; %d", f.TreeBound, f.TreeHeld))
	row("SIGKILLs of the leading scheduler", f.Kills)
	row("failovers to the other replica (time from the kill)", fmt.Sprintf("%d (%s)", f.Failovers, stats(f.FailoverSeconds)))
	row("kube-apiserver restarts (SIGTERM/SIGKILL alternately; down time)", fmt.Sprintf("%d (%s)", f.APIRestarts, stats(f.APIDownSeconds)))
	row("windows with no scheduler running; bound pods deleted in them", fmt.Sprintf("%d; %d", f.NoSchedulerWindows, f.DeletedNoScheduler))
	row("follower frozen (SIGSTOP 5-15 s, then SIGCONT)", f.Freezes)
	row("scheduler exits the harness did not cause (restarted)", fmt.Sprintf("%d %s", f.UnplannedExits, summarize(f.UnplannedExitReasons)))
	row("audit repairs (charges a lost informer event left wrong; the scheduler's audit fixed them)", fmt.Sprint(len(f.AuditRepairs)))
	row("quiet checks passed (usage exact: leader and follower vs API server)", f.QuietChecks)
	row("**largest drift after settling** (entries differing; pods)", fmt.Sprintf("**%d; %d**", f.MaxDriftAfterSettle, f.MaxDriftPodsAfterSettle))
	row("entries differing at the first read of a quiet check (in-flight, before settling)", f.MaxDriftAtQuietStart)
	row("time to settle after a quiet period begins", stats(f.SettleSeconds))
	row("time to settle after a restart (fault right before a quiet check)", stats(after))
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		row("&nbsp;&nbsp;after: "+k, stats(byKind[k]))
	}
	row("bindings checked against the limits in force (etcd history)", f.BindChecks)
	row("longest wait of a pod that fitted (outside fault windows)", fmt.Sprintf("%.1fs (limit %s)", f.LongestFitWaitSeconds, o.maxWait))
	row("pods that fitted but were kept behind a pod held longer than the starvation wait (not counted as waits)", f.HeldBehind)
	row("waits past the limit the leader was asked about; of them, excused as kept behind a starving pod", fmt.Sprintf("%d; %d", f.ClaimsAsked, f.ClaimsExcused))
	row("etcd history events replayed; resyncs", fmt.Sprintf("%d; %d", f.HistoryEvents, f.HistoryResyncs))
	if len(f.AuditRepairs) > 0 {
		fmt.Fprintf(&b, "\nAudit repairs (each a lost informer event; the run does not fail on them, since usage settled exact, but each is a finding):\n\n```\n%s\n```\n", strings.Join(f.AuditRepairs, "\n"))
	}
	if f.Violation != "" {
		fmt.Fprintf(&b, "\nViolation:\n\n```\n%s\n```\n", f.Violation)
	}
	return b.String()
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

func summarize(reasons []string) string {
	if len(reasons) == 0 {
		return ""
	}
	count := map[string]int{}
	for _, r := range reasons {
		count[r]++
	}
	var parts []string
	for r, n := range count {
		parts = append(parts, fmt.Sprintf("%d× %s", n, r))
	}
	sort.Strings(parts)
	return "(" + strings.Join(parts, "; ") + ")"
}

// sourceVersion names the commit the binaries were built from, and whether
// the work tree had changes (read-only git commands).
func sourceVersion(root string) string {
	head, err := exec.Command("git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "an unknown commit"
	}
	out := "commit " + strings.TrimSpace(string(head))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		if lines := strings.TrimSpace(string(st)); lines != "" {
			out += fmt.Sprintf(" plus uncommitted changes to %d tracked files", strings.Count(lines, "\n")+1)
		}
	}
	return out
}
