package userquota

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig"
)

// boundUserPod is a running pod of user, bound to testNode.
func boundUserPod(name, user string) *v1.Pod {
	p := podOf(name).Annotation(podmeta.AnnotationUserInfo, fmt.Sprintf(`{"user":%q}`, user)).Req(cpu("100m")).Obj()
	p.Spec.NodeName, p.Status.Phase = testNode, v1.PodRunning
	return p
}

// TestPreparedPod: a request read ahead is used only while reading it
// again would give the same (aclConfig: john is placed in root.production,
// a config queue; sue in root.users.sue, a queue a rule creates, which
// the pass's own charges may create; mallory nowhere, his ACLs refuse him).
func TestPreparedPod(t *testing.T) {
	e := newEnv(t, envOptions{config: aclConfig})
	other := boundUserPod("other", "john")
	other.Spec.SchedulerName = "default-scheduler"
	pending := boundUserPod("pending", "john")
	pending.Spec.NodeName = ""
	done := boundUserPod("done", "john")
	done.Status.Phase = v1.PodSucceeded
	tests := []struct {
		name string
		pod  *v1.Pod
		cfg  *queueconfig.Partition // nil: the one in force
		used bool
	}{
		{name: "a config queue", pod: boundUserPod("j", "john"), used: true},
		{name: "a queue a rule creates", pod: boundUserPod("s", "sue")},
		{name: "refused as a new pod", pod: boundUserPod("m", "mallory")},
		{name: "the config changed since", pod: boundUserPod("j", "john"), cfg: &queueconfig.Partition{}},
		{name: "another scheduler's", pod: other},
		{name: "not bound", pod: pending},
		{name: "finished", pod: done},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p preparedPod
			e.pl.preparePod(tt.pod, &p)
			cfg := tt.cfg
			if cfg == nil {
				cfg = e.pl.partition()
			}
			req, used := p.request(cfg)
			if used != tt.used {
				t.Fatalf("prepared request used: %v, want %v (prepared %+v)", used, tt.used, p)
			}
			if !used {
				return
			}
			want, err := e.pl.podRequest(tt.pod, cfg, e.pl.queues())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, req); diff != "" {
				t.Errorf("prepared request (-podRequest,+prepared):\n%s", diff)
			}
		})
	}
	var none *preparedPod
	if _, used := none.request(e.pl.partition()); used {
		t.Error("no prepared request, yet one was used")
	}
}

// TestRestartReadAhead: at a restart with more running pods than the pass
// charges without reading ahead, every pod is charged as the handler
// charges it one by one: in a config queue from what was read ahead, in a
// queue a rule creates and where ACLs refuse the pod as a new one by
// reading it again.
func TestRestartReadAhead(t *testing.T) {
	var pods []*v1.Pod
	var objects []runtime.Object
	for i := 0; i < 3*readAheadBatch; i++ {
		p := boundUserPod(fmt.Sprintf("p%03d", i), []string{"john", "sue", "mallory"}[i%3])
		pods = append(pods, p)
		objects = append(objects, p)
	}
	restarted := newEnv(t, envOptions{config: aclConfig, objects: objects})
	serial := newEnv(t, envOptions{config: aclConfig})
	for _, p := range pods {
		serial.pl.onPod(klog.Background(), p)
	}
	want := snapshot(serial.pl)
	if len(want.Pods) != len(pods) {
		t.Fatalf("one by one, %d pods charged, want %d", len(want.Pods), len(pods))
	}
	if diff := cmp.Diff(want, snapshot(restarted.pl)); diff != "" {
		t.Errorf("usage after the restart (-one by one,+restart):\n%s", diff)
	}
	for _, p := range pods {
		got, _ := restarted.pl.ledger.Get(string(p.UID))
		exp, _ := serial.pl.ledger.Get(string(p.UID))
		if got.Request.Queue != exp.Request.Queue || !got.Forced {
			t.Errorf("%s charged to %q (forced %v), want forced to %q", p.Name, got.Request.Queue, got.Forced, exp.Request.Queue)
		}
	}
}
