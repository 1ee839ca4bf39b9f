package simulator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/userquota/userquota/pkg/fairshare"
	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/placement"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// DefaultPartition is the partition replayed when Options.Partition is empty:
// the one YuniKorn and the scheduler use by default.
const DefaultPartition = queueconfig.DefaultPartition

// DefaultStarvation is the starvation wait `userquotactl simulate` uses
// without --starvation: the scheduler plugin's starvationWait default.
const DefaultStarvation = hold.DefaultStarvation

// Options tune a replay.
type Options struct {
	// Partition names the config partition whose limits apply; empty means
	// DefaultPartition. A config without it is invalid for this replay.
	Partition string
	// Log receives what is not part of the contract's output: config
	// notices ("note: ...") and inconsistencies ugm reports on release.
	// Nil discards them.
	Log io.Writer
	// Requeue holds refused pods, as the scheduler's PreEnqueue does: they
	// count as their queue's demand (except while refused by a user or
	// group limit) and are let in, in the plugin's order, after the
	// release, config and capacity lines that may make room for them; each
	// admission prints its allow line then. The snapshot then lists the
	// pods still held.
	Requeue bool
	// Starvation is the plugin's starvationWait: once a held pod has
	// waited longer on the simulated clock (time and wait lines), the
	// room it needs is kept and pods behind it on the limit that holds it
	// are held too. 0 turns it off (the zero Options); the command's
	// default is DefaultStarvation. Only Requeue holds pods.
	Starvation time.Duration
	// Estimates gives each pod held for the first time the estimate of
	// its wait the scheduler's explanation would give (pkg/estimate),
	// compares it with the pod's let-in, and prints a summary line after
	// the snapshot: how far the estimates were off (p50 and p90 absolute
	// error). Only Requeue holds pods.
	Estimates bool
	// Trees are quota trees beside the initial config: where each was read
	// from (a file) to its QuotaTree JSON (docs/forests.md). Nil: none.
	Trees map[string]string
	// Fairness prints, after the snapshot (and the estimates' line), Jain's
	// fairness index over the users' dominant shares: sampled after every
	// line and every completion, its mean over the samples and over the
	// simulated time, its least and its last (docs/simulator.md).
	Fairness bool
}

// ConfigError is returned by Run when the initial config is invalid or
// lacks the partition: nothing was replayed. Errs has one problem each, in
// the parser's order, so a CLI can print them one per line.
type ConfigError struct {
	Errs []string
}

// Error lists the problems one per line.
func (e *ConfigError) Error() string { return strings.Join(e.Errs, "\n") }

// Run parses cfgText as the initial queue config, replays trace through a
// fresh ugm.Manager and ledger.Ledger, and writes one JSON line per
// non-blank trace line to out, then the usage snapshot. Decisions, refusals
// and bad lines are output, not errors: Run returns an error only when the
// initial config is invalid (*ConfigError), the trace cannot be read, or out
// cannot be written.
func Run(cfgText []byte, trace io.Reader, out io.Writer, opts Options) error {
	w := bufio.NewWriter(out)
	s, err := newSim(cfgText, opts, w)
	if err != nil {
		return err
	}
	if err := s.replay(bufio.NewReader(trace)); err != nil {
		// Keep the lines decided before the failure: they are still true.
		_ = w.Flush()
		return err
	}
	m := s.ledger.Manager()
	s.emit(snapshot{Users: m.Users(), Groups: m.Groups(), Queues: m.Queues(), Trees: m.Forest(), Pending: s.pendingNames()})
	if s.est != nil {
		s.emit(s.est.summary())
	}
	if s.index != nil {
		s.emit(s.index.summary())
	}
	if s.werr != nil {
		return s.werr
	}
	return w.Flush()
}

// newSim starts a replay under the initial config cfgText, writing to out.
// Tests step it line by line to look at ugm between lines.
func newSim(cfgText []byte, opts Options, out io.Writer) (*sim, error) {
	if opts.Partition == "" {
		opts.Partition = DefaultPartition
	}
	s := &sim{opts: opts, ledger: ledger.New(ugm.New()), book: hold.NewBook(opts.Starvation), now: simStart,
		pendingByName: map[string]*pendingPod{}, gangs: newGangs(), running: map[string]uint64{}, live: map[string]liveInfo{}}
	// The usage history of fair order, on the simulated clock, told every
	// charge and release as the plugin's.
	s.fair = fairshare.New(simClock{s}, func() *queueconfig.Partition { return s.partition })
	if opts.Fairness {
		s.index = newJainIndex()
	}
	s.ledger.Observe(observers{history: s.fair, index: s.index})
	s.book.SetFair(s.fair)
	cfg, part, errs := loadConfig(cfgText, opts.Trees, opts.Partition)
	if errs != nil {
		return nil, &ConfigError{Errs: errs}
	}
	s.logNotices("config", cfg.Notices)
	s.setConfig(cfg, part)
	if opts.Estimates {
		s.est = newEstimates()
	}
	s.enc = json.NewEncoder(out)
	s.enc.SetEscapeHTML(false)
	return s, nil
}

