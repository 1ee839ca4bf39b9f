package perf

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/test/internal/controlplane"
)

// The shape check: before TestMain starts etcd, with -perf, the shape the
// flags ask for is compared with what the harness can run and what the
// machine has, so that a shape it cannot hold fails at once, naming the
// limit and the flags behind it, instead of swapping, hanging until
// -run-timeout or failing an hour in. It checks, for the tests -run
// selects:
//
//   - the flags: counts at least 1 (and below maxCount), fractions in
//     range, -levels in supportedLevels, -case names, and the workload's
//     own constraints (every user with pods to hold back, every leaf queue
//     and group with a user);
//   - node capacity: the pods a run must bind fit the nodes (else the rest
//     stay pending until -run-timeout);
//   - the queue config: it fits a ConfigMap (1 MiB);
//   - memory: the estimate from the per-object costs below against
//     MemAvailable;
//   - open files and ephemeral ports: fixed floors (what the harness opens
//     does not grow with the shape, see minOpenFiles).

// Memory per process, measured on this project's machine (2 cores, 24
// GiB, go1.26); each estimate is RSS at the process's peak. One test runs
// at a time and only one scheduler at a time, so a shape needs the largest
// test's server process plus its scheduler.
var (
	// serverMem is this test process: etcd, kube-apiserver and the
	// harness (its clients and pod informer).
	serverMem = memCost{
		// base: make bench-scheduler-smoke (_output/bench-smoke,
		// 2026-11-26): the process held 764 MiB after TestThroughput,
		// TestBacklog (1,000 pods a run) and 2,000 bound pods of
		// TestRecovery, 100 nodes (recovery.md).
		base: 768 << 20,
		// perNode: not measured apart from pods; a node object (perfNode)
		// is about a pod's size, and counted as a bound pod.
		perNode: 32 << 10,
		// perBoundPod: docs/throughput.md, Recovery: 3.4 GiB after
		// creating 100,000 bound pods on 1,000 nodes, (3.4 GiB - base -
		// 1,000 nodes) / 100,000 = 27.5 KiB, rounded up (RSS after the
		// creation, not the peak).
		perBoundPod: 32 << 10,
		// perRunPod: a pod a run creates, binds and deletes costs more
		// (binding and status revisions, its event, the informer's copy,
		// history until etcd compacts): make bench-scale's TestThroughput
		// (2026-11-26, 5,000 nodes, 50,000 pods a run, 13 runs), peak RSS
		// (VmHWM) read from /proc while it ran: 4.89 GiB after 2 runs,
		// 5.26 after 5, at most 5.40 GiB after 7 (two starts); (5.40 GiB -
		// base - 5,000 nodes) / 50,000 = 94 KiB. 112 KiB leaves room for
		// the rise over the runs not watched (6.2 GiB at that shape).
		perRunPod: 112 << 10,
	}
	// schedulerMem is bin/userquota-scheduler.
	schedulerMem = memCost{
		// base: make bench-scheduler-smoke: RSS 163 MiB at the end of a
		// TestThroughput run (100 nodes, 1,000 pods), the largest of the
		// smoke's scheduler figures (throughput.json).
		base: 160 << 20,
		// perNode: as the server's.
		perNode: 32 << 10,
		// perBoundPod: docs/throughput.md, Recovery: RSS at the first
		// decision at most 1,065 MiB with 100,000 bound pods on 1,000
		// nodes: (1,065 MiB - base - 1,000 nodes) / 100,000 = 8.9 KiB,
		// rounded up (not the peak).
		perBoundPod: 12 << 10,
		// perRunPod: docs/throughput.md, the backlog (1,000 nodes, 50,000
		// pods, 40,000 of them pending throughout): peak RSS (VmHWM) at
		// most 1,576 MiB: (1,576 MiB - base - 1,000 nodes) / 50,000 =
		// 28.4 KiB, rounded up. make bench-scale's TestThroughput (5,000
		// nodes, 50,000 pods) ended its runs at 1.07-1.43 GiB RSS, below.
		perRunPod: 32 << 10,
	}
)

