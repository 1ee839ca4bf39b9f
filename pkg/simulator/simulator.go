package simulator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/placement"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// DefaultPartition is the partition replayed when Options.Partition is empty:
// the one YuniKorn and the scheduler use by default.
const DefaultPartition = "default"

// Options tune a replay.
type Options struct {
	// Partition names the config partition whose limits apply; empty means
	// DefaultPartition. A config without it is invalid for this replay.
	Partition string
	// Log receives what is not part of the contract's output: config
	// notices ("note: ...") and inconsistencies ugm reports on release.
	// Nil discards them.
	Log io.Writer
	// Requeue keeps refused pods pending: they count as their queue's
	// demand (except while refused by a user or group limit) and are
	// retried, in trace order, after every release, config and capacity
	// line until none gets in; each admission prints its allow line then.
	// The snapshot then lists the pods still pending.
	Requeue bool
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
	if opts.Partition == "" {
		opts.Partition = DefaultPartition
	}
	s := &sim{opts: opts, ledger: ledger.New(ugm.New())}
	part, notices, errs := loadPartition(cfgText, opts.Partition)
	if errs != nil {
		return &ConfigError{Errs: errs}
	}
	s.logNotices("config", notices)
	s.setPartition(part)

	w := bufio.NewWriter(out)
	s.enc = json.NewEncoder(w)
	s.enc.SetEscapeHTML(false)
	if err := s.replay(bufio.NewReader(trace)); err != nil {
		// Keep the lines decided before the failure: they are still true.
		_ = w.Flush()
		return err
	}
	m := s.ledger.Manager()
	snap := snapshot{Users: m.Users(), Groups: m.Groups(), Queues: m.Queues(), Pending: s.pendingNames()}
	if err := s.enc.Encode(snap); err != nil {
		return err
	}
	return w.Flush()
}

// sim is the state of one replay.
type sim struct {
	opts   Options
	ledger *ledger.Ledger
	// policy is the placement of the partition in force.
	policy *placement.Policy
	enc    *json.Encoder
	// capacity is the cluster's capacity of the last capacity line; nil
	// (unbounded) until one.
	capacity resources.Limit
	// pending are the pods waiting under Options.Requeue, in trace order.
	pending       []*pendingPod
	pendingByName map[string]*pendingPod
}

// setPartition puts a validated partition in force, in ugm and for
// placement, as the plugin swaps its config.
func (s *sim) setPartition(p *queueconfig.Partition) {
	s.policy = placement.New(p, defaultQueue)
	s.ledger.Manager().SetConfig(p)
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
			out, retry := s.apply(n, line)
			if werr := s.enc.Encode(out); werr != nil {
				return werr
			}
			if retry && s.opts.Requeue {
				if werr := s.retry(); werr != nil {
					return werr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// apply carries out one trace line and returns its output line, and
// whether pending pods are retried after it: after a release, config or
// capacity op that was carried out (whatever it decided: a release of a
// pod not live and a rejected config too), not after a line error.
func (s *sim) apply(n int, data []byte) (any, bool) {
	l, err := decodeLine(data)
	if err != nil {
		return lineError{Line: n, Error: err.Error()}, false
	}
	var out any
	switch l.Op {
	case opAllocate:
		return s.allocate(n, l), false
	case opShares:
		return s.sharesShow(), false
	case opRelease:
		out = s.release(n, l)
	case opConfig:
		out = s.config(n, l)
	case opCapacity:
		out = s.capacitySet(n, l)
	case "":
		// The wording predates the capacity and shares ops; golden
		// files pin it.
		return lineError{Line: n, Error: `missing "op" (allocate, release or config)`}, false
	default:
		return lineError{Line: n, Error: fmt.Sprintf("unknown op %q (want allocate, release, config, capacity or shares)", l.Op)}, false
	}
	_, bad := out.(lineError)
	return out, !bad
}

func (s *sim) release(n int, l *traceLine) any {
	if l.Pod == "" {
		return lineError{Line: n, Error: `release: missing "pod"`}
	}
	// A pending pod (Options.Requeue) was never admitted: the release
	// withdraws it, and it was not live.
	if p := s.pendingByName[l.Pod]; p != nil {
		s.dropPending(p)
		return releasedLine{Pod: l.Pod, Released: false}
	}
	_, ok, err := s.ledger.Release(l.Pod)
	if err != nil {
		s.logf("line %d: release %s: %v\n", n, l.Pod, err)
	}
	return releasedLine{Pod: l.Pod, Released: ok}
}

func (s *sim) config(n int, l *traceLine) any {
	if l.Config == nil {
		return lineError{Line: n, Error: `config: missing "config" (the queue-config YAML text)`}
	}
	part, notices, errs := loadPartition([]byte(*l.Config), s.opts.Partition)
	if errs != nil {
		return configLine{Config: "rejected", Errors: errs}
	}
	s.logNotices(fmt.Sprintf("line %d", n), notices)
	s.setPartition(part)
	s.refreshPending()
	return configLine{Config: "applied"}
}

// loadPartition parses and validates a whole config and picks the
// partition. On failure it returns every problem, one per element.
func loadPartition(text []byte, name string) (*queueconfig.Partition, []string, []string) {
	cfg, err := queueconfig.Parse(text)
	if err != nil {
		problems := queueconfig.Problems(err)
		if len(problems) == 0 {
			problems = []string{"invalid config"}
		}
		return nil, nil, problems
	}
	p := cfg.Partition(name)
	if p == nil {
		return nil, nil, []string{fmt.Sprintf("partition %q is not in the config", name)}
	}
	return p, cfg.Notices, nil
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
