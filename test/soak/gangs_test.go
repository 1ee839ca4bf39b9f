package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// gangJobPods are n pods of one gang Job, as gangJob writes them: each asks
// cpu and 64Mi, the task group n of that.
func gangJobPods(t *testing.T, job, user, queue, cpu string, n int) []*v1.Pod {
	t.Helper()
	groups, err := json.Marshal([]map[string]any{{"name": "workers", "minMember": n, "minResource": map[string]string{"cpu": cpu, "memory": "64Mi"}}})
	if err != nil {
		t.Fatal(err)
	}
	var pods []*v1.Pod
	for i := 0; i < n; i++ {
		p := testPod(fmt.Sprintf("%s-%d", job, i), user, []string{"g0"}, queue, cpu)
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: job, Controller: ptr.To(true)}}
		p.Annotations[gang.AnnotationTaskGroupName] = "workers"
		p.Annotations[gang.AnnotationTaskGroups] = string(groups)
		pods = append(pods, p)
	}
	return pods
}

func TestGangOf(t *testing.T) {
	p := gangJobPods(t, "gang-u1", "u1", "root.default", "500m", 3)[0]
	c := chargeOf(p)
	if c.gang == nil {
		t.Fatal("no gang read")
	}
	want := vec{resCPU: 1500, resMemory: 3 * 64 << 20, resPods: 3}
	if c.gang.key != "TaskGroups soak-a/Job/gang-u1" || c.gang.members != 3 || !vecEqual(c.gang.min, want) {
		t.Errorf("gang %+v, want key TaskGroups soak-a/Job/gang-u1, 3 members, min %v", c.gang, want)
	}
	if c := chargeOf(testPod("plain", "u1", nil, "", "1")); c.gang != nil {
		t.Errorf("a plain pod has gang %+v", c.gang)
	}
}

// The gang Job the workload writes is read back as the gang it meant.
func TestGangJobIsItsGang(t *testing.T) {
	c := testConfig(t)
	w := newWorkload(&options{users: 24, groups: 6}, nil, newHistory(c, nil), 1)
	job, err := w.gangJob(w.users[3], "root.default", 4)
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: job.Spec.Template.ObjectMeta, Spec: job.Spec.Template.Spec}
	pod.Namespace = job.Namespace
	pod.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: job.Name, Controller: ptr.To(true)}}
	ch := chargeOf(pod)
	if ch.gang == nil || ch.gang.members != 4 {
		t.Fatalf("gang %+v", ch.gang)
	}
	each := ch.res.clone()
	all := vec{}
	for i := 0; i < 4; i++ {
		all.add(each, 1)
	}
	if !vecEqual(ch.gang.min, all) {
		t.Errorf("minimum %v, want 4 x the pod's request %v", ch.gang.min, each)
	}
	if *job.Spec.Parallelism != 4 || *job.Spec.Completions != 4 {
		t.Errorf("parallelism %d, completions %d: a gang Job runs all its pods at once", *job.Spec.Parallelism, *job.Spec.Completions)
	}
}

// A gang none of whose pods runs waits for its whole minimum: its pod
// alone fitting does not make it a pod the scheduler must bind. Once one
// runs, the others draw on the gang's reservation pod by pod.
func TestHistoryGangWaitsForItsMinimum(t *testing.T) {
	c := testConfig(t)
	h := newHistory(c, nil)
	h.addVersion(c).applied = time.Now()
	limit := c.byPath["root"].userLimit("u010").max[resPods]
	if limit < 2 {
		t.Fatalf("user limit %d pods: the test needs 2", limit)
	}
	pods := gangJobPods(t, "gang-u010", "u010", "root.default", "100m", int(limit)+1)
	for i, p := range pods {
		put(t, h, int64(i+1), p)
	}
	if fp := h.fittingPending(); len(fp) != 0 {
		t.Errorf("a gang of %d pods over a limit of %d: fitting %v", limit+1, limit, fp)
	}
	small := gangJobPods(t, "gang-small", "u010", "root.default", "100m", 2)
	for i, p := range small {
		put(t, h, int64(100+i), p)
	}
	if fp := h.fittingPending(); len(fp) != 2 {
		t.Errorf("a gang of 2 within the limit: fitting %v, want both", fp)
	}
	small[0].Spec.NodeName = "n"
	put(t, h, 200, small[0])
	if h.violation != "" {
		t.Fatalf("the whole minimum fitted: %s", h.violation)
	}
	if fp := h.fittingPending(); !strings.Contains(strings.Join(fp, ","), "gang-small-1") {
		t.Errorf("the second pod of a running gang draws: fitting %v", fp)
	}
	small[1].Spec.NodeName = "n"
	put(t, h, 201, small[1])
	if h.c.gangFirstBinds != 1 || h.c.gangsWhole != 1 {
		t.Errorf("first binds %d, whole %d, want 1 and 1", h.c.gangFirstBinds, h.c.gangsWhole)
	}
}