// minOpenFiles is the floor of RLIMIT_NOFILE. The harness's connections
// do not grow with the shape: client-go multiplexes the harness's and the
// scheduler's requests, informers included, over a few HTTP/2
// connections, and the API server's etcd clients are one set per API
// server. make bench-scale's test process (5,000 nodes, 50,000 pods)
// held 144 descriptors, 125 of them sockets (about 60 loopback
// connections with both ends in this process), and the scheduler 13-43
// (process_open_fds). 1024, the usual default soft limit, is 7 times
// that. Go raises its soft limit to the hard one at start, so the limit
// read here is the hard one.
const minOpenFiles = 1024

// minEphemeralPorts is the floor of the local port range
// (/proc/sys/net/ipv4/ip_local_port_range): each loopback connection
// takes one, about 60 at a time as above, plus a scheduler's few in
// TIME_WAIT for a minute after each run; none grows with the shape.
const minEphemeralPorts = 1024

// maxCount bounds every count flag: past it a shape is a typo (10M pods),
// whatever the machine.
const maxCount = 10_000_000

// supportedLevels are the depths of the queue tree (-levels) the harness
// runs: those TestWorkload checks the generated configs at (its cases
// without a level at 1).
var supportedLevels = []int{1, 2, 3}

// configCheckWork bounds the work of generating the queue configs here
// (users x leaf queues: the generator walks the users for every leaf);
// past it the config size is left to the API server.
const configCheckWork = 100_000_000

// The limits a shapeError names.
const (
	limitFlag         = "flag"
	limitNodeCapacity = "node capacity"
	limitConfigSize   = "queue config size"
	limitMemory       = "memory"
	limitOpenFiles    = "open files"
	limitPorts        = "ephemeral ports"
)

// The tests the check looks at.
const (
	throughputTest = "TestThroughput"
	backlogTest    = "TestBacklog"
	recoveryTest   = "TestRecovery"
)

// shapeError is one limit the shape does not fit: which, why, what it
// needs and what there is, and the flags that drive it (none for a fixed
// floor).
type shapeError struct {
	limit      string
	detail     string
	need, have string
	flags      []string
}

func (e *shapeError) Error() string {
	s := e.limit + ": " + e.detail
	if e.need != "" {
		s += fmt.Sprintf(" (needs %s, has %s)", e.need, e.have)
	}
	if len(e.flags) > 0 {
		s += "; set by " + strings.Join(e.flags, ", ")
	}
	return s
}

// memCost is what a process holds: a base and a cost per object.
type memCost struct {
	base, perNode, perBoundPod, perRunPod uint64
}

// bytes is the estimate for nodes, pods bound from the start (boundPods)
// and pods a run creates, binds and deletes (runPods).
func (c memCost) bytes(nodes, boundPods, runPods int) uint64 {
	return c.base + uint64(nodes)*c.perNode + uint64(boundPods)*c.perBoundPod + uint64(runPods)*c.perRunPod
}

// machine is what the shape is compared with; zero fields are unknown and
// not checked.
type machine struct {
	memAvailable uint64 // bytes (MemAvailable)
	openFiles    uint64 // RLIMIT_NOFILE, soft
	ports        int    // ephemeral ports
}

// shape is what the flags ask for, and which of the tests run.
type shape struct {
	nodes, pods, users, queues, groups, levels, runs int
	cases                                            string
	atLimit                                          float64
	qps                                              int
	runTimeout, pprof                                time.Duration
	pprofFrom                                        string
	backlogPods                                      int
	backlogHeld                                      float64
	statusQPS                                        int
	recoveryPods, recoveryRuns                       int
	warmup, pprofBlock, pprofSelf                    bool
	// run and skip are go test's -run and -skip.
	run, skip string
}

