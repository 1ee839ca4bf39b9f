package fairshare

import (
	"fmt"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/ugm"
)

// BenchmarkChargeRelease is what the history adds to a charge (Reserve,
// a pod found running) and a release: one op is the charge and the
// release of one pod of one of 10,000 users, three queues deep (histories
// kept at root.org and root.org.team, and at the leaf), with decay. The
// check path (PreFilter) does not call the history at all.
//
//	go test -run='^$' -bench=ChargeRelease -benchmem ./pkg/fairshare
func BenchmarkChargeRelease(b *testing.B) {
	h, c := newHistory(b, queueconfigtest.Root(`
submitacl: "*"
queues:
- name: org
  queues:
  - name: team
    resources: {max: {vcore: 1000}}
    properties: {userquota.fairness: user, userquota.fairness.halflife: 24h}
    queues:
    - name: leaf
`))
	const users = 10000
	pods := make([]struct{ user string }, users)
	for i := range pods {
		pods[i].user = fmt.Sprintf("user-%05d", i)
		h.Charged(req(pods[i].user, "root.org.team.leaf", "1", "dev"))
	}
	rqs := make([]*ugm.Request, users)
	for i := range rqs {
		rqs[i] = req(pods[i].user, "root.org.team.leaf", "1", "dev")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rq := rqs[i%users]
		c.Step(1)
		h.Charged(rq)
		h.Released(rq)
	}
}