// The first pod of a gang bound while its whole minimum did not fit is a
// violation, though the pod alone fitted.
func TestHistoryCatchesAPartialGang(t *testing.T) {
	c := testConfig(t)
	h := newHistory(c, nil)
	h.addVersion(c).applied = time.Now()
	limit := c.byPath["root"].userLimit("u010").max[resPods]
	pods := gangJobPods(t, "gang-u010", "u010", "root.default", "100m", int(limit)+1)
	for i, p := range pods {
		put(t, h, int64(i+1), p)
	}
	pods[0].Spec.NodeName = "n"
	put(t, h, 100, pods[0])
	if !strings.Contains(h.violation, "the first of gang TaskGroups soak-a/Job/gang-u010") || !strings.Contains(h.violation, `user "u010" in root had no room for the whole minimum`) {
		t.Fatalf("violation %q", h.violation)
	}
}

// What the API server's pods imply is reserved: a gang part bound with
// others waiting holds the rest of its minimum; one none of whose pods
// runs, or that runs its minimum, holds nothing. The REST answer's
// reservation lines compare with it.
func TestReserveImplied(t *testing.T) {
	c := testConfig(t)
	pods := gangJobPods(t, "gang-u1", "u1", "root.default", "500m", 3)
	list := func() []v1.Pod {
		out := make([]v1.Pod, len(pods))
		for i, p := range pods {
			out[i] = *p
		}
		return out
	}
	reserved := func() snap {
		m := newUsageModel(c)
		m.reserve(list())
		return m.snap()
	}
	if s := reserved(); len(s.lines) != 0 {
		t.Errorf("no pod bound: %v", s.lines)
	}
	pods[0].Spec.NodeName = "n"
	s := reserved()
	key := "TaskGroups soak-a/Job/gang-u1"
	want := vec{resCPU: 1000, resMemory: 2 * 64 << 20, resPods: 2}.String() + " gangs=" + key
	for _, k := range []string{"user u1 root", "user u1 root.default", "queue root", "queue root.default"} {
		if got := s.lines[reservedKey(k)]; got != want {
			t.Errorf("%s: %q, want %q", reservedKey(k), got, want)
		}
	}
	// The same reservation as the REST API shows it.
	res := resources.Vector{}
	for k, x := range map[string]int64{"cpu": 1000, "memory": 2 * 64 << 20, "pods": 2} {
		res.Set(resources.Intern(k), x)
	}
	q := &ugm.QueueUsage{QueuePath: "root", ReservedResource: res, ReservedGangs: []string{key},
		Children: []*ugm.QueueUsage{{QueuePath: "root.default", ReservedResource: res, ReservedGangs: []string{key}}}}
	rs := restSnap(nil, nil, q)
	for _, k := range []string{"queue root", "queue root.default"} {
		if rs.lines[reservedKey(k)] != s.lines[reservedKey(k)] {
			t.Errorf("%s: REST %q, model %q", k, rs.lines[reservedKey(k)], s.lines[reservedKey(k)])
		}
	}
	if len(withoutReserved(s).lines) != 0 {
		t.Errorf("withoutReserved kept %v", withoutReserved(s).lines)
	}
	pods[1].Spec.NodeName, pods[2].Spec.NodeName = "n", "n"
	if s := reserved(); len(s.lines) != 0 {
		t.Errorf("the minimum runs: %v", s.lines)
	}
}

// A gang part bound whose rest does not fit the limits in force on the
// usage is not expected to hold it: a config change dropped its
// reservation (or a failover found others had taken the room) and it
// could not reserve again; one whose rest fits still is.
func TestReserveImpliedOnlyWhereItFits(t *testing.T) {
	c := testConfig(t)
	pods := gangJobPods(t, "gang-u1", "u1", "root.default", "500m", 3)
	pods[0].Spec.NodeName = "n"
	reserved := func(cfg *qconfig) []string {
		m := newUsageModel(cfg)
		list := make([]v1.Pod, len(pods))
		for i, p := range pods {
			list[i] = *p
			if chargedNow(p) {
				m.charge(chargeOf(p))
			}
		}
		m.reserve(list)
		var out []string
		for k := range m.snap().lines {
			if strings.HasSuffix(k, " reserved") {
				out = append(out, k)
			}
		}
		return out
	}
	if got := reserved(c); len(got) == 0 {
		t.Fatal("the rest fits: want it reserved, got nothing")
	}
	// Every pods limit at 1: the bound pod fills u1's, and the rest (2
	// pods) cannot be reserved.
	if got := reserved(c.adjusted(-1000)); len(got) != 0 {
		t.Errorf("the rest does not fit: want nothing reserved, got %v", got)
	}
}

// A waiting gang's pod names, inside its gang message, the limit its
// minimum waits on: limitCounts reads it as the scheduler does.
func TestLimitCountsGang(t *testing.T) {
	c := podCharge{user: "u1", groups: []string{"g1"}, queue: "root.alpha.a1"}
	for _, tc := range []struct {
		limit string
		want  bool
	}{
		{`user "u1" would exceed maxresources in root: pods 3+4 > 3`, true},
		{`user "u2" would exceed maxresources in root: pods 3+4 > 3`, false},
		{`queue root.alpha would exceed max: cpu 4+1 > 4`, true},
	} {
		msg := hold.MessagePrefix + (&gang.HeldError{Gang: gang.ID{Namespace: "soak-a", Form: gang.FormTaskGroups, Name: "Job/x"},
			Min: gang.Min{Members: 4}, Err: errors.New(tc.limit)}).Error()
		if got := limitCounts(msg, c, "g1"); got != tc.want {
			t.Errorf("limitCounts(%q) = %v, want %v", msg, got, tc.want)
		}
	}
}
