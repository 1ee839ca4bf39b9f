package userquota

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1alpha1 "k8s.io/api/scheduling/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// podGroup is a coscheduling PodGroup in ns1 of min members (and
// minResources, if any).
func podGroup(name string, min int32, minResources v1.ResourceList) *schedv1alpha1.PodGroup {
	return &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: name},
		Spec: schedv1alpha1.PodGroupSpec{MinMember: min, MinResources: minResources}}
}

// workload is a Workload in ns1 whose pod group "workers" is a gang of
// minCount min (0: a basic pod group, no gang).
func workload(name string, min int32) *schedulingv1alpha1.Workload {
	pg := schedulingv1alpha1.PodGroup{Name: "workers"}
	if min > 0 {
		pg.Policy.Gang = &schedulingv1alpha1.GangSchedulingPolicy{MinCount: min}
	} else {
		pg.Policy.Basic = &schedulingv1alpha1.BasicSchedulingPolicy{}
	}
	return &schedulingv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: name},
		Spec: schedulingv1alpha1.WorkloadSpec{PodGroups: []schedulingv1alpha1.PodGroup{pg}}}
}

// objectGangPods are n pods of user, 1 cpu each, in root.g, joining the
// gang object name in form: the PodGroup label, or a workloadRef to the
// Workload's pod group "workers". No application label: the object is
// their application.
func objectGangPods(form gang.Form, user, name string, n int) []*v1.Pod {
	var pods []*v1.Pod
	for i := 0; i < n; i++ {
		p := podOf(fmt.Sprintf("%s-%d", name, i)).Annotation("userquota.io/user-info", fmt.Sprintf(`{"user":%q}`, user)).
			Label("userquota.io/queue", "root.g").Req(cpu("1")).Obj()
		if form == gang.FormPodGroup {
			p.Labels[gang.LabelPodGroup] = name
		} else {
			p.Spec.WorkloadRef = &v1.WorkloadReference{Name: name, PodGroup: "workers"}
		}
		pods = append(pods, p)
	}
	return pods
}

// gangObjectCase is one form of the object gangs, with its objects.
type gangObjectCase struct {
	form gang.Form
	// object returns the gang object name of min members.
	object func(name string, min int32) runtime.Object
}

var gangObjectCases = []gangObjectCase{
	{gang.FormPodGroup, func(name string, min int32) runtime.Object { return podGroup(name, min, nil) }},
	{gang.FormWorkload, func(name string, min int32) runtime.Object { return workload(name, min) }},
}

// options are an env's options with these objects in the cluster.
func (c gangObjectCase) options(objs ...runtime.Object) envOptions {
	o := envOptions{config: queueconfigtest.Gangs, gangAPIs: true}
	for _, obj := range objs {
		if c.form == gang.FormPodGroup {
			o.podGroups = append(o.podGroups, obj)
		} else {
			o.objects = append(o.objects, obj)
		}
	}
	return o
}

