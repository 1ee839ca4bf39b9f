// Command soak is the soak harness of issue 12 (docs/reliability.md): the
// local control plane (etcd in this process; kube-apiserver,
// kube-controller-manager and kwok from _output/bin) and the real scheduler
// binary (bin/userquota-scheduler) as two replicas with leader election.
// Many users submit pods, Jobs and Deployments; pods complete (kwok stages)
// or are deleted; limits refuse a steady fraction; the queue config changes
// now and then. The ConfigMap carries two quota trees beside the queue
// config (a forest, docs/forests.md; forest.go), hard nodes only, some
// tight, and most pods name a leaf of one or both. At random moments the harness SIGKILLs the leading
// scheduler (the other takes over), restarts kube-apiserver, and deletes
// pods while no scheduler runs.
//
// Invariants:
//   - after every quiet period (workload and kwok stopped, scheduler
//     settled) and at the end, the leader's usage per user, group and queue
//     (its REST API) equals the usage recomputed from the API server's pods
//     (bound, not terminal, ours) exactly; the follower's too; so does
//     every node of every quota tree (GET .../trees: the requests, in the
//     tree's resources, of those pods whose label names the node or one
//     below it);
//   - no binding takes a user, group or queue, or a tree's node, over a
//     limit or quota that may have been in force (every binding, replayed
//     from etcd in revision order); none is above it at a quiet check;
//   - no pending pod that fits every limit and every node of its trees
//     waits more than -max-wait while nothing disturbs the scheduler;
//   - some pod was held by a tree's node (the trees are tight enough).
//
// A violation stops the run and prints both sides. `make soak` runs the
// long run, `make soak-short` the CI variant (hack/soak.sh).
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type options struct {
	lifecycles, kills, apiRestarts, noScheduler int
	freezes                                     int
	duration                                    time.Duration
	replicas, users, groups, nodes              int
	rate                                        float64
	seed                                        int64
	out                                         string
	maxWait, settleTimeout, calmGrace           time.Duration
	configEvery                                 time.Duration
	leaseDuration, renewDeadline, retryPeriod   time.Duration
	verbosity                                   int
	toolsDir, schedulerBin, repoRoot            string
	controllers                                 bool
	short                                       bool
	report                                      string
	selftest                                    string
}

