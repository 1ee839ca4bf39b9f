// Package cli is the command tree of userquotactl and of the kubectl
// plugin kubectl-userquota (one tree, two binaries: cmd/userquotactl,
// cmd/kubectl-userquota): it checks YuniKorn queue configs and replays pod
// traces against them with the scheduler's own quota code, so an operator
// can see what a config will admit and refuse before rolling it out, shows
// the live usage a running scheduler serves, and explains where a pod
// stands (why) and a queue's line of held pods (held).
package cli

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Names the command tree is called by.
const (
	// Ctl is userquotactl's.
	Ctl = "userquotactl"
	// Plugin is the kubectl plugin's, as users type it (the binary is
	// kubectl-userquota).
	Plugin = "kubectl userquota"
)

// Main runs the command tree with args as prog (Ctl or Plugin: the name
// usage and messages show) and returns the exit code.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	c := &cli{prog: prog, stdout: stdout, stderr: stderr, kube: loadKube}
	return c.run(args)
}

// cli is one run of the command tree: the name it is called by, where it
// writes, and how it reaches the Kubernetes API (kube; tests fake it).
type cli struct {
	prog           string
	stdout, stderr io.Writer
	kube           kubeLoader
	// now is the time "ago" is counted from (nil: the clock's).
	now func() time.Time
}

// errorf prints a failure, one line after the program's name.
func (c *cli) errorf(format string, args ...any) {
	fmt.Fprintf(c.stderr, "%s: %s\n", c.prog, printable(fmt.Sprintf(format, args...), false))
}

// usage is the usage text under the program's name.
func (c *cli) usage() string { return strings.ReplaceAll(usageText, Ctl, c.prog) }

// Exit codes.
const (
	exitOK      = 0 // done (for simulate: the trace was read to the end)
	exitFailed  = 1 // invalid config, or a file could not be read
	exitBadArgs = 2 // the command line is wrong
)