// sim is the state of one replay.
type sim struct {
	opts   Options
	ledger *ledger.Ledger
	// partition is the config partition in force; policy its placement.
	partition *queueconfig.Partition
	policy    *placement.Policy
	enc       *json.Encoder
	// werr is the first error writing the output (emit): the replay
	// stops at it.
	werr error
	// capacity is the cluster's capacity of the last capacity line; nil
	// (unbounded) until one.
	capacity resources.Limit
	// now is the simulated clock: simStart moved on by the time (and
	// wait) lines.
	now time.Time
	// book holds the pods refused under Options.Requeue, indexed and
	// ordered for letting in as the plugin's; pendingByName are the same
	// pods by name, with what the simulator keeps of them.
	book          *hold.Book
	pendingByName map[string]*pendingPod
	// gangs are the gangs the gang lines declared.
	gangs gangs
	// est is what Options.Estimates keeps; nil without it.
	est *estimates
	// fair is the usage history of fair order; index what
	// Options.Fairness samples (nil without it).
	fair  *fairshare.History
	index *jainIndex
	// ends are the completions of pods with a runtime; running the charge
	// each completion belongs to (by pod name), seq the last one.
	ends    completions
	running map[string]uint64
	// live is what a tree preemption orders victims by, per pod allowed
	// (forest.go).
	live map[string]liveInfo
	seq  uint64
}

// emit writes one output line. Lines come from deep in a decision (a
// gang's line before its pod's, a let-in's allow line), so the first
// write error is kept in werr for the replay to stop at.
func (s *sim) emit(v any) {
	if s.werr == nil {
		s.werr = s.enc.Encode(v)
	}
}

// setPartition puts a validated partition in force, in ugm and for
// placement, as the plugin swaps its config.
func (s *sim) setConfig(cfg *queueconfig.Config, p *queueconfig.Partition) {
	s.partition = p
	s.policy = placement.New(p, defaultQueue)
	// The whole config, its quota trees included; the usage history
	// follows it (ledger.Syncer).
	if err := s.ledger.Enforce(cfg, p.Name); err != nil {
		panic(err) // loadConfig found the partition in cfg
	}
}

