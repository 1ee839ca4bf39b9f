package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/userquota/userquota/pkg/plugins/userquota"
	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// teamConfig limits alice to 2 cpu and the group dev to 3 cpu in root.team.
var teamConfig = queueconfigtest.Root(`
queues:
- name: default
- name: team
  limits:
  - limit: alice
    users: [alice]
    maxresources: {vcore: 2}
  - limit: dev
    groups: [dev]
    maxresources: {vcore: 3}
`)

// bindTimeout is how long a pod that fits may take to be bound: seconds,
// far below the scheduler's 5-minute flush of unschedulable pods.
const bindTimeout = 15 * time.Second

func TestUserAndGroupLimits(t *testing.T) {
	c := newCluster(t, 2)
	c.setQueueConfig(teamConfig)
	c.startScheduler()
	for _, n := range []string{"a1", "a2"} {
		c.createPod(podSpec{name: n, user: "alice", groups: []string{"dev"}, queue: "root.team", cpu: "1"})
		c.waitBound(n, bindTimeout)
	}
	c.createPod(podSpec{name: "a3", user: "alice", groups: []string{"dev"}, queue: "root.team", cpu: "1"})
	msg := c.waitRefused("a3", `user "alice" would exceed maxresources in root.team: cpu 2+1 > 2`)
	t.Logf("refusal as the user sees it: %s", msg)

	c.createPod(podSpec{name: "b1", user: "bob", groups: []string{"dev"}, queue: "root.team", cpu: "1"})
	c.waitBound("b1", bindTimeout)
	c.createPod(podSpec{name: "c1", user: "carol", groups: []string{"dev"}, queue: "team", cpu: "1"})
	c.waitRefused("c1", `group "dev" would exceed maxresources in root.team: cpu 3+1 > 3`)

	// Someone outside dev in another queue is not affected.
	c.createPod(podSpec{name: "d1", user: "dave", cpu: "4"})
	c.waitBound("d1", bindTimeout)

	// A pod naming a queue that does not exist is refused, saying so.
	c.createPod(podSpec{name: "x1", user: "dave", queue: "root.nowhere", cpu: "1"})
	c.waitRefused("x1", `queue "root.nowhere" does not exist`)
}

func TestReleaseAdmitsWaitingPod(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(teamConfig)
	rs := c.startScheduler()
	for _, n := range []string{"a1", "a2"} {
		c.createPod(podSpec{name: n, user: "alice", queue: "root.team", cpu: "1"})
		c.waitBound(n, bindTimeout)
	}
	c.createPod(podSpec{name: "a3", user: "alice", queue: "root.team", cpu: "1"})
	c.waitRefused("a3", `user "alice"`)
	// Another user's release must not admit it.
	c.createPod(podSpec{name: "z1", user: "zed", queue: "root.team", cpu: "1"})
	c.waitBound("z1", bindTimeout)
	c.deletePod("z1")
	c.stillPending("a3", 2*time.Second)

	start := time.Now()
	c.deletePod("a1")
	c.waitBound("a3", bindTimeout)
	t.Logf("a3 bound %v after a1 was deleted", time.Since(start).Round(time.Millisecond))

	c.createPod(podSpec{name: "a4", user: "alice", queue: "root.team", cpu: "1"})
	c.waitRefused("a4", `user "alice"`)
	start = time.Now()
	c.finishPod("a2")
	c.waitBound("a4", bindTimeout)
	t.Logf("a4 bound %v after a2 succeeded", time.Since(start).Round(time.Millisecond))

	c.eventually("alice's usage is a3+a4", 5*time.Second, func() (bool, error) {
		u := rs.userRoot("alice")
		return u != nil && u.ResourceUsage.Get(0) == 2000 && len(u.RunningApplications) == 2, nil
	})
}