// shapeOf reads a shape from the flags' values as strings (value returns
// the value of the flag named); run and skip are -test.run and
// -test.skip.
func shapeOf(value func(name string) string, run, skip string) (shape, error) {
	s := shape{run: run, skip: skip}
	var err error
	ints := map[string]*int{"nodes": &s.nodes, "pods": &s.pods, "users": &s.users, "queues": &s.queues, "groups": &s.groups,
		"levels": &s.levels, "runs": &s.runs, "qps": &s.qps, "backlog-pods": &s.backlogPods, "status-qps": &s.statusQPS,
		"recovery-pods": &s.recoveryPods, "recovery-runs": &s.recoveryRuns}
	for name, p := range ints {
		if *p, err = strconv.Atoi(value(name)); err != nil {
			return s, fmt.Errorf("-%s: %v", name, err)
		}
	}
	floats := map[string]*float64{"at-limit": &s.atLimit, "backlog-held": &s.backlogHeld}
	for name, p := range floats {
		if *p, err = strconv.ParseFloat(value(name), 64); err != nil {
			return s, fmt.Errorf("-%s: %v", name, err)
		}
	}
	durations := map[string]*time.Duration{"run-timeout": &s.runTimeout, "pprof": &s.pprof}
	for name, p := range durations {
		if *p, err = time.ParseDuration(value(name)); err != nil {
			return s, fmt.Errorf("-%s: %v", name, err)
		}
	}
	bools := map[string]*bool{"warmup": &s.warmup, "pprof-block": &s.pprofBlock, "pprof-self": &s.pprofSelf}
	for name, p := range bools {
		if *p, err = strconv.ParseBool(value(name)); err != nil {
			return s, fmt.Errorf("-%s: %v", name, err)
		}
	}
	s.cases = value("case")
	s.pprofFrom = value("pprof-from")
	return s, nil
}

// flagShape is the shape of the flags given (default: their defaults).
func flagShape(defaults bool) (shape, error) {
	value := func(name string) string {
		f := flag.Lookup(name)
		if defaults {
			return f.DefValue
		}
		return f.Value.String()
	}
	testFlag := func(name string) string {
		if f := flag.Lookup(name); f != nil && !defaults {
			return f.Value.String()
		}
		return ""
	}
	return shapeOf(value, testFlag("test.run"), testFlag("test.skip"))
}

// selected reports whether -run and -skip select the top-level test
// name, as the testing package matches: -run selects it when the pattern
// matches it (partly or wholly), -skip skips it only when its pattern
// matches it wholly. An invalid pattern selects: go test reports it.
func (s shape) selected(name string) bool {
	if s.run != "" {
		if ok, _, err := matchTop(s.run, name); err == nil && !ok {
			return false
		}
	}
	if s.skip != "" {
		if ok, partial, err := matchTop(s.skip, name); err == nil && ok && !partial {
			return false
		}
	}
	return true
}

// matchTop matches a top-level test name against a -run or -skip pattern
// as testing's matcher does: the pattern splits into alternatives at '|'
// and each into elements at '/' (outside brackets and parentheses); the
// first alternative whose first element matches, unanchored, decides:
// ok, and partial when it has more elements (subtests).
func matchTop(pattern, name string) (ok, partial bool, err error) {
	for _, alt := range splitPattern(pattern) {
		if ok, err = regexp.MatchString(alt[0], name); err != nil {
			return false, false, err
		}
		if ok {
			return true, len(alt) > 1, nil
		}
	}
	return false, false, nil
}

