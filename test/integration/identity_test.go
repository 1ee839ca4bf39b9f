package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/controller/replication"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/webhook"
)

// Issue 20, point 1: identity through every controller
// (docs/security.md, "Identity through every controller"). Each test runs
// the webhook behind the real API server with manifests/webhook-config.yaml,
// the scheduler with requireUserInfo on (as manifests/scheduler-config.yaml
// has it), and kube-controller-manager's replication controller as
// --use-service-account-credentials runs it: with a token of the
// ServiceAccount kube-system/replication-controller, which the webhook's
// default trust list names. bob tries to run pods as sue; none may.

const (
	sueIdentity = `{"user":"sue","groups":["dev"]}`
	bobIdentity = `{"user":"bob","groups":["ops"]}`
	// requireRefusal is the scheduler's refusal of a pod without user info.
	requireRefusal = "requireUserInfo is on"
)

// identityCluster is a cluster with the users of webhookTokens, the
// webhook registered, the queue config, the replication controller running
// as its ServiceAccount and the scheduler with requireUserInfo.
func identityCluster(t *testing.T) *cluster {
	t.Helper()
	c := webhookCluster(t, 2)
	c.setQueueConfig(sueTwoCPU)
	c.startReplicationController()
	c.startSchedulerWith(map[string]any{"requireUserInfo": true})
	return c
}

// startReplicationController runs kube-controller-manager's replication
// controller acting as system:serviceaccount:kube-system:replication-controller
// (a TokenRequest token, as --use-service-account-credentials gives it);
// its informers list as the admin, as the controller manager's shared
// informers do.
func (c *cluster) startReplicationController() {
	c.t.Helper()
	client := c.serviceAccountClient("kube-system", "replication-controller")
	f := informers.NewSharedInformerFactory(c.client, 0)
	rm := replication.NewReplicationManager(c.ctx, f.Core().V1().Pods(), f.Core().V1().ReplicationControllers(), client, 500)
	f.Start(c.ctx.Done())
	go rm.Run(c.ctx, 2)
}

// userInfoOf names the user info keys and values a pod or template
// carries, for messages.
func userInfoOf(annotations map[string]string) string {
	var parts []string
	for _, k := range podmeta.UserInfoKeys {
		if v, ok := annotations[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	if parts == nil {
		return "no user info"
	}
	return strings.Join(parts, ", ")
}

// runsAs is the user the scheduler reads from a pod (the first of
// podmeta.UserInfoKeys present), "" without one.
func runsAs(p *v1.Pod) string {
	for _, k := range podmeta.UserInfoKeys {
		if raw, ok := p.Annotations[k]; ok {
			ui, err := podmeta.ParseUserInfo(k, raw)
			if err != nil {
				return "(invalid: " + err.Error() + ")"
			}
			return ui.User
		}
	}
	return ""
}

// rc is a ReplicationController of replicas pods of one cpu whose template
// names scheduler and carries annotations.
func (c *cluster) rc(ns, name, scheduler string, replicas int32, annotations map[string]string) *v1.ReplicationController {
	spec := c.makePod(podSpec{name: "x", cpu: "1"}).Spec
	spec.SchedulerName = scheduler
	return &v1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ReplicationControllerSpec{Replicas: ptr.To(replicas), Selector: map[string]string{"rc": name},
			Template: &v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"rc": name}, Annotations: annotations}, Spec: spec}},
	}
}

// rcPods lists the pods of the RC name in ns.
func (c *cluster) rcPods(ns, name string) []v1.Pod {
	c.t.Helper()
	pods, err := c.client.CoreV1().Pods(ns).List(c.ctx, metav1.ListOptions{LabelSelector: "rc=" + name})
	if err != nil {
		c.t.Fatal(err)
	}
	return pods.Items
}

// waitRCPod waits until the RC's pod (one) is created and, when bound, is
// bound to a node; it returns the pod.
func (c *cluster) waitRCPod(ns, name string, bound bool) v1.Pod {
	c.t.Helper()
	var p v1.Pod
	c.eventually(fmt.Sprintf("a pod of RC %s/%s (bound: %v)", ns, name, bound), bindTimeout, func() (bool, error) {
		pods := c.rcPods(ns, name)
		if len(pods) == 0 {
			return false, nil
		}
		p = pods[0]
		return !bound || p.Spec.NodeName != "", nil
	})
	return p
}

