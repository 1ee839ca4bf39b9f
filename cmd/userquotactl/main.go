// Command userquotactl checks YuniKorn queue configs and replays pod traces
// against them with the scheduler's own quota code, so an operator can see
// what a config will admit and refuse before rolling it out, shows the
// live usage a running scheduler serves, and explains where a pod stands.
// Its commands are pkg/cli's, which the kubectl plugin kubectl-userquota
// runs too.
package main

import (
	"os"

	"github.com/userquota/userquota/pkg/cli"
)

func main() { os.Exit(cli.Main(cli.Ctl, os.Args[1:], os.Stdout, os.Stderr)) }