// splitPattern splits a pattern into its alternatives and their elements,
// as testing's splitRegexp does.
func splitPattern(p string) [][]string {
	var alts [][]string
	var elems []string
	brackets, parens := 0, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '[':
			brackets++
		case ']':
			brackets = max(0, brackets-1) // an unmatched ']' is legal
		case '(':
			if brackets == 0 {
				parens++
			}
		case ')':
			if brackets == 0 {
				parens--
			}
		case '\\':
			i++
		case '/', '|':
			if brackets == 0 && parens == 0 {
				elems = append(elems, p[:i])
				if p[i] == '|' {
					alts, elems = append(alts, elems), nil
				}
				p, i = p[i+1:], -1
			}
		}
	}
	return append(alts, append(elems, p))
}

// tests are the perf tests the shape runs (each that -run selects and
// that does not skip itself: -case with none of its cases, -recovery-pods
// 0). An unknown -case selects both of its tests (the check reports it).
func (s shape) tests() map[string]bool {
	out := map[string]bool{}
	for _, backlog := range []bool{false, true} {
		name := throughputTest
		if backlog {
			name = backlogTest
		}
		cs, err := selectCases(s.cases, s.atLimit, backlog)
		out[name] = s.selected(name) && (err != nil || len(cs) > 0)
	}
	out[recoveryTest] = s.selected(recoveryTest) && s.recoveryPods != 0
	return out
}

func (s shape) workload() workload {
	return workload{queueconfigtest.Synthetic{Users: s.users, Queues: s.queues, Groups: s.groups, Levels: s.levels}}
}

// backlogSplit is TestBacklog's held and admitted pods.
func (s shape) backlogSplit() (held, admitted int) {
	held = int(float64(s.backlogPods)*s.backlogHeld + 0.5)
	return held, s.backlogPods - held
}

// recoveryNodes is TestRecovery's nodes: at most 100 bound pods a node.
func (s shape) recoveryNodes() int { return max(s.nodes, (s.recoveryPods+99)/100) }

// checkShape compares the shape with what the harness runs and what the
// machine has: it returns every problem (the flags' first: with one, the
// other checks are not made) and notes of what it estimated and what it
// could not check.
func checkShape(s shape, m machine) (problems []*shapeError, notes []string) {
	tests := s.tests()
	if !tests[throughputTest] && !tests[backlogTest] && !tests[recoveryTest] {
		return nil, []string{"no perf test selected: shape not checked"}
	}
	if problems = checkFlags(s, tests); len(problems) > 0 {
		return problems, nil
	}
	problems = append(problems, checkNodeCapacity(s, tests)...)
	p, n := checkConfigSize(s, tests)
	problems, notes = append(problems, p...), append(notes, n...)
	p, n = checkMemory(s, tests, m)
	problems, notes = append(problems, p...), append(notes, n...)
	p, n = checkDescriptors(m)
	return append(problems, p...), append(notes, n...)
}

