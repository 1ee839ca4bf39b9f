package reclaim

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// elasticQueue is an elastic queue for NewState: usage and runtime share in
// millicores, guaranteed as given.
func elasticQueue(path string, usage, runtime, guaranteed int64) ugm.ElasticQueue {
	return ugm.ElasticQueue{Usage: cpuMem(usage, 0), Share: &shares.Share{Path: path,
		Runtime:    resources.NewLimit(map[string]int64{"cpu": runtime}),
		Guaranteed: cpuMem(guaranteed, 0), Configured: cpuMem(guaranteed, 0)}}
}

func TestNewState(t *testing.T) {
	tree := map[string]ugm.ElasticQueue{
		"root":     elasticQueue("root", 16000, 16000, 0),
		"root.a":   elasticQueue("root.a", 2000, 8000, 4000),
		"root.b":   elasticQueue("root.b", 14000, 8000, 4000), // over by 6
		"root.p":   elasticQueue("root.p", 0, 0, 0),
		"root.p.x": elasticQueue("root.p.x", 0, 0, 0),
	}
	for _, tc := range []struct {
		name      string
		p         Preemptor
		c         Cluster
		why       string
		reclaims  bool
		bOver     int64
		need      map[string]int64
		nominated bool // the Nominated callback was asked
	}{
		{name: "shares off: own queue by priority only", p: Preemptor{Queue: "root.a"}, c: Cluster{}},
		{name: "elastic: b over its share by 6", p: Preemptor{Queue: "root.a", Resources: cpuMem(2000, 0)},
			c: Cluster{Elastic: tree}, reclaims: true, bOver: 6000, nominated: true},
		{name: "a leaving pod of b is counted out", p: Preemptor{Queue: "root.a", Resources: cpuMem(2000, 0)},
			c: Cluster{Elastic: tree, Leaving: []ugm.Request{{Queue: "root.b", Resources: cpuMem(4000, 0)}}}, reclaims: true, bOver: 2000, nominated: true},
		{name: "pods already nominated take the queue's share", p: Preemptor{Queue: "root.a", Resources: cpuMem(2000, 0)},
			c:   Cluster{Elastic: tree, Nominated: func(string) resources.Vector { return cpuMem(6000, 0) }},
			why: "pods of queue root.a already nominated for a node take its share: with this one cpu 2+8 > 8", nominated: true},
		{name: "nominated pods within the guaranteed share are fine", p: Preemptor{Queue: "root.a", Resources: cpuMem(1000, 0)},
			c: Cluster{Elastic: tree, Nominated: func(string) resources.Vector { return cpuMem(1000, 0) }}, reclaims: true, bOver: 6000, nominated: true},
		{name: "blocked at root: the victims must free what root lacks", p: Preemptor{Queue: "root.a", Resources: cpuMem(2000, 0), Blocked: []string{"root"}},
			c: Cluster{Elastic: tree}, reclaims: true, bOver: 6000, need: map[string]int64{"root": 2000}, nominated: true},
		{name: "not elastic below, blocked above", p: Preemptor{Queue: "root.c", Blocked: []string{"root"}},
			c: Cluster{Elastic: map[string]ugm.ElasticQueue{"root.b": tree["root.b"]}}, why: "queues above its own are at their share"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			if nominated := tc.c.Nominated; nominated != nil {
				tc.c.Nominated = func(q string) resources.Vector { asked = true; return nominated(q) }
			} else {
				tc.c.Nominated = func(string) resources.Vector { asked = true; return nil }
			}
			s, why := NewState(tc.p, tc.c)
			if why != tc.why {
				t.Fatalf("why = %q, want %q", why, tc.why)
			}
			if asked != tc.nominated {
				t.Errorf("nominated pods looked up: %v, want %v", asked, tc.nominated)
			}
			if s == nil {
				return
			}
			if s.Reclaims() != tc.reclaims || s.Queue() != tc.p.Queue {
				t.Errorf("reclaims %v in %s, want %v", s.Reclaims(), s.Queue(), tc.reclaims)
			}
			if b := s.queues["root.b"]; tc.bOver > 0 && (b == nil || b.over.Get(resources.Intern("cpu")) != tc.bOver) {
				t.Errorf("b over by %v, want %d", b, tc.bOver)
			}
			got := map[string]int64{}
			for q, v := range s.need {
				got[q] = v.Get(resources.Intern("cpu"))
			}
			if tc.need == nil {
				tc.need = map[string]int64{}
			}
			if diff := cmp.Diff(tc.need, got); diff != "" {
				t.Errorf("need (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWhy(t *testing.T) {
	s, _ := NewState(Preemptor{Queue: "root.a", Priority: 10, Resources: cpuMem(2000, 0)},
		Cluster{Elastic: map[string]ugm.ElasticQueue{
			"root.a": elasticQueue("root.a", 2000, 8000, 4000),
			"root.b": elasticQueue("root.b", 14000, 8000, 4000),
		}})
	for _, tc := range []struct {
		queue      string
		priority   int32
		res        resources.Vector
		want, kind string
	}{
		{"root.a", 1, cpuMem(1000, 0), "higher priority pod of queue root.a (priority 10 > 1)", "priority"},
		{"root.b", 50, cpuMem(1000, 0), "queue root.b uses more than its share (cpu 14 > 8, guaranteed 4): queue root.a takes back capacity it lent", "reclaim"},
		{"root.b", 0, cpuMem(0, 1), "queue root.b uses more than its share: queue root.a takes back capacity it lent", "reclaim"},
	} {
		why, reason := s.Why(tc.queue, tc.priority, tc.res)
		if !strings.Contains(why, tc.want) || reason != tc.kind {
			t.Errorf("Why(%s) = %q, %q; want %q, %q", tc.queue, why, reason, tc.want, tc.kind)
		}
	}
}