// envInt and friends let SOAK_* variables set flag defaults.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func parseFlags() *options {
	o := &options{}
	flag.IntVar(&o.lifecycles, "lifecycles", envInt("SOAK_LIFECYCLES", 100000), "pod lifecycles to run (a pod bound, then released by completion or deletion) (env SOAK_LIFECYCLES)")
	flag.IntVar(&o.kills, "kills", envInt("SOAK_KILLS", 50), "SIGKILLs of the leading scheduler (env SOAK_KILLS)")
	flag.IntVar(&o.apiRestarts, "apiserver-restarts", envInt("SOAK_APISERVER_RESTARTS", 5), "kube-apiserver restarts, alternately SIGTERM and SIGKILL (env SOAK_APISERVER_RESTARTS)")
	flag.IntVar(&o.noScheduler, "no-scheduler", envInt("SOAK_NO_SCHEDULER", 5), "windows with every scheduler replica killed while pods are deleted and complete (env SOAK_NO_SCHEDULER)")
	flag.IntVar(&o.freezes, "freezes", envInt("SOAK_FREEZES", 10), "SIGSTOPs of the follower for 5-15 s, then SIGCONT: its API server watches break and resume or relist (env SOAK_FREEZES)")
	flag.DurationVar(&o.duration, "duration", envDuration("SOAK_DURATION", 0), "stop after this long even if the targets are not reached (0: no cap); the run then fails (env SOAK_DURATION)")
	flag.IntVar(&o.replicas, "replicas", 2, "scheduler replicas (1 or 2)")
	flag.IntVar(&o.users, "users", 60, "users submitting pods")
	flag.IntVar(&o.groups, "groups", 6, "named groups")
	flag.IntVar(&o.nodes, "nodes", 4, "kwok nodes (large: only quota refuses pods)")
	flag.Float64Var(&o.rate, "rate", 25, "naked pods submitted per second (Jobs and Deployments come on top)")
	flag.Int64Var(&o.seed, "seed", 0, "random seed (0: from the clock; printed)")
	flag.StringVar(&o.out, "out", "", "folder for logs and the report (default _output/soak/<time>)")
	flag.DurationVar(&o.maxWait, "max-wait", 5*time.Second, "longest a pending pod that fits every limit may wait while nothing disturbs the scheduler")
	flag.DurationVar(&o.settleTimeout, "settle-timeout", 2*time.Minute, "how long a quiet check waits for the usage to match")
	flag.DurationVar(&o.calmGrace, "calm", 10*time.Second, "after a fault, how long before waits count again")
	flag.DurationVar(&o.configEvery, "config-every", 20*time.Second, "mean time between queue config changes")
	flag.DurationVar(&o.leaseDuration, "lease-duration", 5*time.Second, "leader election lease duration")
	flag.DurationVar(&o.renewDeadline, "renew-deadline", 4*time.Second, "leader election renew deadline")
	flag.DurationVar(&o.retryPeriod, "retry-period", time.Second, "leader election retry period")
	flag.IntVar(&o.verbosity, "v-scheduler", 2, "scheduler log verbosity")
	flag.StringVar(&o.toolsDir, "tools", "_output/bin", "kube-apiserver, kube-controller-manager and kwok (hack/tools.sh)")
	flag.StringVar(&o.schedulerBin, "scheduler", "bin/userquota-scheduler", "the scheduler binary (make build)")
	flag.StringVar(&o.repoRoot, "root", ".", "the repository (hack/kwok, manifests, test/soak/kwok)")
	flag.BoolVar(&o.controllers, "controllers", true, "run kube-controller-manager and submit Jobs and Deployments")
	flag.BoolVar(&o.short, "short", false, "the CI variant: defaults of 2500 lifecycles, 3 kills, 1 API server restart, 1 no-scheduler window, 1 follower freeze, 32 users, 16 pods/s, 15 min cap")
	flag.StringVar(&o.report, "report", "", "also write the report (markdown) here")
	flag.StringVar(&o.selftest, "selftest", "", "check the checks: give them wrong data on purpose so the run must fail: "+
		"drift (the recomputation misses a pod), tree (it misses one pod's quota tree charges), bind (limits one pod tighter than the scheduler's), wait (limits two pods looser)")
	flag.Parse()
	if o.short {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("lifecycles", func() { o.lifecycles = envInt("SOAK_LIFECYCLES", 2500) })
		def("kills", func() { o.kills = envInt("SOAK_KILLS", 3) })
		def("apiserver-restarts", func() { o.apiRestarts = envInt("SOAK_APISERVER_RESTARTS", 1) })
		def("no-scheduler", func() { o.noScheduler = envInt("SOAK_NO_SCHEDULER", 1) })
		def("freezes", func() { o.freezes = envInt("SOAK_FREEZES", 1) })
		def("users", func() { o.users = 32 })
		def("rate", func() { o.rate = 16 })
		def("duration", func() { o.duration = envDuration("SOAK_DURATION", 15*time.Minute) })
		def("config-every", func() { o.configEvery = 15 * time.Second })
	}
	abs := func(p *string) {
		if a, err := filepath.Abs(*p); err == nil {
			*p = a
		}
	}
	abs(&o.toolsDir)
	abs(&o.schedulerBin)
	abs(&o.repoRoot)
	if o.seed == 0 {
		o.seed = time.Now().UnixNano() % 1000000007
	}
	if o.out == "" {
		o.out = filepath.Join(o.repoRoot, "_output/soak", time.Now().Format("20060102-150405"))
	}
	abs(&o.out)
	return o
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "soak: "+format+"\n", a...)
	os.Exit(2)
}

