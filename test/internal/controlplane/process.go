package controlplane

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Process is a binary the harness runs as a child process (the scheduler;
// in the soak also kube-apiserver, kube-controller-manager and kwok), and
// may start again after it ends. Each start logs stdout and stderr to a
// file of its own, LogDir/Name-N.log for the Nth start, so a restart does
// not bury what the process said before.
//
// Set the exported fields, then call Start; its methods are safe for
// concurrent use.
type Process struct {
	// Name names the process in messages and its log files.
	Name string
	// Path is the binary, Args its arguments (the same at every start).
	Path string
	Args []string
	// LogDir holds the log files.
	LogDir string
	// OnLine, if set, sees every line the process writes, as it writes it
	// (the soak watches its schedulers' logs for leadership and repairs).
	OnLine func(line string)

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the current start has exited
	starts   int
	started  time.Time
	logPath  string
	stopping atomic.Bool // the harness is stopping it: an exit is expected
}

// Start starts the process (again, if it ran before and has exited).
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts++
	p.logPath = filepath.Join(p.LogDir, fmt.Sprintf("%s-%d.log", p.Name, p.starts))
	f, err := os.Create(p.logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.Path, p.Args...)
	// Straight to the file unless someone reads along: then through a pipe
	// this process copies.
	var w *lineWriter
	if p.OnLine != nil {
		w = &lineWriter{f: f, onLine: p.OnLine}
		cmd.Stdout, cmd.Stderr = w, w
	} else {
		cmd.Stdout, cmd.Stderr = f, f
	}
	// A process group of its own: a Ctrl-C in the terminal reaches the
	// harness only, which stops everything in order; and if the harness
	// dies (a test's timeout panic), so do its processes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.stopping.Store(false)
	// Taken before the start, so that a time measured from it (the perf
	// tier's time to the first decision) includes starting the process.
	started := time.Now()
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.started = cmd, exited, started
	go func() {
		_ = cmd.Wait()
		if w != nil {
			w.flush()
		}
		f.Close()
		close(exited)
	}()
	return nil
}

func (p *Process) state() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.exited
}

// Running reports whether the process has been started and not exited.
func (p *Process) Running() bool {
	_, exited := p.state()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// Kill is SIGKILL, and waits for the exit: the process has no chance to
// release a Lease or finish a request.
func (p *Process) Kill() {
	cmd, exited := p.state()
	if cmd == nil {
		return
	}
	p.stopping.Store(true)
	_ = cmd.Process.Kill()
	<-exited
}

// Stop is SIGTERM, then SIGKILL if the process has not exited after
// timeout; it waits for the exit.
func (p *Process) Stop(timeout time.Duration) {
	cmd, exited := p.state()
	if cmd == nil || !p.Running() {
		return
	}
	p.stopping.Store(true)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Signal sends sig to the running process (SIGSTOP and SIGCONT freeze
// and thaw it).
func (p *Process) Signal(sig syscall.Signal) error {
	cmd, _ := p.state()
	if cmd == nil || !p.Running() {
		return fmt.Errorf("%s is not running", p.Name)
	}
	return cmd.Process.Signal(sig)
}

// ExitedUnexpectedly reports a process that ended without Stop or Kill.
func (p *Process) ExitedUnexpectedly() bool {
	cmd, _ := p.state()
	return cmd != nil && !p.Running() && !p.stopping.Load()
}

// ExitStatus is how the last start ended ("exit status 1", "signal:
// killed"), or "running".
func (p *Process) ExitStatus() string {
	cmd, _ := p.state()
	if cmd == nil || cmd.ProcessState == nil {
		return "running"
	}
	return cmd.ProcessState.String()
}

// StartedAt is when the process was last started.
func (p *Process) StartedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// Pid is the process id of the last start (0 before the first), for
// reading its CPU time and memory from /proc.
func (p *Process) Pid() int {
	cmd, _ := p.state()
	if cmd == nil {
		return 0
	}
	return cmd.Process.Pid
}

// Log returns what the last start has logged so far.
func (p *Process) Log() string {
	p.mu.Lock()
	path := p.logPath
	p.mu.Unlock()
	b, _ := os.ReadFile(path)
	return string(b)
}

// LogTail returns the last n lines of Log.
func (p *Process) LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(p.Log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lineWriter writes to a file and hands complete lines to onLine.
type lineWriter struct {
	mu     sync.Mutex
	f      *os.File
	onLine func(string)
	buf    []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.f.Write(b)
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.onLine(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 1<<16 {
		w.buf = w.buf[:0]
	}
	return n, err
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.onLine(string(w.buf))
		w.buf = nil
	}
}