const usageText = `userquotactl checks YuniKorn queue configs, replays pod traces against them,
shows a scheduler's live usage and explains where a pod stands.

Usage:
  userquotactl why POD [-n NAMESPACE] [--server URL] [-o text|json]
  userquotactl held QUEUE [--offset N] [--limit N] [--server URL] [-o table|json]
  userquotactl usage --server URL [--user NAME | --group NAME | --me] [-o tree|json]
  userquotactl usage report --server URL [--from T] [--to T] [--by queue|group|user] [--format table|csv|json]
  userquotactl validate FILE [--tree FILE]...
  userquotactl simulate --config FILE --trace FILE [--partition NAME] [--tree FILE]... [--requeue [--starvation D] [--estimates]]
  userquotactl help

Commands:
  why       Explain a pod of the scheduler: for a waiting pod what holds it
            (user, group, queue, gang or share; limit, usage, request, max),
            its place among the held pods of its queue in let-in order, what
            would let it in (how much must be released where, and whose
            running pods hold it, as far as you may see them) and when (an
            estimate from the completions seen on that limit, with its
            measured accuracy, or why none can be made); for a running pod
            what it is charged to and whether it borrows (could be taken
            back). It reads the pod through the Kubernetes API as you (your
            kubeconfig), then the scheduler's REST API, which shows your own
            pods without RBAC and anyone's with get on /ws/v1/*. Exit 1 when
            the pod cannot be read, is not the scheduler's, or the server
            does not explain it.
  held      List the pods held by quota in a leaf queue (its full path, e.g.
            root.batch), in the order they are let in. Needs get on /ws/v1/*.
  usage     Show the live usage from the scheduler's REST API: the queues,
            every user and every group (or one, with --user or --group), as
            tables of usage/limit (percent) per resource; rows at or over 90%
            of a limit start with "!". --me shows only your own usage and
            your groups', and needs no RBAC on the API, only your token.
            Exit 1 when the server cannot be read or does not know the user
            or group.
  usage report
            Report the resource-hours each queue, group or user used over a
            window, split into within its queue's guaranteed share,
            borrowed above it and unshared (no share in force), and each
            queue's idle guaranteed capacity (docs/accounting.md), as a
            table of resource-hours, or CSV or JSON in resource-seconds
            (cpu core-seconds, memory byte-seconds). Each end of the window
            is the latest snapshot at or before it (hourly for 48 hours,
            00:00 UTC for 35 days); the report says which. Needs get on
            /ws/v1/*. Exit 1 when the server cannot be read or refuses the
            window.
  validate  Parse and validate a queue-config YAML file, with the quota trees
            (QuotaTree JSON) each --tree names beside it. Prints a summary
            and any notes when it is valid (exit 0), else every problem, one
            per line (exit 1).
  simulate  Replay a JSON Lines trace of allocate, release and config ops
            through the scheduler's quota code. Prints one JSON line per
            trace line, then a usage snapshot. Exit 0 when the trace was read
            to the end, whatever was decided; 1 when a file cannot be read or
            the config is invalid (its problems on stderr).

Flags for why and held:
  -n, --namespace NAME         (why) the pod's namespace (default: the
                               kubeconfig context's, else "default")
  --kubeconfig FILE            the kubeconfig (default: $KUBECONFIG, else
                               ~/.kube/config)
  --context NAME               the kubeconfig context (default: current)
  --scheduler-name NAME        (why) the scheduler's name in pods'
                               spec.schedulerName (default
                               "userquota-scheduler")
  --server URL                 the scheduler's REST API (default
                               $USERQUOTA_SERVER; required one way or other)
  --offset N, --limit N        (held) the page: from position N+1, at most N
                               pods (defaults 0 and 100)
  -o text|table|json           the explanation or table (default), or the
                               server's JSON
  --token TOKEN, --token-file FILE
                               bearer token for the REST API; without them
                               your kubeconfig's credentials are sent (a
                               token, a token file, or an exec plugin's)
  --partition, --ca-file, --tls-server-name, --insecure-skip-tls-verify,
  --timeout                    as for usage

Flags for usage:
  --server URL                 the REST API, e.g. http://127.0.0.1:9089
                               (default $USERQUOTA_SERVER; required one way
                               or other)
  --user NAME | --group NAME   one user or one group (default: everything)
  --me                         the caller's own usage and their groups' (the
                               user the token authenticates as)
  -o tree|json                 tables (default), or the server's JSON
  --partition NAME             the partition (default "default")
  --token TOKEN                bearer token (a server with restAuth: true)
  --token-file FILE            read the bearer token from FILE
  --ca-file FILE               CA certificates to verify an https server with
  --tls-server-name NAME       the name to verify the server's certificate
                               for (through a port-forward: its Service's,
                               userquota-scheduler-rest.userquota-system.svc)
  --insecure-skip-tls-verify   do not verify the https server's certificate
  --timeout DURATION           per request (default 10s)

Flags for usage report (and --server, --partition, --token, --token-file,
--ca-file, --tls-server-name, --insecure-skip-tls-verify, --timeout as for
usage):
  --from T, --to T             the window: an RFC 3339 time, a date (00:00
                               UTC), now, or -DURATION before now (-36h,
                               -7d); default from the oldest snapshot to now
  --by queue|group|user        one row per queue (every level), per group
                               and leaf queue, or per user and leaf queue
                               (needs perUserAccounting) (default queue)
  --format table|csv|json      resource-hours as a table (default), or the
                               report in resource-seconds as CSV or the
                               server's JSON (also -o)

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
  --estimates       with --requeue: estimate each held pod's wait as why
                    does, compare with its let-in, and print after the
                    snapshot how far the estimates were off (p50, p90)

Exit code 2 means the command line was wrong.
`

// run is the whole command, testable without a process: it returns the exit
// code instead of exiting.
func (c *cli) run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, c.usage())
		return exitBadArgs
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(c.stdout, c.usage())
		return exitOK
	case "validate":
		return c.validate(rest)
	case "simulate":
		return c.simulate(rest)
	case "usage":
		return c.usageCmd(rest)
	case "why":
		return c.why(rest)
	case "held":
		return c.held(rest)
	default:
		return c.badArgs(fmt.Sprintf("unknown command %q", cmd))
	}
}

// badArgs reports a command-line mistake with the usage.
func (c *cli) badArgs(msg string) int {
	fmt.Fprintf(c.stderr, "%s: %s\n\n%s", c.prog, msg, c.usage())
	return exitBadArgs
}