// checkNotSue fails the test for every pod of ours in ns the scheduler
// reads as sue's, and if the scheduler charges sue anything.
func (c *cluster) checkNotSue(ns string) {
	c.t.Helper()
	pods, err := c.client.CoreV1().Pods(ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.SchedulerName == schedulerName && runsAs(&p) == "sue" {
			c.t.Errorf("pod %s/%s (bound to %q, scheduler %s) runs as sue: %s", p.Namespace, p.Name, p.Spec.NodeName, p.Spec.SchedulerName, userInfoOf(p.Annotations))
		}
	}
	if u := c.sched.userRoot("sue"); u != nil {
		c.t.Errorf("the scheduler charges sue for bob's pods: %+v", u)
	}
}

// TestIdentityRCForgery: bob's ReplicationController whose template claims
// sue (with our key, or only YuniKorn's) is refused; the RC controller,
// trusted to copy the template's user info, never makes a pod of sue's.
// bob's RC without a claim is stamped with bob, and so is its pod.
// Before the fix RCs reached no webhook: both were created, and their
// pods ran as sue.
func TestIdentityRCForgery(t *testing.T) {
	c := identityCluster(t)
	bob := c.clientAs("bob-token")

	for _, tc := range []struct{ name, key string }{
		{"forged", podmeta.AnnotationUserInfo},
		{"forged-yunikorn", podmeta.YuniKornUserInfo},
	} {
		rc := c.rc(c.ns, tc.name, schedulerName, 1, map[string]string{tc.key: sueIdentity})
		_, err := bob.CoreV1().ReplicationControllers(c.ns).Create(c.ctx, rc, metav1.CreateOptions{})
		if err == nil {
			t.Errorf("bob's RC %s claiming sue with %s was created, want refused", tc.name, tc.key)
			p := c.waitRCPod(c.ns, tc.name, true)
			t.Errorf("RC %s: the replication controller's pod %s is bound to %s with %s", tc.name, p.Name, p.Spec.NodeName, userInfoOf(p.Annotations))
			continue
		}
		if want := "annotation " + tc.key + " is set by the userquota webhook from who you are"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ReplicationController "+c.ns+"/"+tc.name) {
			t.Errorf("bob's RC %s claiming sue: err = %v, want one naming the RC and containing %q", tc.name, err, want)
		}
		if _, err := c.client.CoreV1().ReplicationControllers(c.ns).Get(c.ctx, tc.name, metav1.GetOptions{}); err == nil {
			t.Errorf("refused RC %s exists", tc.name)
		}
	}

	// bob's own RC: the template is stamped, the controller copies it.
	rc, err := bob.CoreV1().ReplicationControllers(c.ns).Create(c.ctx, c.rc(c.ns, "bobs", schedulerName, 1, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("bob's RC: %v", err)
	}
	if got := rc.Spec.Template.Annotations[podmeta.AnnotationUserInfo]; got != bobIdentity {
		t.Errorf("bob's RC template: %s, want %s", userInfoOf(rc.Spec.Template.Annotations), bobIdentity)
	}
	p := c.waitRCPod(c.ns, "bobs", false)
	if got := runsAs(&p); got != "bob" {
		t.Errorf("bob's RC's pod %s runs as %q (%s), want bob", p.Name, got, userInfoOf(p.Annotations))
	} else {
		c.waitBound(p.Name, bindTimeout)
	}
	c.checkNotSue(c.ns)
}

