package ledger

import (
	"errors"
	"iter"
	"sort"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

var config = queueconfigtest.Root(`
queues:
- name: default
  limits:
  - limit: sue
    users: [sue]
    maxresources: {vcore: 2}
`)

func newLedger(t *testing.T) *Ledger {
	t.Helper()
	m := ugm.New()
	m.SetConfig(queueconfigtest.MustPartition(t, config))
	return New(m)
}

func cpu(t *testing.T, q string) resources.Vector {
	v, err := resources.Parse(map[string]string{"cpu": q, "pods": "1"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func req(user, app string, r resources.Vector) ugm.Request {
	return ugm.Request{User: user, Queue: "root.default", App: ugm.AppKey{Namespace: "ns", ID: app}, Resources: r}
}

func rootCPU(l *Ledger) int64 { return l.Manager().Queues().ResourceUsage.Get(0) }

func TestAllocateReleaseOnce(t *testing.T) {
	l := newLedger(t)
	if err := l.Allocate("p1", req("sue", "a", cpu(t, "1"))); err != nil {
		t.Fatal(err)
	}
	if err := l.Allocate("p1", req("sue", "a", cpu(t, "1"))); !errors.Is(err, ErrAlreadyAllocated) {
		t.Fatalf("second allocate = %v, want ErrAlreadyAllocated", err)
	}
	if _, err := l.ForceAllocate("p1", req("sue", "a", cpu(t, "1"))); !errors.Is(err, ErrAlreadyAllocated) {
		t.Fatalf("force of a live pod = %v, want ErrAlreadyAllocated", err)
	}
	if got := rootCPU(l); got != 1000 {
		t.Fatalf("usage = %d, want 1000 (counted once)", got)
	}
	c, ok, err := l.Release("p1")
	if !ok || err != nil || c.Request.User != "sue" {
		t.Fatalf("release = %+v, %v, %v", c, ok, err)
	}
	if _, ok, _ := l.Release("p1"); ok {
		t.Fatal("second release released again")
	}
	if _, ok, _ := l.Release("never"); ok {
		t.Fatal("release of an unknown pod reported true")
	}
	if got := rootCPU(l); got != 0 || l.Len() != 0 {
		t.Fatalf("after release usage %d, live %d", got, l.Len())
	}
}

func TestRefusalChangesNothing(t *testing.T) {
	l := newLedger(t)
	if err := l.Allocate("p1", req("sue", "a", cpu(t, "2"))); err != nil {
		t.Fatal(err)
	}
	var r *ugm.Refusal
	if err := l.Allocate("p2", req("sue", "a", cpu(t, "1"))); !errors.As(err, &r) {
		t.Fatalf("over the limit = %v, want a refusal", err)
	}
	if _, live := l.Get("p2"); live || rootCPU(l) != 2000 {
		t.Fatal("a refused pod was recorded or charged")
	}
	// A forced pod (found running) is charged whatever the limit says,
	// and says which limit it went over.
	over, err := l.ForceAllocate("p3", req("sue", "a", cpu(t, "1")))
	if err != nil || rootCPU(l) != 3000 {
		t.Fatalf("force = %v, usage %d", err, rootCPU(l))
	}
	if over == nil || over.Who != ugm.WhoUser || over.Name != "sue" {
		t.Fatalf("force over sue's limit reported %v, want her limit", over)
	}
}

func TestForceWithConflictingApplication(t *testing.T) {
	l := newLedger(t)
	if err := l.Allocate("p1", req("sue", "shared", cpu(t, "1"))); err != nil {
		t.Fatal(err)
	}
	// bob's running pod claims sue's application: it is still charged, to
	// an application of its own.
	if _, err := l.ForceAllocate("p2", req("bob", "shared", cpu(t, "1"))); err != nil {
		t.Fatal(err)
	}
	c, _ := l.Get("p2")
	if c.Request.App.ID != "pod:p2" || !c.Forced {
		t.Fatalf("charge = %+v", c)
	}
	for _, p := range []string{"p1", "p2"} {
		if _, _, err := l.Release(p); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.Manager().Users()) != 0 {
		t.Fatal("trackers left after releasing everything")
	}
}

func TestResize(t *testing.T) {
	l := newLedger(t)
	if err := l.Allocate("p1", req("sue", "a", cpu(t, "1"))); err != nil {
		t.Fatal(err)
	}
	live, err := l.Resize("p1", cpu(t, "3"))
	var over *ugm.Refusal
	if !live || !errors.As(err, &over) {
		t.Fatalf("resize over the limit = %v, %v; want applied with a refusal", live, err)
	}
	if rootCPU(l) != 3000 {
		t.Fatalf("usage after resize = %d", rootCPU(l))
	}
	if live, err := l.Resize("gone", cpu(t, "1")); live || err != nil {
		t.Fatalf("resize of an unknown pod = %v, %v", live, err)
	}
	if _, _, err := l.Release("p1"); err != nil || rootCPU(l) != 0 {
		t.Fatalf("release after resize: %v, usage %d", err, rootCPU(l))
	}
}

// TestChargeOwnsItsRequest: a charge keeps its own copy of the request's
// groups and resources, inline or not: what the caller does with its
// request afterwards, and a later resize, change no charge handed out.
func TestChargeOwnsItsRequest(t *testing.T) {
	many, err := resources.Parse(map[string]string{"cpu": "1", "pods": "1", "memory": "1Gi", "nvidia.com/gpu": "1", "example.com/a": "1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		groups []string
		res    resources.Vector
	}{
		{"inline", []string{"dev"}, cpu(t, "1")},
		{"no group", nil, cpu(t, "1")},
		{"too big to be inline", []string{"dev", "ops"}, many},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := New(ugm.New())
			r := req("bob", "a", tc.res.Clone())
			r.Groups = append([]string(nil), tc.groups...)
			if err := l.Allocate("p1", r); err != nil {
				t.Fatal(err)
			}
			r.Resources[0] = 42
			for i := range r.Groups {
				r.Groups[i] = "changed"
			}
			before, _ := l.Get("p1")
			if !before.Request.Resources.Equal(tc.res) || strings.Join(before.Request.Groups, ",") != strings.Join(tc.groups, ",") {
				t.Fatalf("charge %v %v, want %v %v: it shares the caller's request", before.Request.Resources, before.Request.Groups, tc.res, tc.groups)
			}
			if _, err := l.Resize("p1", cpu(t, "3")); err != nil {
				t.Fatal(err)
			}
			if !before.Request.Resources.Equal(tc.res) {
				t.Errorf("the charge handed out before the resize now says %v, want %v", before.Request.Resources, tc.res)
			}
		})
	}
}

// BenchmarkAllocateRelease charges and releases one pod: with four
// resources at most and one group the charge is one object.
//
//	go test -run '^$' -bench AllocateRelease -benchmem ./pkg/ledger
func BenchmarkAllocateRelease(b *testing.B) {
	l := New(ugm.New())
	v, err := resources.Parse(map[string]string{"cpu": "1", "pods": "1", "memory": "1Gi"})
	if err != nil {
		b.Fatal(err)
	}
	r := req("bob", "a", v)
	r.Groups = []string{"dev"}
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Allocate("p1", r); err != nil {
			b.Fatal(err)
		}
		if _, _, err := l.Release("p1"); err != nil {
			b.Fatal(err)
		}
	}
}

// tape records what the observer is told.
type tape []string

func (t *tape) Charged(r *ugm.Request)  { *t = append(*t, "+"+r.App.ID+" "+r.Resources.String()) }
func (t *tape) Released(r *ugm.Request) { *t = append(*t, "-"+r.App.ID+" "+r.Resources.String()) }

// TestObserver: the observer is told every charge (checked, forced, the
// forced one under the key it was charged with) and release exactly once,
// a resize as a release and a charge, and nothing that changed nothing.
func TestObserver(t *testing.T) {
	l := newLedger(t)
	var got tape
	l.Observe(&got)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Allocate("p1", req("sue", "a", cpu(t, "1"))))
	if err := l.Allocate("p2", req("sue", "a", cpu(t, "5"))); err == nil {
		t.Fatal("over the limit")
	}
	if err := l.Allocate("p1", req("sue", "a", cpu(t, "1"))); err == nil {
		t.Fatal("twice")
	}
	_, err := l.ForceAllocate("p3", req("bob", "b", cpu(t, "3")))
	must(err)
	_, err = l.ForceAllocate("p4", req("ann", "a", cpu(t, "1"))) // a's conflict: re-keyed
	must(err)
	if _, err := l.Resize("p1", cpu(t, "2")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Resize("p1", cpu(t, "2")); err != nil { // no change
		t.Fatal(err)
	}
	for _, p := range []string{"p1", "p1", "p3", "nope"} {
		_, _, _ = l.Release(p)
	}
	want := tape{"+a cpu=1,pods=1", "+b cpu=3,pods=1", "+pod:p4 cpu=1,pods=1", "-a cpu=1,pods=1", "+a cpu=2,pods=1", "-a cpu=2,pods=1", "-b cpu=3,pods=1"}
	if len(got) != len(want) {
		t.Fatalf("told %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %q, want %q", i, got[i], want[i])
		}
	}
}

// TestObservers: every observer added is told every charge and release,
// each in the order they happened (the usage history and the books of
// resource-seconds both watch the one ledger).
func TestObservers(t *testing.T) {
	l := newLedger(t)
	var first, second tape
	l.Observe(&first)
	l.Observe(&second)
	if err := l.Allocate("p1", req("sue", "a", cpu(t, "1"))); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Resize("p1", cpu(t, "2")); err != nil {
		t.Fatal(err)
	}
	_, _, _ = l.Release("p1")
	want := tape{"+a cpu=1,pods=1", "-a cpu=1,pods=1", "+a cpu=2,pods=1", "-a cpu=2,pods=1"}
	for name, got := range map[string]tape{"first": first, "second": second} {
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s observer told %q, want %q", name, got, want)
		}
	}
}

