package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/userquota/userquota/pkg/queueconfig"
)

// runValidate is `userquotactl validate FILE`. The problems are the
// command's result, so they go to stdout like the summary; stderr is for
// failing to read the file.
func (c *cli) validate(args []string) int {
	stdout := c.stdout
	fs := newFlagSet("validate")
	var trees treeFiles
	fs.Var(&trees, "tree", "a quota tree (QuotaTree JSON) beside the config, validated with it; repeat for a forest (docs/forests.md)")
	if code, ok := c.parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return c.badArgs(fmt.Sprintf("validate takes one FILE, got %d arguments", fs.NArg()))
	}
	data, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		c.errorf("%v", err)
		return exitFailed
	}
	treeJSON, err := trees.read()
	if err != nil {
		c.errorf("%v", err)
		return exitFailed
	}
	cfg, err := queueconfig.LoadWithTrees(data, treeJSON, "")
	if err != nil {
		for _, p := range queueconfig.Problems(err) {
			fmt.Fprintln(stdout, printable(p, false))
		}
		return exitFailed
	}
	fmt.Fprintln(stdout, summary(cfg))
	for _, n := range cfg.Notices {
		fmt.Fprintln(stdout, "note: "+printable(n, false))
	}
	return exitOK
}

// summary counts what a valid config holds: "valid: 1 partition, 7 queues,
// 5 limits" (root is a queue; a limit is one entry of a queue's limits).
func summary(cfg *queueconfig.Config) string {
	queues, limits := 0, 0
	for _, p := range cfg.Partitions {
		p.Walk(func(q *queueconfig.Queue) {
			queues++
			limits += len(q.Limits)
		})
	}
	out := fmt.Sprintf("valid: %s, %s, %s",
		plural(len(cfg.Partitions), "partition"), plural(queues, "queue"), plural(limits, "limit"))
	if len(cfg.Trees) > 0 {
		nodes := 0
		for _, t := range cfg.Trees {
			nodes += t.Len()
		}
		out += fmt.Sprintf(", %s of %s", plural(len(cfg.Trees), "quota tree"), plural(nodes, "node"))
	}
	return out
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// newFlagSet returns a flag set that reports nothing itself: run prints
// the errors and the usage in one place.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args; ok false means run must return code: 0 after
// printing the usage for -h, 2 after a flag error.
func (c *cli) parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(c.stdout, c.usage())
		return exitOK, false
	default:
		return c.badArgs(fs.Name() + ": " + err.Error()), false
	}
}
