// Package perf measures scheduling throughput with and without the
// UserQuota plugin on a real control plane, in the style of Kubernetes'
// scheduler_perf: etcd (embedded) and a kube-apiserver (Kubernetes' test
// server) in this test process, nodes as API objects (no kubelets), and the
// scheduler as the real binary (bin/userquota-scheduler) in a process of
// its own, so that its CPU time is its own and every run starts from a
// fresh process.
//
// TestThroughput runs the cases (baseline: the default plugins only, the
// UserQuota plugin registered but not enabled; userquota: UserQuota at
// PreFilter and Reserve, every pod admitted; refused: UserQuota with a
// fraction of the users at a limit that admits half of their pods)
// interleaved, in a rotated order per run, with the same binary and
// settings. TestBacklog measures a deep backlog of pods held for quota
// (backlog: UserQuota holds most of the pods at PreEnqueue for the whole
// run) against the framework's floor (floor: the same pods, those parked
// by a plain spec.schedulingGates entry, without UserQuota): pods/s and
// scheduler CPU per bound pod, API writes, memory per held pod.
// TestRecovery measures the time from scheduler start to its first
// decision with many bound pods in the API server.
//
// All are skipped unless -perf is given; `make bench-scheduler` and
// `make bench-scheduler-smoke` run them. With -perf, TestMain first checks
// that the machine can hold the shape asked for (shape_test.go) and
// starts nothing if not. docs/throughput.md has the numbers and the
// commands.
package perf

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/userquota/userquota/test/internal/controlplane/apiserver"
	"github.com/userquota/userquota/test/internal/etcdtest"
)

var (
	perfFlag     = flag.Bool("perf", false, "run the scheduler benchmarks (skipped otherwise)")
	schedulerBin = flag.String("scheduler", "../../bin/userquota-scheduler", "the scheduler binary (make build)")
	nodesFlag    = flag.Int("nodes", 1000, "nodes (API objects)")
	podsFlag     = flag.Int("pods", 10000, "pods scheduled per run")
	usersFlag    = flag.Int("users", 1000, "users the pods belong to (round robin)")
	queuesFlag   = flag.Int("queues", 100, "leaf queues under root; users are spread evenly over them")
	groupsFlag   = flag.Int("groups", 20, "groups (each user is in one)")
	levelsFlag   = flag.Int("levels", 1, "depth of the queue tree below root: 1 puts the -queues leaves under root; 3 puts them under two tiers of parents, each with a user and a group limit (make bench-scale)")
	runsFlag     = flag.Int("runs", 3, "runs of every case, interleaved")
	casesFlag    = flag.String("case", "", "cases to run, comma separated; each test runs those of its own: TestThroughput baseline, userquota, refused, control (the baseline again, an A/A comparison), default "+defaultThroughputCases+"; TestBacklog backlog, floor, floor-control (the floor again), gated-quota (the floor with UserQuota enabled), default "+defaultBacklogCases)
	atLimitFlag  = flag.Float64("at-limit", 0.2, "refused case: the fraction of users whose limit admits half of their pods")
	qpsFlag      = flag.Int("qps", 5000, "scheduler client QPS and burst (raised so the API server is the ceiling, not the client limiter)")
	verbosity    = flag.Int("v-scheduler", 2, "scheduler log verbosity (the production Deployment runs --v=2)")
	runTimeout   = flag.Duration("run-timeout", 15*time.Minute, "how long one run may take to decide every pod")
	backlogPods  = flag.Int("backlog-pods", 50000, "TestBacklog: pods per run, of which -backlog-held are held for the whole run")
	backlogHeld  = flag.Float64("backlog-held", 0.8, "TestBacklog: the fraction of -backlog-pods held (over quota in backlog, gated in floor)")
	statusQPS    = flag.Int("status-qps", 0, "TestBacklog, backlog case: UserQuota's statusQPS and statusBurst (its own client for held pods' status and events). 0: the plugin's defaults (20 and 50, and statusBusyQPS 1 while pods bind), as shipped; the holds' writes then trickle past the run (40,000 holds take over an hour), so it ends after the last bind. Raised (e.g. 5000), every hold is written and its writes counted before the run ends, many of them during the binding window; lowered (e.g. 1: almost no writes while pods bind), they trickle as at the default")
	recoveryPods = flag.Int("recovery-pods", 100000, "TestRecovery: bound pods in the API server when the scheduler starts (0 skips)")
	recoveryRuns = flag.Int("recovery-runs", 2, "TestRecovery: starts of each profile, interleaved")
	outDir       = flag.String("out", "", "directory for the report (throughput.md/.json, recovery.md/.json, the scheduler's /metrics of every run); empty: stdout only")
	pprofFlag    = flag.Duration("pprof", 0, "TestThroughput, TestBacklog: capture a CPU profile of the scheduler for this long from its first binding (see -pprof-from), and a heap profile at each run's end, into -out/pprof/ (0: none)")
	pprofFrom    = flag.String("pprof-from", pprofFromBind, "TestThroughput, TestBacklog: when the -pprof profile starts: "+pprofFromBind+" (the first binding) or "+pprofFromStart+" (as soon as the scheduler serves it after its start)")
	pprofBlock   = flag.Bool("pprof-block", false, "with -pprof: a block profile of the CPU profile's span beside it (runN-CASE-block.pb.gz): every wait on a lock or channel, which kube-scheduler records by default (enableContentionProfiling defaults to true with enableProfiling)")
	pprofSelf    = flag.Bool("pprof-self", false, "with -pprof: a CPU profile of this process (the API server, etcd and the harness) over the scheduler's CPU profile's span, beside it (runN-CASE-self.pb.gz)")
	warmup       = flag.Bool("warmup", true, "TestThroughput, TestBacklog: one unreported run first (baseline; floor), so the API server's start-up work settles")
)

func TestMain(m *testing.M) {
	flag.Parse()
	if !*perfFlag {
		// Compiled and vetted with everything else, run only on purpose.
		os.Exit(m.Run())
	}
	// A shape the machine cannot hold fails here, before etcd starts.
	shapeCheckMain()
	// The API server's request traces and informer chatter would bury the
	// results; a failing test still logs through t.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("logtostderr", "false")
	_ = klogFlags.Set("alsologtostderr", "false")
	_ = klogFlags.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	// One etcd; each API server stores under its own prefix.
	code := apiserver.EtcdMain(etcdtest.Options{Name: "perf", LogLevel: "fatal", QuotaBackendBytes: 8 << 30}, m.Run)
	if binary.path != "" {
		os.RemoveAll(filepath.Dir(binary.path))
	}
	os.Exit(code)
}
