package userquota

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

func TestAuditWait(t *testing.T) {
	tests := []struct {
		took, want time.Duration
	}{
		{0, auditEvery},
		{10 * time.Millisecond, auditEvery},
		{20 * time.Millisecond, auditEvery},
		{60 * time.Millisecond, 30 * time.Second},
		{time.Second, 500 * time.Second},
	}
	for _, tt := range tests {
		if got := auditWait(tt.took); got != tt.want {
			t.Errorf("auditWait(%v) = %v, want %v", tt.took, got, tt.want)
		}
	}
}

// slowAccounts is accounts with nothing to repair whose audit takes took
// on the fake clock; each audit is sent on audits.
type slowAccounts struct {
	clock  *testingclock.FakeClock
	took   time.Duration
	audits chan struct{}
}

func (s *slowAccounts) charged() []string {
	s.clock.Step(s.took)
	s.audits <- struct{}{}
	return nil
}
func (s *slowAccounts) isCharged(types.UID) bool { return false }
func (s *slowAccounts) ours(*v1.Pod) bool        { return false }
func (s *slowAccounts) finished(*v1.Pod) bool    { return false }
func (s *slowAccounts) releaseCharge(klog.Logger, types.UID, string) (ledger.Charge, bool) {
	return ledger.Charge{}, false
}
func (s *slowAccounts) chargeRunning(klog.Logger, *v1.Pod, string) bool { return false }
func (s *slowAccounts) admitted() []string                              { return nil }
func (s *slowAccounts) forgetPod(klog.Logger, types.UID)                {}
func (s *slowAccounts) dropRunning(types.UID) bool                      { return false }

// TestAuditRunSpacing runs the audit loop on a fake clock: the first
// audit at once, the next auditWait of the last one's duration later,
// not a moment sooner.
func TestAuditRunSpacing(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	acc := &slowAccounts{clock: clk, took: time.Second, audits: make(chan struct{}, 1)}
	informer := informers.NewSharedInformerFactory(fake.NewClientset(), 0).Core().V1().Pods()
	a := &auditor{accounts: acc, pods: informer.Lister(), synced: func() bool { return true }, clock: clk}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	next := func(what string) {
		t.Helper()
		select {
		case <-acc.audits:
		case <-time.After(wait.ForeverTestTimeout):
			t.Fatalf("%s: no audit", what)
		}
	}
	// early fails when an audit ran, or is on its way (its timer fired:
	// no waiter until the audit is over), before the step that is due.
	early := func(after time.Duration, want time.Duration) {
		t.Helper()
		if !clk.HasWaiters() || len(acc.audits) > 0 {
			t.Fatalf("an audit ran %v after the last, want %v", after, want)
		}
	}
	waiting := func() {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, wait.ForeverTestTimeout, true,
			func(context.Context) (bool, error) { return clk.HasWaiters(), nil }); err != nil {
			t.Fatal("the loop does not wait for its next audit")
		}
	}
	next("at start")
	waiting()
	// The audit took 1 s: the next is 500 s later.
	clk.Step(500*time.Second - time.Millisecond)
	early(500*time.Second-time.Millisecond, 500*time.Second)
	acc.took = 0
	clk.Step(time.Millisecond)
	next("after the wait")
	waiting()
	// That one took no time: the next is auditEvery later.
	clk.Step(auditEvery - time.Millisecond)
	early(auditEvery-time.Millisecond, auditEvery)
	clk.Step(time.Millisecond)
	next("after auditEvery")
}

// BenchmarkAudit is one audit at the scale shape with every pod charged
// and nothing to repair: what the audit costs each time it runs.
//
//	go test -run '^$' -bench Audit -benchtime 20x ./pkg/plugins/userquota
func BenchmarkAudit(b *testing.B) {
	for _, n := range []int{10_000, 50_000} {
		shape := queueconfigtest.Synthetic{Users: 10000, Queues: 1000, Groups: 20, Levels: 3}
		b.Run(fmt.Sprintf("%s/pods=%d", shapeName(shape), n), func(b *testing.B) {
			f := newRecoveryFixture(b, recoveryPodSet(shape, n), shape.Config(nil))
			defer f.stop()
			pl := f.newPlugin(b)
			if !cache.WaitForCacheSync(f.ctx.Done(), pl.podsSynced) {
				b.Fatal("the plugin did not sync")
			}
			if got := pl.ledger.Len(); got != n {
				b.Fatalf("%d pods charged, want %d", got, n)
			}
			logger := klog.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if released, charged := pl.audit.audit(logger); released+charged != 0 {
					b.Fatalf("audit repaired %d+%d, want nothing", released, charged)
				}
			}
		})
	}
}
