// Command kubectl-userquota is userquotactl as a kubectl plugin: on the
// PATH, `kubectl userquota why POD -n NS` explains where a pod stands
// (docs/why-pending.md). Its commands are pkg/cli's, the same as
// userquotactl's.
package main

import (
	"os"

	"github.com/userquota/userquota/pkg/cli"
)

func main() { os.Exit(cli.Main(cli.Plugin, os.Args[1:], os.Stdout, os.Stderr)) }