func TestConfigReload(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(teamConfig)
	c.startScheduler()
	for _, n := range []string{"a1", "a2"} {
		c.createPod(podSpec{name: n, user: "alice", queue: "root.team", cpu: "1"})
		c.waitBound(n, bindTimeout)
	}
	c.createPod(podSpec{name: "a3", user: "alice", queue: "root.team", cpu: "1"})
	c.waitRefused("a3", "cpu 2+1 > 2")

	c.setQueueConfig(strings.Replace(teamConfig, "maxresources: {vcore: 2}", "maxresources: {vcore: 3}", 1))
	c.waitBound("a3", bindTimeout)

	// An invalid version changes nothing and raises a Warning event.
	c.setQueueConfig(teamConfig + "    bogus: key\n")
	c.waitConfigWarning("bogus")
	c.createPod(podSpec{name: "a4", user: "alice", queue: "root.team", cpu: "1"})
	c.waitRefused("a4", "cpu 3+1 > 3")
}

// waitConfigWarning waits for the Warning event the scheduler raises on
// the queue-config ConfigMap for a version that does not load, its note
// containing want.
func (c *cluster) waitConfigWarning(want string) {
	c.t.Helper()
	c.eventually("a Warning event on the ConfigMap naming "+want, 15*time.Second, func() (bool, error) {
		evs, err := c.client.EventsV1().Events(c.ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == userquota.ReasonInvalidConfig && e.Type == v1.EventTypeWarning && e.Regarding.Name == "userquota-config" && strings.Contains(e.Note, want) {
				return true, nil
			}
		}
		return false, nil
	})
}

func TestRestartKeepsUsage(t *testing.T) {
	c := newCluster(t, 2)
	c.setQueueConfig(teamConfig)
	first := c.startScheduler()
	for _, ps := range []podSpec{
		{name: "a1", user: "alice", groups: []string{"dev"}, queue: "root.team", cpu: "1", app: "x"},
		{name: "a2", user: "alice", groups: []string{"dev"}, queue: "root.team", cpu: "1", app: "y"},
		{name: "b1", user: "bob", groups: []string{"dev"}, queue: "root.team", cpu: "500m"},
		{name: "n1", user: "nora", cpu: "3"},
	} {
		c.createPod(ps)
		c.waitBound(ps.name, bindTimeout)
	}
	c.createPod(podSpec{name: "a3", user: "alice", groups: []string{"dev"}, queue: "root.team", cpu: "1"})
	c.waitRefused("a3", `user "alice"`)
	before := snapshot(t, first)
	first.stop()

	second := c.startScheduler()
	c.eventually("usage recovered after restart", 15*time.Second, func() (bool, error) {
		return snapshot(t, second) == before, nil
	})
	// Limits still hold: the waiting pod stays refused.
	c.createPod(podSpec{name: "a4", user: "alice", groups: []string{"dev"}, queue: "root.team", cpu: "1"})
	c.waitRefused("a4", `user "alice"`)
	c.stillPending("a3", time.Second)
}

