package userquota

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"
)

// clientHandle is the part of the framework handle the leader check uses.
type clientHandle struct {
	fwk.Handle
	cs kubernetes.Interface
}

func (h clientHandle) ClientSet() kubernetes.Interface { return h.cs }

// Before kube-scheduler creates its leader elector, the leader check
// follows the leader-election Lease: a held Lease is someone else's (this
// replica cannot hold it yet); no Lease means no leader election, so it
// leads.
func TestLeaderCheck(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cs := fake.NewClientset()
	pl := &Plugin{handle: clientHandle{cs: cs}, args: Args{LeaderElectionLease: ptr.To("userquota-system/userquota-scheduler")}}
	leader, err := pl.leaderCheckFrom(ctx, metrics.NewKubeRegistry())
	if err != nil {
		t.Fatal(err)
	}
	expect := func(step string, wantLeading bool, wantWhy string) {
		t.Helper()
		var leading bool
		var why string
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			leading, why = leader()
			return leading == wantLeading && strings.Contains(why, wantWhy), nil
		})
		if err != nil {
			t.Fatalf("%s: leading %v (%q), want %v (%q)", step, leading, why, wantLeading, wantWhy)
		}
	}
	expect("no Lease", true, "")

	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "userquota-system", Name: "userquota-scheduler"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other-host_0b6c4c9e-5f7c-4bd3-9d36-1c1b2b1f2a10")},
	}
	if _, err := cs.CoordinationV1().Leases("userquota-system").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("held by another replica", false, `this replica's leader elector has not started (kube-scheduler starts it once its caches sync); the leader-election Lease userquota-system/userquota-scheduler is held by "other-host_0b6c4c9e-5f7c-4bd3-9d36-1c1b2b1f2a10"`)

	lease.Spec.HolderIdentity = ptr.To("")
	if _, err := cs.CoordinationV1().Leases("userquota-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("released", false, "has no holder")

	// A Lease of the same name elsewhere, or of another name, is not ours.
	other := lease.DeepCopy()
	other.Namespace, other.Spec.HolderIdentity = "kube-system", ptr.To("kube-system-host_x")
	if _, err := cs.CoordinationV1().Leases("kube-system").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Our Lease changes after the other was created: once the check sees
	// that change, it has seen everything before it, the other Lease
	// included, had it been watched.
	lease.Spec.HolderIdentity = ptr.To("marker-host_1")
	if _, err := cs.CoordinationV1().Leases("userquota-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("our Lease changed after another namespace's was created", false, `held by "marker-host_1"`)
	lease.Spec.HolderIdentity = ptr.To("")
	if _, err := cs.CoordinationV1().Leases("userquota-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("another namespace's Lease", false, "has no holder")

	if err := cs.CoordinationV1().Leases("userquota-system").Delete(ctx, lease.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("Lease deleted", true, "")

	// No leader election configured: always leading, nothing watched.
	pl = &Plugin{handle: clientHandle{}, args: Args{LeaderElectionLease: ptr.To("")}}
	leader, err = pl.leaderCheck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := leader(); !ok || why != "" {
		t.Errorf("without leader election: %v %q", ok, why)
	}
}

// Once kube-scheduler has created its leader elector, its gauge decides,
// whatever the Lease's host part says: two replicas on one host
// (hostNetwork) each see their own host in the holder. Until then, a held
// Lease is another replica's.
func TestLeaderCheckElector(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "userquota-system", Name: "userquota-scheduler"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(host + "_4f0a9a3e-2f55-4b53-9a0c-3d1b9c7e8f21")},
	}
	cs := fake.NewClientset(lease)
	registry := metrics.NewKubeRegistry()
	gauge := metrics.NewGaugeVec(&metrics.GaugeOpts{Name: electorMetric, Help: "as client-go's elector sets it"}, []string{"name"})
	registry.MustRegister(gauge)
	other := metrics.NewGaugeVec(&metrics.GaugeOpts{Name: "other_elector_status", Help: "not ours"}, []string{"name"})
	registry.MustRegister(other)
	pl := &Plugin{handle: clientHandle{cs: cs}, args: Args{LeaderElectionLease: ptr.To("userquota-system/userquota-scheduler")}}
	leader, err := pl.leaderCheckFrom(ctx, registry)
	if err != nil {
		t.Fatal(err)
	}
	notStarted := `this replica's leader elector has not started (kube-scheduler starts it once its caches sync); the leader-election Lease userquota-system/userquota-scheduler is held by "` + host + `_4f0a9a3e-2f55-4b53-9a0c-3d1b9c7e8f21"`
	for _, step := range []struct {
		name        string
		set         func()
		wantLeading bool
		wantWhy     string
	}{
		{name: "no elector yet: the Lease's host is ours", set: func() {}, wantLeading: false, wantWhy: notStarted},
		{name: "another elector's gauge is not ours", set: func() { other.WithLabelValues(electorName).Set(1) }, wantLeading: false, wantWhy: notStarted},
		{name: "another name's elector is not ours", set: func() { gauge.WithLabelValues("kube-controller-manager").Set(1) }, wantLeading: false, wantWhy: notStarted},
		{name: "our elector follows", set: func() { gauge.WithLabelValues(electorName).Set(0) }, wantLeading: false,
			wantWhy: `this replica's leader elector does not hold the leader-election Lease userquota-system/userquota-scheduler (held by "` + host + `_4f0a9a3e-2f55-4b53-9a0c-3d1b9c7e8f21")`},
		{name: "our elector leads", set: func() { gauge.WithLabelValues(electorName).Set(1) }, wantLeading: true},
	} {
		step.set()
		var leading bool
		var why string
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			leading, why = leader()
			return leading == step.wantLeading && why == step.wantWhy, nil
		})
		if err != nil {
			t.Fatalf("%s: leading %v (%q), want %v (%q)", step.name, leading, why, step.wantLeading, step.wantWhy)
		}
	}
}
