package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/userquota/userquota/pkg/simulator"
)

// simulate is `userquotactl simulate --config FILE --trace FILE
// [--partition NAME] [--requeue [--starvation D]]`: the decisions go to
// stdout as JSON lines, anything that stops the replay goes to stderr.
// --requeue holds refused pods and lets them in as the scheduler does
// (simulator.Options.Requeue), gangs' pods included; --starvation is the
// scheduler's starvationWait (simulator.Options.Starvation). Gang lines
// need no flag: without --requeue a gang's refused pods are forgotten
// like any refused pod (docs/simulator.md, "Gangs").
func (c *cli) simulate(args []string) int {
	stdout, stderr := c.stdout, c.stderr
	fs := newFlagSet("simulate")
	cfgPath := fs.String("config", "", "the initial queue config")
	tracePath := fs.String("trace", "", "the trace")
	partition := fs.String("partition", simulator.DefaultPartition, "the partition to enforce")
	requeue := fs.Bool("requeue", false, "hold refused pods (they count as demand) and let them in as the scheduler does after release, config and capacity lines and gang timeouts")
	starvation := fs.Duration("starvation", simulator.DefaultStarvation, "with --requeue: how long a held pod waits (on the clock of time and wait lines) before the room it needs is kept for it; 0 turns it off")
	estimates := fs.Bool("estimates", false, "with --requeue: estimate each held pod's wait as the scheduler's explanation would, compare with its let-in, and print a summary line after the snapshot")
	var trees treeFiles
	fs.Var(&trees, "tree", "a quota tree (QuotaTree JSON) beside the config; repeat for a forest (docs/forests.md)")
	fairness := fs.Bool("fairness", false, "print, after the snapshot, Jain's fairness index over the users' dominant shares, sampled after every line and completion (docs/fairness.md)")
	if code, ok := c.parseFlags(fs, args); !ok {
		return code
	}
	var missing []string
	if *cfgPath == "" {
		missing = append(missing, "--config")
	}
	if *tracePath == "" {
		missing = append(missing, "--trace")
	}
	switch {
	case len(missing) > 0:
		return c.badArgs("simulate: missing " + strings.Join(missing, " and "))
	case fs.NArg() > 0:
		return c.badArgs(fmt.Sprintf("simulate: unexpected argument %q", fs.Arg(0)))
	case *partition == "":
		return c.badArgs("simulate: --partition must not be empty")
	case *estimates && !*requeue:
		return c.badArgs("simulate: --estimates needs --requeue (only held pods wait)")
	case *starvation < 0:
		return c.badArgs(fmt.Sprintf("simulate: --starvation %s is negative (0 turns it off)", *starvation))
	}

	cfg, err := os.ReadFile(*cfgPath)
	if err != nil {
		c.errorf("%v", err)
		return exitFailed
	}
	treeJSON, err := trees.read()
	if err != nil {
		c.errorf("%v", err)
		return exitFailed
	}
	trace, err := os.Open(*tracePath)
	if err != nil {
		c.errorf("%v", err)
		return exitFailed
	}
	defer trace.Close()

	err = simulator.Run(cfg, trace, stdout, simulator.Options{Partition: *partition, Log: stderr, Requeue: *requeue, Starvation: *starvation, Estimates: *estimates, Fairness: *fairness, Trees: treeJSON})
	var cfgErr *simulator.ConfigError
	switch {
	case errors.As(err, &cfgErr):
		// Exactly the problems, one per line, as the contract says.
		for _, e := range cfgErr.Errs {
			fmt.Fprintln(stderr, e)
		}
		return exitFailed
	case err != nil:
		c.errorf("%s: %v", *tracePath, err)
		return exitFailed
	}
	return exitOK
}