// snapshot renders every user, group and queue usage as JSON.
func snapshot(t *testing.T, rs *runningScheduler) string {
	m := rs.plugin.Ledger().Manager()
	b, err := json.Marshal(struct {
		Users, Groups, Queues any
	}{m.Users(), m.Groups(), m.Queues()})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var appsConfig = queueconfigtest.Root(`
queues:
- name: default
- name: batch
  limits:
  - limit: two apps each
    users: ["*"]
    maxapplications: 2
`)

func TestMaxApplications(t *testing.T) {
	c := newCluster(t, 2)
	c.setQueueConfig(appsConfig)
	rs := c.startScheduler()
	// Two pods of one application and one of another: two applications.
	for _, ps := range []podSpec{
		{name: "p1", user: "ann", queue: "root.batch", app: "one", cpu: "100m"},
		{name: "p2", user: "ann", queue: "root.batch", app: "one", cpu: "100m"},
		{name: "p3", user: "ann", queue: "root.batch", app: "two", cpu: "100m"},
	} {
		c.createPod(ps)
		c.waitBound(ps.name, bindTimeout)
	}
	c.createPod(podSpec{name: "p4", user: "ann", queue: "root.batch", app: "three", cpu: "100m"})
	c.waitRefused("p4", `user "ann" would exceed maxapplications in root.batch: 2+1 > 2`)
	// A further pod of a running application is not a new application.
	c.createPod(podSpec{name: "p5", user: "ann", queue: "root.batch", app: "two", cpu: "100m"})
	c.waitBound("p5", bindTimeout)
	// Application "one" ends when its last pod does; "three" then runs.
	c.finishPod("p1")
	c.stillPending("p4", time.Second)
	c.deletePod("p2")
	c.waitBound("p4", bindTimeout)

	// Controllers: a Deployment is one application across a rollout, a Job
	// is one application.
	c.startControllers()
	info := `{"user":"ben"}`
	tmpl := v1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "web", podmeta.LabelQueue: "root.batch"},
			Annotations: map[string]string{podmeta.AnnotationUserInfo: info},
		},
		Spec: v1.PodSpec{SchedulerName: schedulerName, Containers: []v1.Container{{
			Name: "c", Image: "registry.invalid/none:0",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}},
		}}},
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: tmpl,
		},
	}
	if _, err := c.client.AppsV1().Deployments(c.ns).Create(c.ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobTmpl := *tmpl.DeepCopy()
	jobTmpl.Labels = map[string]string{podmeta.LabelQueue: "root.batch"}
	jobTmpl.Spec.RestartPolicy = v1.RestartPolicyNever
	jb := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "crunch"},
		Spec:       batchv1.JobSpec{Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](4), Template: jobTmpl},
	}
	if _, err := c.client.BatchV1().Jobs(c.ns).Create(c.ctx, jb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.eventually("ben runs 4 pods in 2 applications", 30*time.Second, func() (bool, error) {
		u := rs.userRoot("ben")
		return u != nil && u.ResourceUsage.Get(2) == 4 && len(u.RunningApplications) == 2, nil
	})
	// Roll the Deployment out: the new ReplicaSet's pods are the same
	// application, so they are not refused for maxapplications.
	// (The deployment controller writes the Deployment's status meanwhile:
	// retry on a conflict.)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := c.client.AppsV1().Deployments(c.ns).Get(c.ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Labels["rev"] = "2"
		_, err = c.client.AppsV1().Deployments(c.ns).Update(c.ctx, d, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	c.eventually("a pod of the new ReplicaSet is bound", 30*time.Second, func() (bool, error) {
		pods, err := c.client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{LabelSelector: "rev=2"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				return true, nil
			}
		}
		return false, nil
	})
	if u := rs.userRoot("ben"); u == nil || len(u.RunningApplications) != 2 {
		t.Fatalf("ben's applications after the rollout: %+v", u)
	}
	// A third application of ben's is refused.
	c.createPod(podSpec{name: "b3", user: "ben", queue: "root.batch", app: "other", cpu: "100m"})
	c.waitRefused("b3", `user "ben" would exceed maxapplications`)
}

func TestYuniKornMetadata(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(teamConfig)
	rs := c.startScheduler()
	c.createPod(podSpec{name: "y1", user: "alice", groups: []string{"dev"}, queue: "root.team", app: "spark-1", cpu: "1", yunikorn: true})
	c.createPod(podSpec{name: "y2", user: "alice", groups: []string{"dev"}, queue: "team", app: "spark-1", cpu: "1", yunikorn: true})
	c.waitBound("y1", bindTimeout)
	c.waitBound("y2", bindTimeout)
	c.createPod(podSpec{name: "u3", user: "alice", groups: []string{"dev"}, queue: "root.team", app: "spark-1", cpu: "1"})
	c.waitRefused("u3", `user "alice" would exceed maxresources in root.team`)
	u, ok := rs.plugin.Ledger().Manager().User("alice")
	if !ok || u.Groups[c.ns+"/spark-1"] != "dev" || u.Queues.ResourceUsage.Get(0) != 2000 {
		t.Fatalf("alice's usage from YuniKorn metadata: %+v", u)
	}
}