// checkFlags checks the flags of the tests that run.
func checkFlags(s shape, tests map[string]bool) []*shapeError {
	var out []*shapeError
	bad := func(detail string, flags ...string) {
		out = append(out, &shapeError{limit: limitFlag, detail: detail, flags: flags})
	}
	count := func(name string, v int, what string) bool {
		switch {
		case v < 1:
			bad(fmt.Sprintf("-%s=%d: want at least 1 (%s)", name, v, what), "-"+name)
		case v > maxCount:
			bad(fmt.Sprintf("-%s=%d: more than %d, not a shape this harness runs", name, v, maxCount), "-"+name)
		default:
			return true
		}
		return false
	}
	throughput, backlog := tests[throughputTest], tests[backlogTest]
	okWorkload := count("nodes", s.nodes, "nodes for the pods to bind to")
	okWorkload = count("users", s.users, "every pod belongs to a user") && okWorkload
	okQueues := count("queues", s.queues, "leaf queues the users are spread over")
	okGroups := count("groups", s.groups, "every user is in a group")
	if okWorkload && okQueues && s.queues > s.users {
		bad(fmt.Sprintf("-queues=%d -users=%d: users are spread over the leaf queues, %d of them would have none", s.queues, s.users, s.queues-s.users), "-queues", "-users")
	}
	if okWorkload && okGroups && s.groups > s.users {
		bad(fmt.Sprintf("-groups=%d -users=%d: each user is in one group, %d groups would have none", s.groups, s.users, s.groups-s.users), "-groups", "-users")
	}
	if !containsInt(supportedLevels, s.levels) {
		bad(fmt.Sprintf("-levels=%d: the harness builds queue trees of %v levels below root", s.levels, supportedLevels), "-levels")
	}
	if throughput || backlog {
		if _, err := selectCases(s.cases, s.atLimit, false); err != nil {
			bad(err.Error(), "-case")
		}
		count("runs", s.runs, "runs of every case")
	}
	if s.qps < 1 {
		bad(fmt.Sprintf("-qps=%d: want at least 1 (the scheduler's client QPS and burst)", s.qps), "-qps")
	}
	if s.runTimeout <= 0 {
		bad(fmt.Sprintf("-run-timeout=%s: want above 0 (every run would time out at once)", s.runTimeout), "-run-timeout")
	}
	if s.pprof < 0 {
		bad(fmt.Sprintf("-pprof=%s: want 0 (none) or above", s.pprof), "-pprof")
	}
	if s.pprofBlock && s.pprof == 0 {
		bad("-pprof-block: want -pprof above 0 (the block profile spans the CPU profile's time)", "-pprof-block")
	}
	if s.pprofSelf && s.pprof == 0 {
		bad("-pprof-self: want -pprof above 0 (this process's profile spans the scheduler's CPU profile's time)", "-pprof-self")
	}
	if s.pprofFrom != pprofFromBind && s.pprofFrom != pprofFromStart {
		bad(fmt.Sprintf("-pprof-from=%q: want %s or %s", s.pprofFrom, pprofFromBind, pprofFromStart), "-pprof-from")
	}
	w := s.workload()
	if throughput {
		okPods := count("pods", s.pods, "pods scheduled per run")
		refused := false
		if cs, err := selectCases(s.cases, s.atLimit, false); err == nil {
			for _, c := range cs {
				refused = refused || c.name == "refused"
			}
		}
		switch {
		case !refused:
		case s.atLimit < 0 || s.atLimit > 1:
			bad(fmt.Sprintf("-at-limit=%g: a fraction of the users, want 0 to 1", s.atLimit), "-at-limit")
		case okPods && okWorkload:
			// Each user at a limit is held to half of its pods; with one
			// pod that is a limit of 0 pods, which the config refuses.
			for u := 0; u < s.users; u++ {
				if atLimit(u, s.atLimit) && w.podsOf(u, s.pods) < 2 {
					bad(fmt.Sprintf("-pods=%d -users=%d -at-limit=%g: the refused case holds each user at a limit to half of its pods, and %s has %d: a limit of 0 pods, which the config refuses (-pods >= 2 x -users gives every user 2)",
						s.pods, s.users, s.atLimit, w.User(u), w.podsOf(u, s.pods)), "-pods", "-users", "-at-limit")
					break
				}
			}
		}
	}
	if backlog {
		okPods := count("backlog-pods", s.backlogPods, "TestBacklog's pods per run")
		switch held, admitted := s.backlogSplit(); {
		case s.backlogHeld <= 0 || s.backlogHeld >= 1:
			bad(fmt.Sprintf("-backlog-held=%g: the fraction of -backlog-pods held, want above 0 and below 1", s.backlogHeld), "-backlog-held")
		case okPods && okWorkload && (held < 1 || admitted < s.users):
			bad(fmt.Sprintf("-backlog-pods=%d -backlog-held=%g -users=%d: %d held, %d admitted; want some held and at least one admitted pod per user",
				s.backlogPods, s.backlogHeld, s.users, held, admitted), "-backlog-pods", "-backlog-held", "-users")
		}
		if s.statusQPS < 0 {
			bad(fmt.Sprintf("-status-qps=%d: want 0 (the plugin's defaults) or above", s.statusQPS), "-status-qps")
		}
	}
	if tests[recoveryTest] {
		if s.recoveryPods < 0 {
			bad(fmt.Sprintf("-recovery-pods=%d: want 0 (TestRecovery skipped) or above", s.recoveryPods), "-recovery-pods")
		} else {
			count("recovery-pods", s.recoveryPods, "bound pods")
		}
		count("recovery-runs", s.recoveryRuns, "starts of each profile")
	}
	return out
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// podsPerNode is how many of the workload's pods one perfNode holds: the
// least of its pods, cpu and memory over a pod's requests.
func podsPerNode() int {
	alloc := perfNode(0).Status.Allocatable
	req := workload{queueconfigtest.Synthetic{Users: 1, Queues: 1, Groups: 1, Levels: 1}}.pod(0).Spec.Containers[0].Resources.Requests
	n := alloc.Pods().Value()
	if c := req.Cpu().MilliValue(); c > 0 {
		n = min(n, alloc.Cpu().MilliValue()/c)
	}
	if mem := req.Memory().Value(); mem > 0 {
		n = min(n, alloc.Memory().Value()/mem)
	}
	return int(n)
}

// checkNodeCapacity checks that the pods a run must bind fit the nodes:
// every pod of TestThroughput's warm-up, baseline, userquota and control
// (the refused case's admitted ones), TestBacklog's admitted ones. Those
// that do not fit would stay pending until -run-timeout. TestRecovery
// sizes its nodes itself.
func checkNodeCapacity(s shape, tests map[string]bool) []*shapeError {
	var out []*shapeError
	perNode := podsPerNode()
	capacity := s.nodes * perNode
	fail := func(test string, bind int, flags ...string) {
		out = append(out, &shapeError{limit: limitNodeCapacity,
			detail: fmt.Sprintf("%s binds %d pods a run, %d nodes hold %d (%d pods each: perfNode's allocatable over a pod's requests); the rest would stay pending until -run-timeout", test, bind, s.nodes, capacity, perNode),
			need:   fmt.Sprintf("%d nodes", (bind+perNode-1)/perNode), have: fmt.Sprintf("%d nodes", s.nodes), flags: flags})
	}
	if tests[throughputTest] {
		bind := 0
		cs, _ := selectCases(s.cases, s.atLimit, false)
		if s.warmup {
			cs = append(cs, perfCase{name: "warmup"})
		}
		for _, c := range cs {
			bind = max(bind, s.pods-s.workload().expectRefused(s.pods, c.fraction))
		}
		if bind > capacity {
			fail(throughputTest, bind, "-nodes", "-pods")
		}
	}
	if tests[backlogTest] {
		if _, admitted := s.backlogSplit(); admitted > capacity {
			fail(backlogTest, admitted, "-nodes", "-backlog-pods", "-backlog-held")
		}
	}
	return out
}

// checkConfigSize generates the queue configs the tests write and checks
// that each fits a ConfigMap (the API server's and the plugin's bound).
func checkConfigSize(s shape, tests map[string]bool) ([]*shapeError, []string) {
	if uint64(s.users)*uint64(s.queues) > configCheckWork {
		return nil, []string{fmt.Sprintf("queue config size not checked: -users x -queues is above %d, generating the configs here would take as long as the run's own", configCheckWork)}
	}
	w := s.workload()
	type config struct {
		what  string
		text  func() string
		flags []string
	}
	tree := []string{"-users", "-queues", "-groups", "-levels"}
	var configs []config
	if tests[throughputTest] {
		configs = append(configs, config{throughputTest + "'s", func() string { return w.queueConfig(s.pods, 0) }, tree})
		if cs, _ := selectCases(s.cases, s.atLimit, false); containsCase(cs, "refused") && s.atLimit > 0 {
			configs = append(configs, config{throughputTest + "'s refused", func() string { return w.queueConfig(s.pods, s.atLimit) },
				append(append([]string(nil), tree...), "-at-limit")})
		}
	}
	if tests[backlogTest] {
		_, admitted := s.backlogSplit()
		configs = append(configs, config{backlogTest + "'s", func() string { return w.backlogConfig(admitted) }, tree})
	}
	if tests[recoveryTest] {
		configs = append(configs, config{recoveryTest + "'s", func() string { return w.queueConfig(s.recoveryPods, 0) }, tree})
	}
	var out []*shapeError
	for _, c := range configs {
		size := len(controlplane.QueueConfigKey) + len(c.text())
		if size > queueconfig.MaxConfigMapBytes {
			out = append(out, &shapeError{limit: limitConfigSize,
				detail: fmt.Sprintf("%s queue config is %d bytes, more than a ConfigMap holds", c.what, size),
				need:   fmt.Sprintf("%d bytes", size), have: fmt.Sprintf("%d (1 MiB)", queueconfig.MaxConfigMapBytes), flags: c.flags})
		}
	}
	return out, nil
}

func containsCase(cs []perfCase, name string) bool {
	for _, c := range cs {
		if c.name == name {
			return true
		}
	}
	return false
}

// testMemory is the estimate of one test's processes.
type testMemory struct {
	test              string
	server, scheduler uint64
	flags             []string
	detail            string // the objects
}

// perfTestOrder is the order go test runs the perf tests in when one
// process runs several: that of their files.
var perfTestOrder = []string{backlogTest, recoveryTest, throughputTest}

// memoryOf estimates the memory of each test that runs. The tests of one
// process share its etcd: what a test leaves there, its nodes and
// TestRecovery's bound pods, is counted in every test after it, at the
// server's whole cost per object (an overestimate: the API server that
// cached them is gone, etcd's share stays). make bench-* runs each test
// in a process of its own.
func memoryOf(s shape, tests map[string]bool) []testMemory {
	var out []testMemory
	leftNodes, leftBound := 0, 0
	for _, test := range perfTestOrder {
		if !tests[test] {
			continue
		}
		nodes, bound, run, flags := s.nodes, 0, 0, []string{"-nodes"}
		switch test {
		case throughputTest:
			run, flags = s.pods, append(flags, "-pods")
		case backlogTest:
			run, flags = s.backlogPods, append(flags, "-backlog-pods")
		case recoveryTest:
			nodes, bound, flags = s.recoveryNodes(), s.recoveryPods, append(flags, "-recovery-pods")
		}
		detail := fmt.Sprintf("%d nodes", nodes)
		if bound > 0 {
			detail += fmt.Sprintf(", %d bound pods", bound)
		}
		if run > 0 {
			detail += fmt.Sprintf(", %d pods a run", run)
		}
		if leftNodes > 0 {
			detail += fmt.Sprintf("; left in etcd by the tests before it: %d nodes, %d bound pods", leftNodes, leftBound)
			if leftBound > 0 {
				flags = append(flags, "-recovery-pods")
			}
		}
		out = append(out, testMemory{test: test, flags: flags, detail: detail,
			server:    serverMem.bytes(nodes+leftNodes, bound+leftBound, run),
			scheduler: schedulerMem.bytes(nodes, bound, run)})
		leftNodes, leftBound = leftNodes+nodes, leftBound+bound
	}
	return out
}

// checkMemory compares each test's estimate with the memory available.
func checkMemory(s shape, tests map[string]bool, m machine) ([]*shapeError, []string) {
	var out []*shapeError
	var largest testMemory
	for _, tm := range memoryOf(s, tests) {
		need := tm.server + tm.scheduler
		if need > largest.server+largest.scheduler {
			largest = tm
		}
		if m.memAvailable > 0 && need > m.memAvailable {
			out = append(out, &shapeError{limit: limitMemory,
				detail: fmt.Sprintf("%s (%s) needs about %s: etcd, API server and harness %s, scheduler %s (per-object costs in shape_test.go)",
					tm.test, tm.detail, gib(need), gib(tm.server), gib(tm.scheduler)),
				need: gib(need), have: gib(m.memAvailable) + " available (MemAvailable)", flags: tm.flags})
		}
	}
	have := "MemAvailable unknown, not checked"
	if m.memAvailable > 0 {
		have = gib(m.memAvailable) + " available"
	}
	return out, []string{fmt.Sprintf("memory: %s (%s) needs about %s, %s", largest.test, largest.detail, gib(largest.server+largest.scheduler), have)}
}

// checkDescriptors checks the open-files and port floors.
func checkDescriptors(m machine) ([]*shapeError, []string) {
	var out []*shapeError
	var notes []string
	if m.openFiles == 0 {
		notes = append(notes, "RLIMIT_NOFILE unknown, not checked")
	} else if m.openFiles < minOpenFiles {
		out = append(out, &shapeError{limit: limitOpenFiles,
			detail: "RLIMIT_NOFILE is below the harness's floor (its connections do not grow with the shape; raise the limit: ulimit -n)",
			need:   fmt.Sprintf("%d", minOpenFiles), have: fmt.Sprintf("%d", m.openFiles)})
	}
	if m.ports == 0 {
		notes = append(notes, "ephemeral port range unknown, not checked")
	} else if m.ports < minEphemeralPorts {
		out = append(out, &shapeError{limit: limitPorts,
			detail: "/proc/sys/net/ipv4/ip_local_port_range is narrower than the harness's floor (its connections do not grow with the shape)",
			need:   fmt.Sprintf("%d ports", minEphemeralPorts), have: fmt.Sprintf("%d", m.ports)})
	}
	return out, notes
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// readMachine reads the memory available, RLIMIT_NOFILE and the ephemeral
// port range; what it cannot read stays 0 (unchecked).
func readMachine() machine {
	var m machine
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.memAvailable, _ = parseMemAvailable(string(b))
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil {
		m.openFiles = rl.Cur
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		m.ports, _ = parsePortRange(string(b))
	}
	return m
}

// parseMemAvailable returns MemAvailable of /proc/meminfo in bytes.
func parseMemAvailable(meminfo string) (uint64, error) {
	for _, l := range strings.Split(meminfo, "\n") {
		rest, ok := strings.CutPrefix(l, "MemAvailable:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("MemAvailable: %q", l)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("MemAvailable: %v", err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no MemAvailable line")
}

// parsePortRange returns how many ports ip_local_port_range ("low high")
// spans.
func parsePortRange(s string) (int, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, fmt.Errorf("port range %q", s)
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || lo < 1 || hi < lo || hi > 65535 {
		return 0, fmt.Errorf("port range %q", s)
	}
	return hi - lo + 1, nil
}

// shapeCheckMain is TestMain's check: with -perf, before anything
// starts, it prints the estimate and what it could not check, and exits
// with 2 when the shape does not fit.
func shapeCheckMain() {
	s, err := flagShape(false)
	if err != nil {
		fmt.Fprintf(os.Stderr, "test/perf: %v\n", err)
		os.Exit(2)
	}
	if !reportShape(os.Stdout, os.Stderr, s, readMachine()) {
		os.Exit(2)
	}
}

// reportShape checks the shape against the machine, writes the notes to
// out and every problem to errs, and reports whether it fits.
func reportShape(out, errs io.Writer, s shape, m machine) bool {
	problems, notes := checkShape(s, m)
	for _, n := range notes {
		fmt.Fprintf(out, "shape: %s\n", n)
	}
	if len(problems) == 0 {
		return true
	}
	fmt.Fprintln(errs, "test/perf: the shape asked for does not fit; nothing was started:")
	for _, p := range problems {
		fmt.Fprintf(errs, "  %v\n", p)
	}
	return false
}
