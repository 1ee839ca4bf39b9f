// Command userquotactl checks YuniKorn queue configs and replays pod traces
// against them with the scheduler's own quota code, so an operator can see
// what a config will admit and refuse before rolling it out.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// Exit codes.
const (
	exitOK      = 0 // done (for simulate: the trace was read to the end)
	exitFailed  = 1 // invalid config, or a file could not be read
	exitBadArgs = 2 // the command line is wrong
)

const usage = `userquotactl checks YuniKorn queue configs and replays pod traces against them.

Usage:
  userquotactl validate FILE
  userquotactl simulate --config FILE --trace FILE [--partition NAME]
  userquotactl help

Commands:
  validate  Parse and validate a queue-config YAML file. Prints a summary and
            any notes when it is valid (exit 0), else every problem, one per
            line (exit 1).
  simulate  Replay a JSON Lines trace of allocate, release and config ops
            through the scheduler's quota code. Prints one JSON line per
            trace line, then a usage snapshot. Exit 0 when the trace was read
            to the end, whatever was decided; 1 when a file cannot be read or
            the config is invalid (its problems on stderr).

Flags for simulate:
  --config FILE     the initial queue config (required)
  --trace FILE      the trace, one JSON object per line (required)
  --partition NAME  the config partition to enforce (default "default")

Exit code 2 means the command line was wrong.
`

// run is the whole command, testable without a process: it returns the exit
// code instead of exiting.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBadArgs
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "validate":
		return runValidate(rest, stdout, stderr)
	case "simulate":
		return runSimulate(rest, stdout, stderr)
	default:
		return badArgs(stderr, fmt.Sprintf("unknown command %q", cmd))
	}
}

// badArgs reports a command-line mistake with the usage.
func badArgs(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "userquotactl: %s\n\n%s", msg, usage)
	return exitBadArgs
}