func main() {
	o := parseFlags()
	if o.replicas < 1 || o.replicas > 2 {
		fail("-replicas must be 1 or 2")
	}
	if o.lifecycles <= 0 || o.users < 4 || o.groups < 2 || o.rate <= 0 {
		fail("-lifecycles, -rate must be positive, -users at least 4, -groups at least 2")
	}
	for _, b := range []string{filepath.Join(o.toolsDir, "kube-apiserver"), filepath.Join(o.toolsDir, "kwok"), o.schedulerBin} {
		if _, err := os.Stat(b); err != nil {
			fail("%s is missing: run hack/tools.sh and make build (hack/soak.sh does both)", b)
		}
	}
	if o.controllers {
		if _, err := os.Stat(filepath.Join(o.toolsDir, "kube-controller-manager")); err != nil {
			fail("%s/kube-controller-manager is missing", o.toolsDir)
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		fail("%v", err)
	}
	r := newRunner(o)
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		r.logf("got %v: stopping", s)
		r.interrupted.Store(true)
		cancel()
	}()
	code := r.run(ctx, cancel)
	os.Exit(code)
}

// plan is the fault schedule: faults grouped into cycles, each cycle ending
// with a quiet check.
type faultKind int

const (
	faultKill faultKind = iota
	faultAPIServer
	faultNoScheduler
	faultFreeze
)

func (k faultKind) String() string {
	return [...]string{"kill the leading scheduler", "restart kube-apiserver", "no scheduler: kill every replica, delete pods, start again", "freeze the follower"}[k]
}

type plannedFault struct {
	kind faultKind
	at   int  // lifecycles at which it fires
	last bool // fires at the end of its cycle, right before the quiet check
}

type cycle struct {
	end    int // lifecycles at which the cycle ends
	faults []plannedFault
}

func makePlan(o *options, rng *rand.Rand) []cycle {
	var faults []faultKind
	for i := 0; i < o.kills; i++ {
		faults = append(faults, faultKill)
	}
	for i := 0; i < o.apiRestarts; i++ {
		faults = append(faults, faultAPIServer)
	}
	for i := 0; i < o.noScheduler; i++ {
		faults = append(faults, faultNoScheduler)
	}
	if o.replicas > 1 {
		for i := 0; i < o.freezes; i++ {
			faults = append(faults, faultFreeze)
		}
	}
	rng.Shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
	var groups [][]faultKind
	for i := 0; i < len(faults); {
		n := 1 + rng.Intn(2)
		if i+n > len(faults) {
			n = len(faults) - i
		}
		groups = append(groups, faults[i:i+n])
		i += n
	}
	n := len(groups) + 1 // the last cycle has no fault
	var plan []cycle
	start := 0
	for i := 0; i < n; i++ {
		end := o.lifecycles * (i + 1) / n
		c := cycle{end: end}
		if i < len(groups) {
			for j, k := range groups[i] {
				f := plannedFault{kind: k, at: start + int(float64(end-start)*(0.15+0.75*rng.Float64()))}
				// Some faults come right before the quiet check, which then
				// measures how long the usage takes to be exact after a
				// restart: every API server restart and a third of the rest.
				if j == len(groups[i])-1 && (k == faultAPIServer || rng.Intn(3) == 0) {
					f.at, f.last = end, true
				}
				c.faults = append(c.faults, f)
			}
			sortFaults(c.faults)
		}
		plan = append(plan, c)
		start = end
	}
	return plan
}

func sortFaults(f []plannedFault) {
	for i := 1; i < len(f); i++ {
		for j := i; j > 0 && (f[j].at < f[j-1].at || f[j-1].last && !f[j].last); j-- {
			f[j], f[j-1] = f[j-1], f[j]
		}
	}
}

func machine() string {
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				f := strings.Fields(l)
				if len(f) >= 2 {
					kb, _ := strconv.ParseFloat(f[1], 64)
					mem = fmt.Sprintf("%.1f GiB", kb/1024/1024)
				}
			}
		}
	}
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if i := strings.IndexByte(l, ':'); i >= 0 {
					model = strings.TrimSpace(l[i+1:])
				}
				break
			}
		}
	}
	return fmt.Sprintf("nproc %d, memory %s, %s", nprocs(), mem, model)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
