package userquota

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// nsPod is a pod of user in namespace ns asking for cpu, naming no queue.
func nsPod(name, ns, user, cpuQty string) *v1.Pod {
	return podOf(name).Namespace(ns).UID("uid-"+ns+"-"+name).
		Annotation(podmeta.AnnotationUserInfo, `{"user":"`+user+`"}`).Req(cpu(cpuQty)).Obj()
}

// queuesOf lists the queues ugm holds below root.
func queuesOf(pl *Plugin) []string {
	var out []string
	for _, c := range pl.ugm.Queues().Children {
		out = append(out, c.QueuePath)
	}
	return out
}

func TestStockConfigPlacesByNamespace(t *testing.T) {
	e := newEnv(t, envOptions{config: queueconfigtest.StockWithUserLimit(t)})
	a, b := nsPod("a", "team-a", "sue", "1"), nsPod("b", "team-b", "sue", "1")
	for _, p := range []*v1.Pod{a, b} {
		e.mustSchedule(p)
		e.bind(p)
	}
	e.barrier()
	if diff := cmp.Diff([]string{"root.team-a", "root.team-b"}, queuesOf(e.pl)); diff != "" {
		t.Errorf("queues (-want,+got):\n%s", diff)
	}
	for _, p := range []*v1.Pod{a, b} {
		c, _ := e.pl.ledger.Get(string(p.UID))
		if want := "root." + p.Namespace; c.Request.Queue != want || !c.Request.Create {
			t.Errorf("%s charged to %q (create %v), want %s created by the rule", p.Name, c.Request.Queue, c.Request.Create, want)
		}
	}
	// The wildcard user limit on root binds across both dynamic queues.
	_, s := e.preFilter(nsPod("c", "team-c", "sue", "1"))
	want := statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `user "sue" would exceed maxresources in root: cpu 2+1 > 2`}
	if diff := cmp.Diff(want, summary(s)); diff != "" {
		t.Errorf("PreFilter (-want,+got):\n%s", diff)
	}
	// Another user is not bound by sue's usage; a queue label does not
	// override the tag rule.
	bob := podOf("d").Namespace("team-c").UID("uid-d").Annotation(podmeta.AnnotationUserInfo, `{"user":"bob"}`).
		Label(podmeta.LabelQueue, "root.elsewhere").Req(cpu("1")).Obj()
	e.mustSchedule(bob)
	if c, _ := e.pl.ledger.Get("uid-d"); c.Request.Queue != "root.team-c" {
		t.Errorf("bob's pod charged to %q, want root.team-c", c.Request.Queue)
	}
	e.bind(bob)
	for _, p := range []*v1.Pod{a, b, bob} {
		e.delete(p)
	}
	e.barrier()
	if got := queuesOf(e.pl); len(got) != 0 {
		t.Errorf("dynamic queues left after their pods went: %v", got)
	}
}

// aclConfig: ACL checks on; root has no ACL (fail closed), production
// takes john, every user gets a queue below root.users, and root.secret is
// for the admins group only (no rules reach it but a named queue does not
// matter here: rules decide).
const aclConfig = `
partitions:
- name: default
  placementrules:
  - name: fixed
    value: root.production
  - name: user
    create: true
    filter:
      type: deny
      users: [mallory]
    parent:
      name: fixed
      value: root.users
  queues:
  - name: root
    queues:
    - name: default
    - name: production
      submitacl: john
    - name: users
      parent: true
      submitacl: "*"
`

func TestPlacementRulesAndACLs(t *testing.T) {
	john := podOf("j").UID("uid-j").Annotation(podmeta.AnnotationUserInfo, `{"user":"john"}`).Req(cpu("1")).Obj()
	sue := podOf("s").UID("uid-s").Annotation(podmeta.AnnotationUserInfo, `{"user":"sue"}`).Req(cpu("1")).Obj()
	mallory := podOf("m").UID("uid-m").Annotation(podmeta.AnnotationUserInfo, `{"user":"mallory"}`).Req(cpu("1")).Obj()

	t.Run("admission", func(t *testing.T) {
		e := newEnv(t, envOptions{config: aclConfig})
		for pod, want := range map[*v1.Pod]string{john: "root.production", sue: "root.users.sue"} {
			e.mustSchedule(pod)
			if c, _ := e.pl.ledger.Get(string(pod.UID)); c.Request.Queue != want {
				t.Errorf("%s charged to %q, want %s", pod.Name, c.Request.Queue, want)
			}
		}
		_, s := e.preFilter(mallory)
		want := statusOf{Code: fwk.UnschedulableAndUnresolvable, Message: `no placement rule placed the pod: ` +
			`1. fixed root.production: user "mallory" may not submit to queue root.production: no ACL on its path allows it: root.production submitacl "john"; ` +
			`2. user (create, parent fixed root.users, filter deny users mallory): filter (deny users mallory) does not let user "mallory" (no groups) through`}
		if diff := cmp.Diff(want, summary(s)); diff != "" {
			t.Errorf("PreFilter (-want,+got):\n%s", diff)
		}
	})

	t.Run("running pods are charged where admission put them, never refused", func(t *testing.T) {
		bound := func(p *v1.Pod) *v1.Pod {
			p = p.DeepCopy()
			p.Spec.NodeName, p.Status.Phase = testNode, v1.PodRunning
			return p
		}
		e := newEnv(t, envOptions{config: aclConfig, objects: []runtime.Object{bound(john), bound(sue), bound(mallory)}})
		for uid, want := range map[string]string{"uid-j": "root.production", "uid-s": "root.users.sue", "uid-m": "root.production"} {
			c, ok := e.pl.ledger.Get(uid)
			if !ok || !c.Forced || c.Request.Queue != want {
				t.Errorf("%s: charge %+v (live %v), want forced in %s", uid, c, ok, want)
			}
		}
	})

	t.Run("no rules: the named queue's ACLs", func(t *testing.T) {
		cfg := aclConfig[:strings.Index(aclConfig, "  placementrules:")] + aclConfig[strings.Index(aclConfig, "  queues:"):]
		e := newEnv(t, envOptions{config: cfg})
		_, s := e.preFilter(userPod("x", "sue", "", "production", "1"))
		want := statusOf{Code: fwk.UnschedulableAndUnresolvable,
			Message: `user "sue" may not submit to queue root.production: no ACL on its path allows it: root.production submitacl "john"`}
		if diff := cmp.Diff(want, summary(s)); diff != "" {
			t.Errorf("PreFilter (-want,+got):\n%s", diff)
		}
		e.mustSchedule(userPod("y", "john", "", "production", "1"))
	})
}