// syncTape is an observer that is also a Syncer: it records the live
// charges each Sync is given.
type syncTape struct {
	tape
	syncs [][]string
}

func (s *syncTape) Sync(live iter.Seq[*ugm.Request]) {
	var got []string
	for r := range live {
		got = append(got, r.App.ID+" "+r.Resources.String())
	}
	sort.Strings(got)
	s.syncs = append(s.syncs, got)
}

// TestEnforceSyncs: Enforce puts the config in force and gives each
// Syncer the charges live then (not the released, not the refused), and
// tells an observer that is no Syncer nothing; a config without the
// partition changes nothing and syncs nobody.
func TestEnforceSyncs(t *testing.T) {
	l := newLedger(t)
	var s syncTape
	var plain tape
	l.Observe(&s)
	l.Observe(&plain)
	if err := l.Allocate("p1", req("sue", "a", cpu(t, "1"))); err != nil {
		t.Fatal(err)
	}
	if err := l.Allocate("p2", req("sue", "a", cpu(t, "5"))); err == nil {
		t.Fatal("over the limit")
	}
	if _, err := l.ForceAllocate("p3", req("bob", "b", cpu(t, "3"))); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ForceAllocate("p4", req("ann", "c", cpu(t, "1"))); err != nil {
		t.Fatal(err)
	}
	_, _, _ = l.Release("p4")
	told := len(plain)
	looser := queueconfigtest.MustParse(t, strings.Replace(config, "vcore: 2", "vcore: 8", 1))
	if err := l.Enforce(looser, "nope"); err == nil || len(s.syncs) != 0 {
		t.Fatalf("a config without the partition: err %v, syncs %q", err, s.syncs)
	}
	if err := l.Enforce(looser, "default"); err != nil {
		t.Fatal(err)
	}
	want := []string{"a cpu=1,pods=1", "b cpu=3,pods=1"}
	if len(s.syncs) != 1 || strings.Join(s.syncs[0], " ") != strings.Join(want, " ") {
		t.Fatalf("synced %q, want once with %q", s.syncs, want)
	}
	if len(plain) != told {
		t.Errorf("an observer that is no Syncer was told %q by Enforce", plain[told:])
	}
	if err := l.Allocate("p2", req("sue", "a", cpu(t, "5"))); err != nil {
		t.Errorf("the new config is not in force: %v", err)
	}
}
