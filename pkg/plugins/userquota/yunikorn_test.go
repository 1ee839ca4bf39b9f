package userquota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/userquota/userquota/pkg/podmeta"
)

// TestYuniKornMetadata: pods written for YuniKorn (user.info annotation,
// queue and application labels) schedule and count exactly as pods using
// ours.
func TestYuniKornMetadata(t *testing.T) {
	const ui = `{"user":"sue","groups":["dev"]}`
	tests := []struct {
		name string
		meta func(w *st.PodWrapper) *st.PodWrapper
	}{
		{name: "ours", meta: func(w *st.PodWrapper) *st.PodWrapper {
			return w.Annotation(podmeta.AnnotationUserInfo, ui).Label(podmeta.LabelQueue, "sandbox").Label(podmeta.LabelAppID, "app1")
		}},
		{name: "YuniKorn labels", meta: func(w *st.PodWrapper) *st.PodWrapper {
			return w.Annotation("yunikorn.apache.org/user.info", ui).Label("yunikorn.apache.org/queue", "root.sandbox").Label("applicationId", "app1")
		}},
		{name: "YuniKorn queue annotation and app-id label", meta: func(w *st.PodWrapper) *st.PodWrapper {
			return w.Annotation("yunikorn.apache.org/user.info", ui).Annotation("yunikorn.apache.org/queue", "root.sandbox").Label("yunikorn.apache.org/app-id", "app1")
		}},
		{name: "queue label and Spark's app selector", meta: func(w *st.PodWrapper) *st.PodWrapper {
			return w.Annotation("yunikorn.apache.org/user.info", ui).Label("queue", "root.sandbox").Label("spark-app-selector", "app1")
		}},
	}
	r := map[string]int64{"cpu": 2000, "pods": 2}
	want := usage{
		Users:  map[string]map[string]map[string]int64{"sue": {"root": r, "root.sandbox": r}},
		Groups: map[string]map[string]map[string]int64{"dev": {"root": r, "root.sandbox": r}},
		Queues: map[string]map[string]int64{"root": r, "root.sandbox": r},
		Apps:   map[string][]string{"sue": {"ns1/app1"}},
		Pods:   []string{"uid-p1", "uid-p3"},
	}
	wantRefusal := statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `user "sue" would exceed maxresources in root.sandbox: cpu 2+1 > 2`}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{config: sandboxConfig})
			pod := func(name, cpuQty string) *v1.Pod { return tc.meta(podOf(name)).Req(cpu(cpuQty)).Obj() }
			p1, p2, p3 := pod("p1", "1500m"), pod("p2", "1"), pod("p3", "500m")
			for _, p := range []*v1.Pod{p1, p3} {
				e.mustSchedule(p)
				e.bind(p)
			}
			e.barrier()
			if diff := cmp.Diff(want, snapshot(e.pl)); diff != "" {
				t.Errorf("usage (-want,+got):\n%s", diff)
			}
			e.pending(p2)
			_, s := e.preFilter(p2)
			if diff := cmp.Diff(wantRefusal, summary(s)); diff != "" {
				t.Errorf("PreFilter (-want,+got):\n%s", diff)
			}
			e.delete(p1)
			e.waitFor("p2 to be activated", func() bool { return len(e.activator.activated()) > 0 })
			if diff := cmp.Diff([]string{"ns1/p2"}, e.activator.activated()); diff != "" {
				t.Errorf("activated (-want,+got):\n%s", diff)
			}
			e.mustSchedule(p2)
			e.bind(p2)
			e.delete(p2)
			e.delete(p3)
			e.barrier()
			if diff := cmp.Diff(emptyUsage(), snapshot(e.pl)); diff != "" {
				t.Errorf("usage at the end (-want,+got):\n%s", diff)
			}
		})
	}
}
