// Command userquotactl checks YuniKorn queue configs and replays pod traces
// against them with the scheduler's own quota code, so an operator can see
// what a config will admit and refuse before rolling it out, and shows the
// live usage a running scheduler serves.
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

const usage = `userquotactl checks YuniKorn queue configs, replays pod traces against them
and shows a scheduler's live usage.

Usage:
  userquotactl validate FILE
  userquotactl simulate --config FILE --trace FILE [--partition NAME] [--requeue] [--starvation D]
  userquotactl usage --server URL [--user NAME | --group NAME | --me] [-o tree|json]
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
  usage     Show the live usage from the scheduler's REST API: the queues,
            every user and every group (or one, with --user or --group), as
            tables of usage/limit (percent) per resource; rows at or over 90%
            of a limit start with "!". --me shows only your own usage and
            your groups', and needs no RBAC on the API, only your token.
            Exit 1 when the server cannot be read or does not know the user
            or group.

Flags for simulate:
  --config FILE     the initial queue config (required)
  --trace FILE      the trace, one JSON object per line (required)
  --partition NAME  the config partition to enforce (default "default")
  --requeue         hold refused pods (they count as demand) and let them in
                    as the scheduler does after release, config and capacity
                    lines, in its order (docs/simulator.md)
  --starvation D    with --requeue: a held pod waiting longer than D (on the
                    clock of time lines) keeps the room it needs; 0 turns it
                    off (default 2m0s, the scheduler's starvationWait)

Flags for usage:
  --server URL                 the REST API, e.g. http://127.0.0.1:9089 (required)
  --user NAME | --group NAME   one user or one group (default: everything)
  --me                         the caller's own usage and their groups' (the
                               user the token authenticates as)
  -o tree|json                 tables (default), or the server's JSON
  --partition NAME             the partition (default "default")
  --token TOKEN                bearer token (a server with restAuth: true)
  --token-file FILE            read the bearer token from FILE
  --ca-file FILE               CA certificates to verify an https server with
  --insecure-skip-tls-verify   do not verify the https server's certificate
  --timeout DURATION           per request (default 10s)

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
	case "usage":
		return runUsage(rest, stdout, stderr)
	default:
		return badArgs(stderr, fmt.Sprintf("unknown command %q", cmd))
	}
}

// badArgs reports a command-line mistake with the usage.
func badArgs(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "userquotactl: %s\n\n%s", msg, usage)
	return exitBadArgs
}
