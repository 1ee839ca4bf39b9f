package perf

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/userquota/userquota/pkg/queueconfig"
)

// TestShapeMemoryMatchesMeasures checks the per-object costs against the
// runs they come from: each estimate at least what was measured (the check
// must not pass a shape that did not fit) and at most half again.
func TestShapeMemoryMatchesMeasures(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name              string
		cost              memCost
		nodes, bound, run int
		measured          uint64
	}{
		{"server, smoke", serverMem, 100, 2000, 1000, 764 * mib},
		{"server, recovery 100k", serverMem, 1000, 100000, 0, 3482 * mib},
		{"server, scale throughput", serverMem, 5000, 0, 50000, 5529 * mib},
		{"scheduler, smoke throughput", schedulerMem, 100, 0, 1000, 163 * mib},
		{"scheduler, recovery 100k", schedulerMem, 1000, 100000, 0, 1065 * mib},
		{"scheduler, backlog 50k", schedulerMem, 1000, 0, 50000, 1576 * mib},
		{"scheduler, scale throughput", schedulerMem, 5000, 0, 50000, 1366 * mib},
	} {
		got := tc.cost.bytes(tc.nodes, tc.bound, tc.run)
		if got < tc.measured || float64(got) > 1.5*float64(tc.measured) {
			t.Errorf("%s: estimate %d MiB, measured %d MiB: want from 1 to 1.5 times", tc.name, got/mib, tc.measured/mib)
		}
	}
}

// bigMachine has 24 GiB available and the usual limits.
var bigMachine = machine{memAvailable: 24 << 30, openFiles: 1 << 20, ports: 28232}

// defaultShape is the flags' defaults, every test selected.
func defaultShape(t *testing.T) shape {
	t.Helper()
	s, err := flagShape(true)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// scaleShape is make bench-scale's shape, every case, with 100,000
// recovery pods (the default; bench-scale asks for 50,000).
func scaleShape(t *testing.T) shape {
	s := defaultShape(t)
	s.nodes, s.users, s.queues, s.levels, s.groups, s.runTimeout = 5000, 10000, 1000, 3, 20, 45*time.Minute
	s.pods, s.backlogPods, s.backlogHeld, s.recoveryPods = 50000, 50000, 0.8, 100000
	s.cases = "baseline,userquota,refused,control,backlog,floor,floor-control"
	return s
}

// smokeShape is make bench-scheduler-smoke's.
func smokeShape(t *testing.T) shape {
	s := defaultShape(t)
	s.nodes, s.pods, s.users, s.queues, s.levels, s.runs, s.warmup = 100, 1000, 100, 10, 3, 1, false
	s.cases, s.backlogPods, s.backlogHeld, s.statusQPS = "baseline,userquota,refused,backlog,floor", 1000, 0.8, 5000
	s.recoveryPods, s.recoveryRuns = 2000, 1
	return s
}

// problemKeys are the problems as "limit: flags", sorted.
func problemKeys(problems []*shapeError) []string {
	var out []string
	for _, p := range problems {
		out = append(out, strings.TrimSpace(p.limit+": "+strings.Join(p.flags, " ")))
	}
	sort.Strings(out)
	return out
}

// TestShapeFits checks that the shapes the Makefile runs, and the
// defaults, pass on a machine of 24 GiB, every test selected.
func TestShapeFits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape shape
	}{
		{"default", defaultShape(t)},
		{"scale", scaleShape(t)},
		{"smoke", smokeShape(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tests := tc.shape.tests()
			if !tests[throughputTest] || !tests[backlogTest] || !tests[recoveryTest] {
				t.Fatalf("tests selected %v, want all three", tests)
			}
			problems, notes := checkShape(tc.shape, bigMachine)
			for _, p := range problems {
				t.Errorf("%v", p)
			}
			if len(notes) == 0 || !strings.HasPrefix(notes[0], "memory: ") {
				t.Errorf("notes %q, want the memory estimate first", notes)
			}
			t.Log(notes)
		})
	}
}

