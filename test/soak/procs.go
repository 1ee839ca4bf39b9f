package main

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

// proc is one process of the control plane or a scheduler replica,
// started (and started again) by the harness. Each start logs to a file of
// its own: NAME-N.log in the run's log folder.
type proc struct {
	name   string
	bin    string
	args   func() []string
	logDir string
	// onLine, if set, sees every line the process writes.
	onLine func(string)

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	starts   int
	started  time.Time
	logPath  string
	stopping atomic.Bool // the harness is stopping it: an exit is expected
}

func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts++
	p.logPath = filepath.Join(p.logDir, fmt.Sprintf("%s-%d.log", p.name, p.starts))
	f, err := os.Create(p.logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, p.args()...)
	w := &lineWriter{f: f, onLine: p.onLine}
	cmd.Stdout, cmd.Stderr = w, w
	// A process group of its own: a Ctrl-C in the terminal reaches the
	// harness only, which stops everything in order; and if the harness
	// dies, so do its processes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.stopping.Store(false)
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.started = cmd, exited, time.Now()
	go func() {
		_ = cmd.Wait()
		w.flush()
		f.Close()
		close(exited)
	}()
	return nil
}

func (p *proc) state() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.exited
}

func (p *proc) running() bool {
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

// kill is SIGKILL: no chance to release a Lease or finish a request.
func (p *proc) kill() {
	cmd, exited := p.state()
	if cmd == nil {
		return
	}
	p.stopping.Store(true)
	_ = cmd.Process.Kill()
	<-exited
}

// stop is SIGTERM, then SIGKILL after timeout.
func (p *proc) stop(timeout time.Duration) {
	cmd, exited := p.state()
	if cmd == nil || !p.running() {
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

// exitedUnexpectedly reports a process that ended without the harness
// stopping it.
func (p *proc) exitedUnexpectedly() bool {
	cmd, _ := p.state()
	return cmd != nil && !p.running() && !p.stopping.Load()
}

func (p *proc) exitStatus() string {
	cmd, _ := p.state()
	if cmd == nil || cmd.ProcessState == nil {
		return "running"
	}
	return cmd.ProcessState.String()
}

func (p *proc) logTail(n int) string {
	p.mu.Lock()
	path := p.logPath
	p.mu.Unlock()
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
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
	if w.onLine != nil {
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
	}
	return n, err
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.onLine != nil && len(w.buf) > 0 {
		w.onLine(string(w.buf))
		w.buf = nil
	}
}

// signal sends sig to the running process.
func (p *proc) signal(sig syscall.Signal) error {
	cmd, _ := p.state()
	if cmd == nil || !p.running() {
		return fmt.Errorf("%s is not running", p.name)
	}
	return cmd.Process.Signal(sig)
}

// startedAt is when the process was last started.
func (p *proc) startedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}