// replay reads the trace to the end, one output line per non-blank line.
// Lines may be of any length (a config op carries a whole YAML file) and
// may end in "\r\n"; the last line needs no newline.
func (s *sim) replay(r *bufio.Reader) error {
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("read trace line %d: %w", n, err)
		}
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\ufeff")) // a byte order mark
		}
		if !isBlank(line) {
			if err := s.step(n, line); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// step carries out trace line n and what follows it, printing its
// output; it returns the first error writing the output.
func (s *sim) step(n int, line []byte) error {
	out, next := s.apply(n, line)
	s.emit(out)
	if next != nil {
		s.after(next)
	}
	s.letInOpened()
	s.sample()
	return s.werr
}

// apply carries out one trace line and returns its output line, and what
// follows it (nil: nothing): the clock a time or wait line moves to, the
// gang a release left without pods, and which held pods it may let in, as
// the scheduler's events do: a release lets in those its room may admit,
// an applied config and a capacity line every held pod. A line error, a
// rejected config and a release of a pod not live (or held: a withdrawal)
// free nothing.
func (s *sim) apply(n int, data []byte) (any, *freed) {
	l, err := decodeLine(data)
	if err != nil {
		return lineError{Line: n, Error: err.Error()}, nil
	}
	switch l.Op {
	case opAllocate:
		return s.allocate(n, l), nil
	case opShares:
		return s.sharesShow(), nil
	case opTime:
		return s.clock(n, l, opTime)
	case opWait:
		return s.clock(n, l, opWait)
	case opGang:
		return s.declareGang(n, l), nil
	case opRelease:
		return s.release(n, l)
	case opConfig:
		out := s.config(n, l)
		if c, ok := out.(configLine); ok && c.Config == "applied" {
			return out, &freed{all: true}
		}
		return out, nil
	case opCapacity:
		out := s.capacitySet(n, l)
		if _, bad := out.(lineError); bad {
			return out, nil
		}
		return out, &freed{all: true}
	case "":
		// The wording predates the capacity, shares and wait ops; golden
		// files pin it.
		return lineError{Line: n, Error: `missing "op" (allocate, release or config)`}, nil
	default:
		// It does not name the time op yet: testdata/traces/bad-lines
		// pins the wording.
		return lineError{Line: n, Error: fmt.Sprintf("unknown op %q (want allocate, release, config, capacity, shares, time, wait or gang)", l.Op)}, nil
	}
}

// release gives back a live pod's charge and returns what it freed. A
// held pod (Options.Requeue) was never admitted: the release withdraws
// it, and it was not live; it frees nothing but its gang's reservation
// when it was the gang's last pod.
func (s *sim) release(n int, l *traceLine) (any, *freed) {
	if l.Pod == "" {
		return lineError{Line: n, Error: `release: missing "pod"`}, nil
	}
	if p := s.pendingByName[l.Pod]; p != nil {
		s.dropPending(p)
		s.estimateDrop(p.name)
		return releasedLine{Pod: l.Pod, Released: false}, &freed{gone: s.leave(l.Pod), withdrawn: p.name}
	}
	// The shares before the release, to tell whether it changed one (the
	// plugin's recompute lets in the pods held by a share then).
	before := s.sharesBeforeRelease()
	delete(s.running, l.Pod)
	c, ok, err := s.ledger.Release(l.Pod)
	if err != nil {
		s.logf("line %d: release %s: %v\n", n, l.Pod, err)
	}
	out := releasedLine{Pod: l.Pod, Released: ok}
	if !ok {
		return out, nil
	}
	s.completed(&c)
	return out, &freed{released: &c.Request, sharesBefore: before, gone: s.leave(l.Pod)}
}

// clock is the time op, {"op":"time","advance":"90s"}, and the wait op,
// {"op":"wait","duration":"90s"}, its older name (op says which): the
// simulated clock moves on by the line's duration after the line is
// printed (advance), firing the gang timeouts it passes. Time alone lets
// no pod in but by those timeouts; it makes held pods starve. A time line
// prints {"advance":"1m30s"}, a wait line {"wait":"1m30s"}: the duration
// as Go prints it. Each op reads its own field only; a line that gives
// the other op's field instead is told so.
func (s *sim) clock(n int, l *traceLine, op string) (any, *freed) {
	field, value, otherOp, otherField, other := "advance", l.Advance, opWait, "duration", l.Duration
	if op == opWait {
		field, value, otherOp, otherField, other = "duration", l.Duration, opTime, "advance", l.Advance
	}
	if value == nil {
		msg := fmt.Sprintf("%s: missing %q (a Go duration, e.g. \"90s\" or \"3m\")", op, field)
		if other != nil {
			msg += fmt.Sprintf("; %q is the %s op's", otherField, otherOp)
		}
		return lineError{Line: n, Error: msg}, nil
	}
	d, err := time.ParseDuration(*value)
	if err != nil {
		return lineError{Line: n, Error: fmt.Sprintf("%s: bad %q %q (a Go duration, e.g. \"90s\" or \"3m\")", op, field, *value)}, nil
	}
	if d < 0 {
		return lineError{Line: n, Error: fmt.Sprintf("%s: %q %q is negative: the clock only moves on", op, field, *value)}, nil
	}
	next := &freed{until: s.now.Add(d)}
	if op == opTime {
		return advanceLine{Advance: d.String()}, next
	}
	return waitLine{Wait: d.String()}, next
}

func (s *sim) config(n int, l *traceLine) any {
	if l.Config == nil {
		return lineError{Line: n, Error: `config: missing "config" (the queue-config YAML text)`}
	}
	trees, err := configTrees(l.Trees)
	if err != nil {
		return lineError{Line: n, Error: "config: " + err.Error()}
	}
	cfg, part, errs := loadConfig([]byte(*l.Config), trees, s.opts.Partition)
	if errs != nil {
		return configLine{Config: "rejected", Errors: errs}
	}
	s.logNotices(fmt.Sprintf("line %d", n), cfg.Notices)
	s.setConfig(cfg, part)
	// The plugin drops all room held on a config change, gang
	// reservations too: a gang's next pod reserves under the new config.
	s.ledger.Manager().UnadmitAll()
	s.refreshPending()
	return configLine{Config: "applied"}
}

func (s *sim) logNotices(where string, notices []string) {
	for _, note := range notices {
		s.logf("%s: note: %s\n", where, note)
	}
}

func (s *sim) logf(format string, args ...any) {
	if s.opts.Log != nil {
		fmt.Fprintf(s.opts.Log, format, args...)
	}
}