// TestShapeRefuses checks each limit against a shape and a machine that
// break it: the problems named, limit and flags, exactly.
func TestShapeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scale bool // from scaleShape, else defaultShape
		edit  func(*shape)
		m     *machine // nil: bigMachine
		want  []string // problemKeys
	}{
		{name: "backlog out of memory", edit: func(s *shape) { s.run = "^TestBacklog$" }, m: &machine{memAvailable: 4 << 30, openFiles: 4096, ports: 28232},
			want: []string{"memory: -nodes -backlog-pods"}},
		{name: "scale: throughput and backlog out of memory, recovery fits", scale: true, m: &machine{memAvailable: 6 << 30, openFiles: 4096, ports: 28232},
			want: []string{"memory: -nodes -backlog-pods", "memory: -nodes -pods -recovery-pods"}},
		{name: "scale in one process: TestRecovery's pods stay for TestThroughput", scale: true, m: &machine{memAvailable: 9 << 30, openFiles: 4096, ports: 28232},
			want: []string{"memory: -nodes -pods -recovery-pods"}},
		{name: "scale, TestThroughput alone", scale: true, edit: func(s *shape) { s.run = "^TestThroughput$" }, m: &machine{memAvailable: 9 << 30, openFiles: 4096, ports: 28232}},
		{name: "open files", m: &machine{memAvailable: 24 << 30, openFiles: 256, ports: 28232}, want: []string{"open files:"}},
		{name: "ports", m: &machine{memAvailable: 24 << 30, openFiles: 4096, ports: 100}, want: []string{"ephemeral ports:"}},
		{name: "unknown machine", m: &machine{}, edit: func(s *shape) { s.nodes, s.backlogPods = 100_000, 5_000_000 }},
		{name: "no nodes", edit: func(s *shape) { s.nodes = 0 }, want: []string{"flag: -nodes"}},
		{name: "negative pods", edit: func(s *shape) { s.pods = -1 }, want: []string{"flag: -pods"}},
		{name: "absurd pods", edit: func(s *shape) { s.pods = 20_000_000 }, want: []string{"flag: -pods"}},
		{name: "absurd recovery pods", edit: func(s *shape) { s.recoveryPods = 10_000_001 }, want: []string{"flag: -recovery-pods"}},
		{name: "no users", edit: func(s *shape) { s.users = 0 }, want: []string{"flag: -users"}},
		{name: "no queues", edit: func(s *shape) { s.queues = 0 }, want: []string{"flag: -queues"}},
		{name: "queues without users", edit: func(s *shape) { s.queues = 1001 }, want: []string{"flag: -queues -users"}},
		{name: "no groups", edit: func(s *shape) { s.groups = -3 }, want: []string{"flag: -groups"}},
		{name: "groups without users", edit: func(s *shape) { s.users, s.queues, s.groups = 10, 10, 11 }, want: []string{"flag: -groups -users"}},
		{name: "levels 0", edit: func(s *shape) { s.levels = 0 }, want: []string{"flag: -levels"}},
		{name: "levels 4", edit: func(s *shape) { s.levels = 4 }, want: []string{"flag: -levels"}},
		{name: "no runs", edit: func(s *shape) { s.runs = 0 }, want: []string{"flag: -runs"}},
		{name: "unknown case", edit: func(s *shape) { s.cases = "baseline,bogus" }, want: []string{"flag: -case"}},
		{name: "qps", edit: func(s *shape) { s.qps = 0 }, want: []string{"flag: -qps"}},
		{name: "run timeout", edit: func(s *shape) { s.runTimeout = 0 }, want: []string{"flag: -run-timeout"}},
		{name: "pprof", edit: func(s *shape) { s.pprof = -time.Second }, want: []string{"flag: -pprof"}},
		{name: "pprof-block without pprof", edit: func(s *shape) { s.pprofBlock, s.pprof = true, 0 }, want: []string{"flag: -pprof-block"}},
		{name: "pprof-block with pprof", edit: func(s *shape) { s.pprofBlock, s.pprof = true, 20*time.Second }},
		{name: "pprof-self without pprof", edit: func(s *shape) { s.pprofSelf, s.pprof = true, 0 }, want: []string{"flag: -pprof-self"}},
		{name: "pprof-self with pprof", edit: func(s *shape) { s.pprofSelf, s.pprof = true, 20*time.Second }},
		{name: "pprof-from", edit: func(s *shape) { s.pprofFrom = "first-bind" }, want: []string{"flag: -pprof-from"}},
		{name: "status qps", edit: func(s *shape) { s.statusQPS = -1 }, want: []string{"flag: -status-qps"}},
		{name: "at-limit above 1", edit: func(s *shape) { s.atLimit = 1.5 }, want: []string{"flag: -at-limit"}},
		{name: "refused: users with one pod", edit: func(s *shape) { s.pods = 1500 }, want: []string{"flag: -pods -users -at-limit"}},
		{name: "users with one pod, no refused case", edit: func(s *shape) { s.pods, s.cases = 1500, "baseline,userquota,control" }},
		{name: "backlog-held 1.5", edit: func(s *shape) { s.backlogHeld = 1.5 }, want: []string{"flag: -backlog-held"}},
		{name: "backlog-held 1", edit: func(s *shape) { s.backlogHeld = 1 }, want: []string{"flag: -backlog-held"}},
		{name: "backlog-held 0", edit: func(s *shape) { s.backlogHeld = 0 }, want: []string{"flag: -backlog-held"}},
		{name: "backlog-held negative", edit: func(s *shape) { s.backlogHeld = -0.1 }, want: []string{"flag: -backlog-held"}},
		{name: "backlog: fewer admitted pods than users", edit: func(s *shape) { s.backlogPods, s.users, s.queues = 1000, 300, 30 },
			want: []string{"flag: -backlog-pods -backlog-held -users"}},
		{name: "negative recovery pods", edit: func(s *shape) { s.recoveryPods = -5 }, want: []string{"flag: -recovery-pods"}},
		{name: "no recovery runs", edit: func(s *shape) { s.recoveryRuns = 0 }, want: []string{"flag: -recovery-runs"}},
		{name: "no recovery runs, recovery skipped", edit: func(s *shape) { s.recoveryPods, s.recoveryRuns = 0, 0 }},
		{name: "flags of tests not selected", edit: func(s *shape) { s.run, s.backlogHeld, s.recoveryPods = "^TestThroughput$", 1.5, -1 }},
		{name: "backlog flags without a backlog case", edit: func(s *shape) { s.cases, s.backlogHeld = "baseline", 1.5 }},
		{name: "no perf test", edit: func(s *shape) { s.run, s.nodes = "^TestWorkload$", 0 }},
		{name: "pods do not fit the nodes", edit: func(s *shape) { s.nodes, s.pods = 10, 5000 },
			want: []string{"node capacity: -nodes -backlog-pods -backlog-held", "node capacity: -nodes -pods"}},
		{name: "refused pods need not fit", edit: func(s *shape) {
			// 10 nodes hold 1,100; the refused case binds 1,000 of 1,200.
			s.nodes, s.pods, s.users, s.queues, s.atLimit, s.cases, s.warmup = 10, 1200, 600, 60, 1, "refused", false
			s.run = "^TestThroughput$"
		}},
		{name: "backlog config over 1 MiB", m: &machine{memAvailable: 64 << 30, openFiles: 4096, ports: 28232}, edit: func(s *shape) {
			// A named limit for each of 80,000 users.
			s.run, s.users, s.backlogPods, s.backlogHeld = "^TestBacklog$", 80000, 200000, 0.5
		}, want: []string{"queue config size: -users -queues -groups -levels"}},
		{name: "three-level config over 1 MiB", edit: func(s *shape) { s.groups, s.levels = 1000, 3 },
			want: []string{"queue config size: -users -queues -groups -levels", "queue config size: -users -queues -groups -levels",
				"queue config size: -users -queues -groups -levels", "queue config size: -users -queues -groups -levels -at-limit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := defaultShape(t)
			if tc.scale {
				s = scaleShape(t)
			}
			if tc.edit != nil {
				tc.edit(&s)
			}
			m := bigMachine
			if tc.m != nil {
				m = *tc.m
			}
			problems, _ := checkShape(s, m)
			got := problemKeys(problems)
			sort.Strings(tc.want)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant %q", problemsText(problems), tc.want)
			}
		})
	}
}

