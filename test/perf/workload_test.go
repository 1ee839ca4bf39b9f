package perf

import (
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// TestWorkload checks, without a cluster, that the generated queue configs
// are valid and refuse exactly what the harness expects when the pods are
// charged in order: nothing in the loose config, the second half of each
// user-at-a-limit's pods in the refused one, every pod past the first
// admitted in the backlog one. It runs without -perf.
func TestWorkload(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		users, queues, pods  int
		levels               int
		fraction             float64
		admitted             int // > 0: the backlog config
		wantRefused, wantApp int
	}{
		{name: "bench loose", users: 1000, queues: 100, pods: 10000, wantApp: 2000},
		{name: "bench refused", users: 1000, queues: 100, pods: 10000, fraction: 0.2, wantRefused: 1000, wantApp: 2000},
		{name: "smoke refused", users: 100, queues: 10, pods: 1000, fraction: 0.2, wantRefused: 100, wantApp: 200},
		{name: "uneven", users: 7, queues: 3, pods: 25, fraction: 0.5, wantRefused: 8, wantApp: 14},
		{name: "bench backlog", users: 1000, queues: 100, pods: 50000, admitted: 10000, wantRefused: 40000, wantApp: 2000},
		{name: "smoke backlog", users: 100, queues: 10, pods: 1000, admitted: 200, wantRefused: 800, wantApp: 200},
		{name: "uneven backlog", users: 7, queues: 3, pods: 25, admitted: 10, wantRefused: 15, wantApp: 14},
		{name: "scale loose", users: 10000, queues: 1000, levels: 3, pods: 50000, wantApp: 20000},
		{name: "scale refused", users: 10000, queues: 1000, levels: 3, pods: 50000, fraction: 0.2, wantRefused: 6000, wantApp: 20000},
		{name: "scale backlog", users: 10000, queues: 1000, levels: 3, pods: 50000, admitted: 10000, wantRefused: 40000, wantApp: 20000},
		{name: "smoke two levels", users: 100, queues: 10, levels: 2, pods: 1000, fraction: 0.2, wantRefused: 100, wantApp: 200},
		{name: "smoke three levels", users: 100, queues: 10, levels: 3, pods: 1000, fraction: 0.2, wantRefused: 100, wantApp: 200},
		{name: "uneven three levels", users: 7, queues: 5, levels: 3, pods: 25, admitted: 10, wantRefused: 15, wantApp: 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := workload{queueconfigtest.Synthetic{Users: tc.users, Queues: tc.queues, Groups: 20, Levels: tc.levels}}
			text := w.queueConfig(tc.pods, tc.fraction)
			if tc.admitted > 0 {
				text = w.backlogConfig(tc.admitted)
			} else if got := w.expectRefused(tc.pods, tc.fraction); got != tc.wantRefused {
				t.Fatalf("expectRefused = %d, want %d", got, tc.wantRefused)
			}
			cfg, err := queueconfig.Parse([]byte(text))
			if err != nil {
				t.Fatalf("generated config: %v\n%s", err, text)
			}
			m := ugm.New()
			m.SetConfig(cfg.Partition("default"))
			refused := 0
			apps := map[string]bool{}
			for i := 0; i < tc.pods; i++ {
				req := requestOf(t, w, i)
				apps[req.App.ID] = true
				if err := m.Increase(&req); err != nil {
					if !strings.Contains(err.Error(), "pods") {
						t.Fatalf("pod %d refused for something else than its pods limit: %v", i, err)
					}
					refused++
					if tc.admitted > 0 && i < tc.admitted {
						t.Fatalf("backlog: pod %d (of the first %d) refused: %v", i, tc.admitted, err)
					}
				} else if tc.admitted > 0 && i >= tc.admitted {
					t.Fatalf("backlog: pod %d (past the first %d) admitted", i, tc.admitted)
				}
			}
			if got := leafDepths(cfg.Partition("default").Root); tc.levels > 1 && (len(got) != 1 || got[tc.levels+1] != tc.queues) {
				t.Errorf("leaves by depth %v, want %d at depth %d", got, tc.queues, tc.levels+1)
			}
			if refused != tc.wantRefused || len(apps) != tc.wantApp {
				t.Errorf("refused %d pods of %d applications, want %d of %d", refused, len(apps), tc.wantRefused, tc.wantApp)
			}
		})
	}
}

// requestOf is what the plugin charges for pod i of w (its podRequest,
// redone from the pod's metadata).
func requestOf(t *testing.T, w workload, i int) ugm.Request {
	pod := w.pod(i)
	ui, err := podmeta.ParseUserInfo(podmeta.AnnotationUserInfo, pod.Annotations[podmeta.AnnotationUserInfo])
	if err != nil {
		t.Fatal(err)
	}
	v, err := resources.FromResourceList(pod.Spec.Containers[0].Resources.Requests)
	if err != nil {
		t.Fatal(err)
	}
	v.Set(resources.Intern(resources.Pods), 1)
	return ugm.Request{
		User: ui.User, Groups: ui.Groups, Queue: pod.Labels[podmeta.LabelQueue],
		App:       ugm.AppKey{Namespace: pod.Namespace, ID: pod.Labels[podmeta.LabelAppID]},
		Resources: v,
	}
}

// leafDepths counts the leaf queues of the tree under q by depth (root is
// depth 1).
func leafDepths(q *queueconfig.Queue) map[int]int {
	out := map[int]int{}
	var walk func(q *queueconfig.Queue, depth int)
	walk = func(q *queueconfig.Queue, depth int) {
		if len(q.Children) == 0 {
			out[depth]++
			return
		}
		for _, c := range q.Children {
			walk(c, depth+1)
		}
	}
	walk(q, 1)
	return out
}