// TestIdentitySchedulerSwitch: bob writes workloads for another scheduler
// (the webhook never sees them) claiming sue, with our key and with only
// YuniKorn's, then moves them to userquota-scheduler by UPDATE. The update
// is checked as a creation: refused, and nothing changes. Dropping the
// claim in the same update stamps bob. Before the fix the RC's switch kept
// sue (the old object's annotation was trusted) and the Deployment's went
// unstamped with YuniKorn's sue, which the scheduler read.
func TestIdentitySchedulerSwitch(t *testing.T) {
	c := identityCluster(t)
	c.startControllers() // deployment and replicaset, as the admin (trusted)
	bob := c.clientAs("bob-token")

	// An RC claiming sue with our key.
	rc, err := bob.CoreV1().ReplicationControllers(c.ns).Create(c.ctx, c.rc(c.ns, "switch-rc", "other-scheduler", 0, map[string]string{podmeta.AnnotationUserInfo: sueIdentity}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Patches, not updates: the controllers write status meanwhile.
	switchPatch := []byte(fmt.Sprintf(`{"spec":{"replicas":1,"template":{"spec":{"schedulerName":%q}}}}`, schedulerName))
	if _, err := bob.CoreV1().ReplicationControllers(c.ns).Patch(c.ctx, rc.Name, types.StrategicMergePatchType, switchPatch, metav1.PatchOptions{}); err == nil {
		t.Errorf("bob moving RC switch-rc (claiming sue) to %s: allowed, want refused", schedulerName)
		p := c.waitRCPod(c.ns, "switch-rc", true)
		t.Errorf("RC switch-rc: pod %s bound to %s with %s", p.Name, p.Spec.NodeName, userInfoOf(p.Annotations))
	} else if !strings.Contains(err.Error(), "moves it to "+schedulerName) || !strings.Contains(err.Error(), "you may not set it to "+sueIdentity) {
		t.Errorf("bob moving RC switch-rc: err = %v, want the switch named and sue refused", err)
	} else if got, _ := c.client.CoreV1().ReplicationControllers(c.ns).Get(c.ctx, "switch-rc", metav1.GetOptions{}); got.Spec.Template.Spec.SchedulerName != "other-scheduler" || *got.Spec.Replicas != 0 {
		t.Errorf("refused update changed RC switch-rc: scheduler %q, replicas %d", got.Spec.Template.Spec.SchedulerName, *got.Spec.Replicas)
	}

	// A Deployment claiming sue with YuniKorn's key only.
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "switch-dep"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "switch-dep"}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "switch-dep"},
				Annotations: map[string]string{podmeta.YuniKornUserInfo: sueIdentity}}, Spec: c.makePod(podSpec{name: "x", cpu: "1"}).Spec}},
	}
	dep.Spec.Template.Spec.SchedulerName = "other-scheduler"
	if dep, err = bob.AppsV1().Deployments(c.ns).Create(c.ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := dep.Spec.Template.Annotations[podmeta.YuniKornUserInfo]; got != sueIdentity {
		t.Fatalf("Deployment of another scheduler: %s, want it untouched", userInfoOf(dep.Spec.Template.Annotations))
	}
	if _, err := bob.AppsV1().Deployments(c.ns).Patch(c.ctx, dep.Name, types.StrategicMergePatchType, switchPatch, metav1.PatchOptions{}); err == nil {
		t.Errorf("bob moving Deployment switch-dep (YuniKorn's key claiming sue) to %s: allowed, want refused", schedulerName)
		var p v1.Pod
		c.eventually("a bound pod of switch-dep", bindTimeout, func() (bool, error) {
			pods, err := c.client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{LabelSelector: "app=switch-dep"})
			for _, q := range pods.Items {
				if q.Spec.SchedulerName == schedulerName && q.Spec.NodeName != "" {
					p = q
					return true, nil
				}
			}
			return false, err
		})
		t.Errorf("Deployment switch-dep: pod %s bound to %s with %s", p.Name, p.Spec.NodeName, userInfoOf(p.Annotations))
	} else if !strings.Contains(err.Error(), "moves it to "+schedulerName) || !strings.Contains(err.Error(), "annotation "+podmeta.YuniKornUserInfo) {
		t.Errorf("bob moving Deployment switch-dep: err = %v, want the switch and YuniKorn's key named", err)
	}

	// The same switch without the claim: stamped with bob, who made it.
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":1,"template":{"metadata":{"annotations":{%q:null}},"spec":{"schedulerName":%q}}}}`, podmeta.AnnotationUserInfo, schedulerName))
	rc, err = bob.CoreV1().ReplicationControllers(c.ns).Patch(c.ctx, "switch-rc", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("bob's switch of switch-rc without the claim: %v", err)
	}
	if got := rc.Spec.Template.Annotations[podmeta.AnnotationUserInfo]; got != bobIdentity {
		t.Errorf("switch-rc after bob's switch: %s, want %s", userInfoOf(rc.Spec.Template.Annotations), bobIdentity)
	}
	p := c.waitRCPod(c.ns, "switch-rc", true)
	if got := runsAs(&p); got != "bob" {
		t.Errorf("switch-rc's pod %s runs as %q (%s), want bob", p.Name, got, userInfoOf(p.Annotations))
	}
	c.checkNotSue(c.ns)
}

