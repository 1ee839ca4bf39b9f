package ugm

import (
	"fmt"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
)

// BenchmarkAdmitCommit is a held pod's way through ugm at the scale shape
// (10,000 users in 1,000 leaf queues under three levels, 20 groups) while
// heldPerUser pods of every user hold room: Admit (PreEnqueue), Commit
// (Reserve), Decrease (its delete). The cost must not grow with the
// queues the held room spreads over: a group's held room is in every
// queue its members use.
//
//	go test -run '^$' -bench AdmitCommit -benchmem ./pkg/ugm
func BenchmarkAdmitCommit(b *testing.B) {
	for _, held := range []int{0, 4} {
		b.Run(fmt.Sprintf("users=10000/queues=1000/levels=3/held-per-user=%d", held), func(b *testing.B) {
			benchAdmitCommit(b, queueconfigtest.Synthetic{Users: 10000, Queues: 1000, Groups: 20, Levels: 3}, held)
		})
	}
}

func benchAdmitCommit(b *testing.B, shape queueconfigtest.Synthetic, heldPerUser int) {
	m := withConfig(b, shape.Config(nil))
	var v resources.Vector
	v.Set(resources.Intern("cpu"), 100)
	v.Set(resources.Intern("memory"), 1<<20)
	v.Set(resources.Intern("pods"), 1)
	req := func(u, pod int) Request {
		return Request{
			User:      shape.User(u),
			Groups:    []string{shape.Group(u)},
			Queue:     shape.QueuePath(u),
			App:       AppKey{Namespace: "ns", ID: fmt.Sprintf("app-%d", u)},
			Resources: v,
		}
	}
	// Every user runs one pod, and heldPerUser more hold room.
	for u := 0; u < shape.Users; u++ {
		r := req(u, 0)
		if err := m.Increase(&r); err != nil {
			b.Fatal(err)
		}
		for p := 1; p <= heldPerUser; p++ {
			r := req(u, p)
			if err := m.Admit(fmt.Sprintf("held-%d-%d", u, p), &r); err != nil {
				b.Fatal(err)
			}
		}
	}
	reqs := make([]Request, shape.Users)
	keys := make([]string, shape.Users)
	for u := range reqs {
		reqs[u], keys[u] = req(u, -1), fmt.Sprintf("pod-%d", u)
	}
	o := order(shape.Users, false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		u := o[i&(len(o)-1)]
		if err := m.Admit(keys[u], &reqs[u]); err != nil {
			b.Fatal(err)
		}
		if err := m.Commit(keys[u], &reqs[u]); err != nil {
			b.Fatal(err)
		}
		if err := m.Decrease(&reqs[u]); err != nil {
			b.Fatal(err)
		}
	}
}