func problemsText(problems []*shapeError) string {
	var b strings.Builder
	for _, p := range problems {
		fmt.Fprintf(&b, "  %v\n", p)
	}
	return b.String()
}

// TestShapeMessage checks what TestMain prints: that a problem says the
// limit, the test, what it needs, what there is and the flags.
func TestShapeMessage(t *testing.T) {
	s := scaleShape(t)
	s.run = "^TestBacklog$"
	var out, errs strings.Builder
	if reportShape(&out, &errs, s, machine{memAvailable: 3 << 30, openFiles: 4096, ports: 28232}) {
		t.Fatalf("the shape fits 3 GiB:\n%s", out.String())
	}
	want := "test/perf: the shape asked for does not fit; nothing was started:\n" +
		"  memory: TestBacklog (5000 nodes, 50000 pods a run) needs about 8.1 GiB: etcd, API server and harness 6.2 GiB, scheduler 1.8 GiB " +
		"(per-object costs in shape_test.go) (needs 8.1 GiB, has 3.0 GiB available (MemAvailable)); set by -nodes, -backlog-pods\n"
	if errs.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", errs.String(), want)
	}
	if got := out.String(); !strings.HasPrefix(got, "shape: memory: TestBacklog") {
		t.Errorf("notes %q, want the memory estimate", got)
	}
	out.Reset()
	errs.Reset()
	if !reportShape(&out, &errs, s, bigMachine) || errs.Len() > 0 {
		t.Errorf("the shape does not fit 24 GiB:\n%s", errs.String())
	}
}

