package cli

import (
	"net/http/httptest"
	"os"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/accounting"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/rest"
	"github.com/userquota/userquota/pkg/ugm"
)

// Example_chargeback is the worked example of docs/accounting.md: one day
// of a 16-cpu cluster whose root is elastic (its guaranteed share is the
// capacity): root.research guaranteed 8 cpu, root.batch 4, root.adhoc
// none. alice (group ml) runs 6 cpu all day in research and bob (ml) 6
// more from 08:00 to 20:00; carol (etl) 2 cpu all day in batch; dave 2
// cpu from 10:00 to 14:00 in adhoc. The books are the scheduler's
// (pkg/accounting) on a clock stepped through the day, served by its REST
// API and read by the CLI.
//
//	go test -run '^Example_chargeback$' -v ./pkg/cli
func Example_chargeback() {
	day := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	c := testingclock.NewFakeClock(day)
	books := accounting.New(c, accounting.Options{Users: true})
	books.SetGuaranteed(map[string]resources.Vector{
		"root":          resources.FromMap(map[string]int64{"cpu": 16000}),
		"root.research": resources.FromMap(map[string]int64{"cpu": 8000}),
		"root.batch":    resources.FromMap(map[string]int64{"cpu": 4000}),
		"root.adhoc":    nil,
	})
	pod := func(user, group, queue string, cpu int64) *ugm.Request {
		r := &ugm.Request{User: user, Queue: queue, Resources: resources.FromMap(map[string]int64{"cpu": cpu})}
		if group != "" {
			r.Groups = []string{group}
		}
		return r
	}
	alice, bob := pod("alice", "ml", "root.research", 6000), pod("bob", "ml", "root.research", 6000)
	carol, dave := pod("carol", "etl", "root.batch", 2000), pod("dave", "", "root.adhoc", 2000)
	at := func(hour int) { c.SetTime(day.Add(time.Duration(hour) * time.Hour)) }
	books.Charged(alice)
	books.Charged(carol)
	at(8)
	books.Charged(bob)
	at(10)
	books.Charged(dave)
	at(14)
	books.Released(dave)
	at(20)
	books.Released(bob)
	at(25)

	srv := httptest.NewServer(rest.NewHandler(rest.Options{Partition: "default", Usage: ugm.New(), Accounting: books}))
	defer srv.Close()
	cli := &cli{prog: Ctl, stdout: os.Stdout, stderr: os.Stdout}
	cli.run([]string{"usage", "report", "--server", srv.URL, "--from", "2026-11-02", "--to", "2026-11-03"})
	os.Stdout.WriteString("\n")
	cli.run([]string{"usage", "report", "--server", srv.URL, "--from", "2026-11-02", "--to", "2026-11-03", "--by", "user"})
	os.Stdout.WriteString("\n")
	cli.run([]string{"usage", "report", "--server", srv.URL, "--from", "2026-11-02", "--to", "2026-11-03", "--by", "group", "--format", "csv"})
	// Output:
	// resource-hours by queue from 2026-11-02T00:00:00Z to 2026-11-03T00:00:00Z
	// (window ends at snapshots: hourly for 48 hours, daily at 00:00 UTC for 35 days; oldest kept 2026-11-02T00:00:00Z)
	//
	// QUEUE          RESOURCE  UNIT    GUARANTEED  BORROWED  UNSHARED  TOTAL   IDLE GUARANTEED
	// root           cpu       core-h  272.00      0.00      0.00      272.00  112.00
	// root.adhoc     cpu       core-h  0.00        8.00      0.00      8.00    0.00
	// root.batch     cpu       core-h  48.00       0.00      0.00      48.00   48.00
	// root.research  cpu       core-h  168.00      48.00     0.00      216.00  24.00
	//
	// resource-hours by user from 2026-11-02T00:00:00Z to 2026-11-03T00:00:00Z
	// (window ends at snapshots: hourly for 48 hours, daily at 00:00 UTC for 35 days; oldest kept 2026-11-02T00:00:00Z)
	//
	// QUEUE          USER   RESOURCE  UNIT    GUARANTEED  BORROWED  UNSHARED  TOTAL
	// root.adhoc     dave   cpu       core-h  0.00        8.00      0.00      8.00
	// root.batch     carol  cpu       core-h  48.00       0.00      0.00      48.00
	// root.research  alice  cpu       core-h  120.00      24.00     0.00      144.00
	// root.research  bob    cpu       core-h  48.00       24.00     0.00      72.00
	//
	// from,to,queue,group,resource,unit,guaranteed,borrowed,unshared,total
	// 2026-11-02T00:00:00Z,2026-11-03T00:00:00Z,root.batch,etl,cpu,core,172800,0,0,172800
	// 2026-11-02T00:00:00Z,2026-11-03T00:00:00Z,root.research,ml,cpu,core,604800,172800,0,777600
}
