package userquota

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/userquota/userquota/pkg/fairshare"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

var fairStoreConfig = queueconfigtest.Root(`
queues:
- name: q
  resources: {max: {vcore: 10}}
  properties: {userquota.fairness: user, userquota.fairness.halflife: 1h}
`)

func fairStoreHistory(t *testing.T, c *testingclock.FakeClock) *fairshare.History {
	p := queueconfigtest.MustPartition(t, fairStoreConfig)
	return fairshare.New(c, func() *queueconfig.Partition { return p })
}

func fairReq(user, cpu string) *ugm.Request {
	v, _ := resources.Parse(map[string]string{"cpu": cpu})
	return &ugm.Request{User: user, Queue: "root.q", App: ugm.AppKey{Namespace: "ns", ID: user}, Resources: v}
}

func shardNames(t *testing.T, client *fake.Clientset) []string {
	t.Helper()
	list, err := client.CoreV1().ConfigMaps("ns").List(context.Background(), metav1.ListOptions{LabelSelector: labelComponent + "=" + fairShareComponent})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, cm := range list.Items {
		out = append(out, cm.Name)
	}
	return out
}

// TestFairShareStore: the leader writes the history to ConfigMaps once
// it was read, writes only what changed, rewrites everything when it
// begins to lead, deletes shards no longer used; a follower and a replica
// that could not read the history write nothing; a new replica restores
// what was written.
func TestFairShareStore(t *testing.T) {
	ctx, logger := context.Background(), klog.Background()
	c := testingclock.NewFakeClock(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	leads := false
	h := fairStoreHistory(t, c)
	st := newFairShareStore(client, "ns", h, func() bool { return leads })
	for u := range 3 {
		h.Charged(fairReq(fmt.Sprintf("u%d", u), "2"))
	}
	c.Step(time.Hour)
	h.Released(fairReq("u0", "2"))

	st.write(ctx, logger) // not restored, not leading
	leads = true
	st.write(ctx, logger) // not restored
	if names := shardNames(t, client); len(names) != 0 {
		t.Fatalf("written before the history was read: %v", names)
	}
	if err := st.restore(ctx, logger); err != nil {
		t.Fatal(err)
	}
	writes := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "create" || a.GetVerb() == "update" {
				n++
			}
		}
		return n
	}
	st.write(ctx, logger)
	if names := shardNames(t, client); len(names) != 1 || names[0] != "userquota-fairshare-0" {
		t.Fatalf("shards %v, want userquota-fairshare-0", names)
	}
	before := writes()
	st.write(ctx, logger)
	if writes() != before {
		t.Error("an unchanged history written again")
	}
	// A follower writes nothing; when it leads again it rewrites.
	leads = false
	st.write(ctx, logger)
	leads = true
	st.write(ctx, logger)
	if writes() != before+1 {
		t.Errorf("%d writes on beginning to lead, want 1", writes()-before)
	}

	// A new replica restores it: u0's decayed usage, u1's and u2's.
	c2 := testingclock.NewFakeClock(c.Now())
	h2 := fairStoreHistory(t, c2)
	st2 := newFairShareStore(client, "ns", h2, func() bool { return false })
	if err := st2.restore(ctx, logger); err != nil {
		t.Fatal(err)
	}
	h2.Charged(fairReq("u1", "2"))
	h2.Charged(fairReq("u2", "2"))
	h2.Settle()
	// Keys are as of their last event: bring h's up to the same moment.
	h.Charged(fairReq("u1", "0"))
	h.Charged(fairReq("u2", "0"))
	for u := range 3 {
		k := fairshare.Key{Queue: "root.q", Name: fmt.Sprintf("u%d", u)}
		if a, b := h.Key(k), h2.Key(k); a == 0 || b < a*0.999 || b > a*1.001 {
			t.Errorf("%s: %v before, %v restored", k.Name, a, b)
		}
	}

	// The history forgotten: its shard is deleted.
	h.Released(fairReq("u1", "2"))
	h.Released(fairReq("u2", "2"))
	c.Step(100 * 24 * time.Hour)
	st.write(ctx, logger)
	if names := shardNames(t, client); len(names) != 0 {
		t.Errorf("shards left for an empty history: %v", names)
	}
}

// TestFairShareRestoreFails: a replica that cannot list the history
// writes nothing (it would overwrite the history with its own, empty).
func TestFairShareRestoreFails(t *testing.T) {
	ctx, logger := context.Background(), klog.Background()
	c := testingclock.NewFakeClock(time.Now())
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "userquota-fairshare-0", Namespace: "ns",
		Labels: map[string]string{labelComponent: fairShareComponent}}, Data: map[string]string{fairShareKey: "{\"q\":\"root.q\",\"n\":\"old\",\"t\":1,\"h\":{\"cpu\":5000}}\n"}})
	client.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden")
	})
	h := fairStoreHistory(t, c)
	st := newFairShareStore(client, "ns", h, func() bool { return true })
	if err := st.restore(ctx, logger); err == nil {
		t.Fatal("restore succeeded")
	}
	h.Charged(fairReq("u0", "2"))
	c.Step(time.Hour)
	h.Charged(fairReq("u0", "1"))
	st.write(ctx, logger)
	cm, err := client.CoreV1().ConfigMaps("ns").Get(ctx, "userquota-fairshare-0", metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data[fairShareKey], `"n":"old"`) {
		t.Errorf("the history was overwritten: %v %v", cm.Data, err)
	}
}