// createObject creates a gang object in the cluster.
func (e *env) createObject(obj runtime.Object) {
	e.t.Helper()
	var err error
	switch o := obj.(type) {
	case *schedv1alpha1.PodGroup:
		_, err = e.pgc.SchedulingV1alpha1().PodGroups(o.Namespace).Create(e.ctx, o, metav1.CreateOptions{})
	case *schedulingv1alpha1.Workload:
		_, err = e.cs.SchedulingV1alpha1().Workloads(o.Namespace).Create(e.ctx, o, metav1.CreateOptions{})
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// deleteObject deletes the gang object of form name in ns1.
func (e *env) deleteObject(form gang.Form, name string) {
	e.t.Helper()
	var err error
	if form == gang.FormPodGroup {
		err = e.pgc.SchedulingV1alpha1().PodGroups("ns1").Delete(e.ctx, name, metav1.DeleteOptions{})
	} else {
		err = e.cs.SchedulingV1alpha1().Workloads("ns1").Delete(e.ctx, name, metav1.DeleteOptions{})
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// gangKey is the reservation key of the gang object name in form.
func gangKey(form gang.Form, name string) string {
	if form == gang.FormWorkload {
		return "Workload ns1/" + name + "/workers"
	}
	return "PodGroup ns1/" + name
}

// TestGangObjectsAllOrNothing is issue 19's scenario at PreEnqueue for
// the object forms: two gangs of 8 fit (16 of 20 cpu); a third is held
// whole, with a reason naming its object and minimum, and nothing held
// for it; when the first gang's pods go, the third is let in whole, its
// pods one application.
func TestGangObjectsAllOrNothing(t *testing.T) {
	for _, tc := range gangObjectCases {
		t.Run(string(tc.form), func(t *testing.T) {
			e := newEnv(t, tc.options(tc.object("a", 8), tc.object("b", 8), tc.object("c", 8)))
			a := objectGangPods(tc.form, "sue", "a", 8)
			b := objectGangPods(tc.form, "bob", "b", 8)
			c := objectGangPods(tc.form, "sue", "c", 8)
			for _, p := range append(a, b...) {
				if s := e.preEnqueue(p); !s.IsSuccess() {
					t.Fatalf("PreEnqueue(%s) = %v, want admitted", p.Name, s)
				}
			}
			want := fmt.Sprintf("gang %s waits until its minimum of 8 pods (cpu=8,pods=8) fits at once: queue root.g would exceed max: cpu 16+8 > 20", gangKey(tc.form, "c"))
			for _, p := range c {
				if s := e.preEnqueue(p); s.IsSuccess() || !strings.Contains(s.Message(), want) {
					t.Fatalf("PreEnqueue(%s) = %v, want held: %q", p.Name, s, want)
				}
			}
			if _, ok := e.pl.ugm.GangHeld(gangKey(tc.form, "c")); ok {
				t.Fatal("room held for gang c")
			}
			e.barrier()
			e.activator.reset()
			for _, p := range a {
				e.delete(p)
			}
			e.waitFor("gang c let in", func() bool { return len(e.activator.activated()) == len(c) })
			for _, p := range c {
				if s := e.pl.PreEnqueue(e.ctx, p); !s.IsSuccess() {
					t.Errorf("PreEnqueue(%s) after the let-in = %v", p.Name, s)
				}
			}
			// Its pods drew on one reservation: one application, the gang's.
			want = map[gang.Form]string{gang.FormPodGroup: "PodGroup/c", gang.FormWorkload: "Workload/c/workers"}[tc.form]
			if id := podApp(c[0]).ID; id != want {
				t.Errorf("gang c's application is %q, want %q", id, want)
			}
		})
	}
}

// TestGangObjectMissing: a pod whose gang object does not exist, or
// whose API is not served, is held naming the object, and nothing is held
// for it; the object created lets its pods in.
func TestGangObjectMissing(t *testing.T) {
	for _, tc := range gangObjectCases {
		t.Run(string(tc.form), func(t *testing.T) {
			for _, servedAPI := range []bool{true, false} {
				o := tc.options()
				o.gangAPIs = servedAPI
				e := newEnv(t, o)
				pods := objectGangPods(tc.form, "sue", "late", 2)
				want := fmt.Sprintf("gang %s: %s ns1/late: not found", gangKey(tc.form, "late"), tc.form)
				if !servedAPI {
					want = fmt.Sprintf("gang %s: %s ns1/late: its API is not served", gangKey(tc.form, "late"), tc.form)
				}
				for _, p := range pods {
					s := e.preEnqueue(p)
					if s.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(s.Message(), want) {
						t.Fatalf("served %v: PreEnqueue(%s) = %v, want held: %q", servedAPI, p.Name, s, want)
					}
					if h := e.pl.held.get(p.UID); h == nil || hold.KindOf(h.Reason) != hold.KindGang {
						t.Errorf("served %v: %s held as %v, want kind Gang", servedAPI, p.Name, h)
					}
				}
				if n := e.pl.ugm.AdmittedCount(); n != 0 {
					t.Errorf("served %v: %d pods hold room", servedAPI, n)
				}
				if !servedAPI {
					continue
				}
				e.barrier()
				e.activator.reset()
				e.createObject(tc.object("late", 2))
				e.waitFor("the gang's pods let in", func() bool { return len(e.activator.activated()) == len(pods) })
				if _, ok := e.pl.ugm.GangHeld(gangKey(tc.form, "late")); !ok {
					t.Error("the gang let in holds no reservation")
				}
			}
		})
	}
}

// TestGangObjectDeleted: deleting a gang's object releases what its
// reservation still holds (the members not created yet), and that room
// lets in a pod it kept out.
func TestGangObjectDeleted(t *testing.T) {
	for _, tc := range gangObjectCases {
		t.Run(string(tc.form), func(t *testing.T) {
			e := newEnv(t, tc.options(tc.object("d", 8)))
			// 2 of its 8 members exist: 6 cpu stay reserved.
			for _, p := range objectGangPods(tc.form, "sue", "d", 2) {
				if s := e.preEnqueue(p); !s.IsSuccess() {
					t.Fatalf("PreEnqueue(%s) = %v", p.Name, s)
				}
			}
			if held, _ := e.pl.ugm.GangHeld(gangKey(tc.form, "d")); held.String() != "cpu=6,pods=6" {
				t.Fatalf("gang holds %s, want the 6 members not created", held)
			}
			waits := userPod("waits", "bob", "", "root.g", "14")
			if s := e.preEnqueue(waits); s.IsSuccess() {
				t.Fatal("a pod took the gang's reserved room")
			}
			e.barrier()
			e.activator.reset()
			e.deleteObject(tc.form, "d")
			e.waitFor("the reserved room let in", func() bool { return len(e.activator.activated()) > 0 })
			if got := e.activator.activated(); len(got) != 1 || got[0] != "ns1/waits" {
				t.Errorf("activated %v, want ns1/waits", got)
			}
			if _, ok := e.pl.ugm.GangHeld(gangKey(tc.form, "d")); ok {
				t.Error("the reservation outlived its object")
			}
		})
	}
}

// TestWorkloadBasicPodGroupIsNoGang: a Workload pod group without a gang
// policy makes its pods ordinary pods, decided one by one.
func TestWorkloadBasicPodGroupIsNoGang(t *testing.T) {
	tc := gangObjectCases[1]
	e := newEnv(t, tc.options(tc.object("basic", 0)))
	p := objectGangPods(tc.form, "sue", "basic", 1)[0]
	if s := e.preEnqueue(p); !s.IsSuccess() {
		t.Fatalf("PreEnqueue = %v, want admitted alone", s)
	}
	if _, ok := e.pl.ugm.GangHeld(gangKey(tc.form, "basic")); ok {
		t.Error("a basic pod group reserved as a gang")
	}
}

// TestWorkloadMissingSaysHeld: a pod whose Workload does not exist is
// held in its status from the pod informer, without PreEnqueue (the
// in-tree GangScheduling plugin keeps it out of the queue before
// UserQuota sees it).
func TestWorkloadMissingSaysHeld(t *testing.T) {
	tc := gangObjectCases[1]
	e := newEnv(t, tc.options())
	p := objectGangPods(tc.form, "sue", "nowhere", 1)[0]
	e.create(p)
	want := "gang Workload ns1/nowhere/workers: Workload ns1/nowhere: not found"
	e.waitFor("the held status", func() bool {
		c := e.condition(p.Name, v1.PodScheduled)
		return c != nil && c.Reason == ReasonQuotaHeld && strings.Contains(c.Message, want)
	})
}