// TestIdentityEnforcedLater: bob's RC and Deployment claiming sue exist in
// a namespace before it is labelled userquota.io/enforce=true. Then the RC
// controller's new pod (from the template nothing checked, redirected to
// userquota-scheduler) carries no user info, so requireUserInfo refuses
// it, and bob's update of the Deployment (which the enforce webhook moves
// to our scheduler) is refused. Before the fix the pod kept sue's claim
// and was bound as sue, and the update was allowed with YuniKorn's sue.
func TestIdentityEnforcedLater(t *testing.T) {
	c := identityCluster(t)
	bob := c.clientAs("bob-token")
	const ns = "late"
	c.createNamespace(ns)

	if _, err := bob.CoreV1().ReplicationControllers(ns).Create(c.ctx, c.rc(ns, "late-rc", "", 1, map[string]string{podmeta.AnnotationUserInfo: sueIdentity}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := c.waitRCPod(ns, "late-rc", false)
	if first.Spec.SchedulerName != "default-scheduler" {
		t.Fatalf("RC late-rc's pod before enforcement names %q, want default-scheduler", first.Spec.SchedulerName)
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late-dep"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "late-dep"}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "late-dep"},
				Annotations: map[string]string{podmeta.YuniKornUserInfo: sueIdentity}}, Spec: c.makePod(podSpec{name: "x", cpu: "1"}).Spec}},
	}
	dep.Spec.Template.Spec.SchedulerName = ""
	if _, err := bob.AppsV1().Deployments(ns).Create(c.ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The namespace is enforced from now on; the API server's namespace
	// informer takes a moment to send its pods to enforce.userquota.io.
	nsObj, err := c.client.CoreV1().Namespaces().Get(c.ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels[webhook.LabelEnforce] = "true"
	if _, err := c.client.CoreV1().Namespaces().Update(c.ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := c.makePod(podSpec{name: "probe", cpu: "1"})
	probe.Namespace, probe.Spec.SchedulerName = ns, ""
	c.eventually("namespace "+ns+" enforced", 30*time.Second, func() (bool, error) {
		p, err := c.clientAs("sue-token").CoreV1().Pods(ns).Create(c.ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && p.Spec.SchedulerName == schedulerName, nil
	})

	// The RC controller replaces bob's deleted pod from the old template.
	if err := bob.CoreV1().Pods(ns).Delete(c.ctx, first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var next v1.Pod
	c.eventually("RC late-rc's new pod", bindTimeout, func() (bool, error) {
		for _, p := range c.rcPods(ns, "late-rc") {
			if p.Name != first.Name {
				next = p
				return true, nil
			}
		}
		return false, nil
	})
	if next.Spec.SchedulerName != schedulerName {
		t.Errorf("RC late-rc's new pod in the enforced namespace names %q, want %s", next.Spec.SchedulerName, schedulerName)
	}
	if got := userInfoOf(next.Annotations); got != "no user info" {
		t.Errorf("RC late-rc's new pod %s carries %s from the template nothing checked, want no user info", next.Name, got)
		c.waitBoundIn(ns, next.Name, bindTimeout)
	} else {
		c.waitRefusedIn(ns, next.Name, requireRefusal)
	}

	// bob's update of the Deployment (scaling it) is checked as a creation.
	if got, err := bob.AppsV1().Deployments(ns).Patch(c.ctx, dep.Name, types.StrategicMergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err == nil {
		t.Errorf("bob's update of Deployment late-dep (YuniKorn's key claiming sue) in the newly enforced namespace: allowed with scheduler %q and %s, want refused",
			got.Spec.Template.Spec.SchedulerName, userInfoOf(got.Spec.Template.Annotations))
	} else if !strings.Contains(err.Error(), "moves it to "+schedulerName) || !strings.Contains(err.Error(), "you may not set it to "+sueIdentity) {
		t.Errorf("bob's update of Deployment late-dep: err = %v, want the move named and sue refused", err)
	}
	c.checkNotSue(ns)
}