// TestShapeRefusedConfig ties the refused case's rule to its reason: a
// user at a limit (every fifth, from user 0) with one pod is held to 0
// pods, and the generated config does not parse. At 100 users, 190 pods
// leave users 90-99 one pod each, 195 users 95-99, 199 only user 99 (not
// at a limit).
func TestShapeRefusedConfig(t *testing.T) {
	for _, tc := range []struct {
		pods   int
		passes bool
	}{{190, false}, {195, false}, {199, true}, {200, true}} {
		s := defaultShape(t)
		s.run, s.pods, s.users, s.queues, s.groups, s.atLimit = "^TestThroughput$", tc.pods, 100, 10, 20, 0.2
		problems, _ := checkShape(s, bigMachine)
		_, err := queueconfig.Parse([]byte(s.workload().queueConfig(s.pods, s.atLimit)))
		if (len(problems) == 0) != tc.passes || (err == nil) != tc.passes {
			t.Errorf("-pods=%d -users=100: problems %q, config error %v; want the check and the config both to pass: %v", tc.pods, problemKeys(problems), err, tc.passes)
		}
	}
}

// TestShapeSelected checks which tests -run, -skip, -case and
// -recovery-pods select.
func TestShapeSelected(t *testing.T) {
	for _, tc := range []struct {
		run, skip, cases string
		recoveryPods     int
		want             string // the selected tests, comma separated
	}{
		{want: "TestBacklog,TestRecovery,TestThroughput"},
		{run: "^TestThroughput$", want: "TestThroughput"},
		{run: "^(TestWorkload|TestThroughput|TestBacklog|TestRecovery)$", want: "TestBacklog,TestRecovery,TestThroughput"},
		{run: "TestBacklog/backlog", want: "TestBacklog"},
		{run: "Recovery", want: "TestRecovery"},
		{run: "^TestWorkload$", want: ""},
		{run: "(", want: "TestBacklog,TestRecovery,TestThroughput"},
		{skip: "TestRecovery", want: "TestBacklog,TestThroughput"},
		{skip: "TestRecovery/x", want: "TestBacklog,TestRecovery,TestThroughput"},
		{run: "TestWorkload/x|TestBacklog", want: "TestBacklog"},
		{run: "Test[/]Nothing|(Recovery/a)", want: ""},
		{run: "TestWorkload|Recovery/a", want: "TestRecovery"},
		{skip: "TestBacklog|TestRecovery", want: "TestThroughput"},
		{cases: "backlog,floor", want: "TestBacklog,TestRecovery"},
		{cases: "refused", want: "TestRecovery,TestThroughput"},
		{recoveryPods: -1, want: "TestBacklog,TestRecovery,TestThroughput"},
		{recoveryPods: 0, run: "Test", want: "TestBacklog,TestThroughput"},
	} {
		s := shape{run: tc.run, skip: tc.skip, cases: tc.cases, recoveryPods: tc.recoveryPods}
		if tc.recoveryPods == 0 && tc.run != "Test" {
			s.recoveryPods = 100
		}
		var got []string
		for name, ok := range s.tests() {
			if ok {
				got = append(got, name)
			}
		}
		sort.Strings(got)
		if strings.Join(got, ",") != tc.want {
			t.Errorf("-run=%q -skip=%q -case=%q -recovery-pods=%d: %v, want %s", tc.run, tc.skip, tc.cases, s.recoveryPods, got, tc.want)
		}
	}
}

// TestShapeMachine checks the parsing of /proc/meminfo and the port
// range.
func TestShapeMachine(t *testing.T) {
	mem, err := parseMemAvailable("MemTotal:       24589412 kB\nMemFree:        12812300 kB\nMemAvailable:   18903212 kB\nBuffers:  1 kB\n")
	if err != nil || mem != 18903212<<10 {
		t.Errorf("MemAvailable = %d, %v; want %d", mem, err, uint64(18903212)<<10)
	}
	for _, bad := range []string{"MemTotal: 1 kB\n", "MemAvailable: x kB\n", "MemAvailable: 12 MB\n", ""} {
		if _, err := parseMemAvailable(bad); err == nil {
			t.Errorf("parseMemAvailable(%q): no error", bad)
		}
	}
	if n, err := parsePortRange("32768\t60999\n"); err != nil || n != 28232 {
		t.Errorf("port range = %d, %v; want 28232", n, err)
	}
	for _, bad := range []string{"", "1024", "60999 32768", "0 100", "1 70000", "a b"} {
		if _, err := parsePortRange(bad); err == nil {
			t.Errorf("parsePortRange(%q): no error", bad)
		}
	}
	if m := readMachine(); m.memAvailable == 0 || m.openFiles == 0 || m.ports == 0 {
		t.Logf("this machine: %+v (a zero is not checked)", m)
	}
}
