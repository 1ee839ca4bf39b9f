package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1alpha1 "k8s.io/api/scheduling/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/rest"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	"sigs.k8s.io/yaml"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

const gangSize = 8

// createGang creates user's gang app in form: 8 pods of 1 cpu each (and
// the gang's object), whose minimum is all 8. Task groups: one group of
// minMember 8, on every pod (as a Spark job's driver and executor
// templates may carry them); PodGroup: minMember 8; Workload: a gang pod
// group of minCount 8. Every pod carries the application label the
// watch reads.
func (c *cluster) createGang(form gang.Form, user, app string) {
	c.t.Helper()
	switch form {
	case gang.FormPodGroup:
		pg := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: app}, Spec: schedv1alpha1.PodGroupSpec{MinMember: gangSize}}
		cfg := rest.CopyConfig(c.config)
		cfg.ContentType = runtime.ContentTypeJSON // a CRD
		if _, err := pgclientset.NewForConfigOrDie(cfg).SchedulingV1alpha1().PodGroups(c.ns).Create(c.ctx, pg, metav1.CreateOptions{}); err != nil {
			c.t.Fatal(err)
		}
	case gang.FormWorkload:
		w := &schedulingv1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: app}, Spec: schedulingv1alpha1.WorkloadSpec{
			PodGroups: []schedulingv1alpha1.PodGroup{{Name: "workers", Policy: schedulingv1alpha1.PodGroupPolicy{Gang: &schedulingv1alpha1.GangSchedulingPolicy{MinCount: gangSize}}}}}}
		if _, err := c.client.SchedulingV1alpha1().Workloads(c.ns).Create(c.ctx, w, metav1.CreateOptions{}); err != nil {
			c.t.Fatal(err)
		}
	}
	for i := 0; i < gangSize; i++ {
		p := c.makePod(podSpec{name: fmt.Sprintf("%s-%d", app, i), user: user, queue: "root.g", app: app, cpu: "1"})
		switch form {
		case gang.FormTaskGroups:
			p.Annotations[gang.AnnotationTaskGroupName] = "workers"
			p.Annotations[gang.AnnotationTaskGroups] = fmt.Sprintf(`[{"name":"workers","minMember":%d,"minResource":{"cpu":"1"}}]`, gangSize)
		case gang.FormPodGroup:
			p.Labels[gang.LabelPodGroup] = app
		case gang.FormWorkload:
			p.Spec.WorkloadRef = &v1.WorkloadReference{Name: app, PodGroup: "workers"}
		}
		c.createPodObject(p)
	}
}

// gangCluster is a cluster whose API server serves form's gang objects:
// scheduler-plugins' PodGroup CRD installed, or the Workload API on
// (its runtime config, and the GenericWorkload and GangScheduling gates,
// which the in-process API server and scheduler read; the in-tree
// GangScheduling plugin then joins the scheduler's profile).
func gangCluster(t *testing.T, form gang.Form) *cluster {
	t.Helper()
	switch form {
	case gang.FormWorkload:
		featuregatetesting.SetFeatureGatesDuringTest(t, utilfeature.DefaultFeatureGate, featuregatetesting.FeatureOverrides{
			features.GenericWorkload: true, features.GangScheduling: true})
		return newCluster(t, 1, "--runtime-config=scheduling.k8s.io/v1alpha1=true")
	case gang.FormPodGroup:
		c := newCluster(t, 1)
		c.installPodGroupCRD()
		return c
	}
	return newCluster(t, 1)
}

// installPodGroupCRD installs scheduler-plugins' PodGroup CRD from the
// pinned module's config/crd/bases, and waits until it is served.
func (c *cluster) installPodGroupCRD() {
	c.t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/scheduler-plugins").Output()
	if err != nil {
		c.t.Fatalf("finding the scheduler-plugins module: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases", "scheduling.x-k8s.io_podgroups.yaml"))
	if err != nil {
		c.t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		c.t.Fatal(err)
	}
	c.apply(crd, false)
	c.eventually("the PodGroup API served", 30*time.Second, func() (bool, error) {
		list, err := c.client.Discovery().ServerResourcesForGroupVersion(schedv1alpha1.SchemeGroupVersion.String())
		if err != nil {
			return false, nil
		}
		for _, r := range list.APIResources {
			if r.Name == "podgroups" {
				return true, nil
			}
		}
		return false, nil
	})
}

// gangWatch follows the test namespace's pods: the bound pods of every
// gang (application), and the most gangs seen started at once (a pod
// bound, and the test not yet completing it).
type gangWatch struct {
	mu         sync.Mutex
	bound      map[string]map[string]bool // app -> bound pod names
	completing map[string]bool
	maxStarted int
	atMax      string
}

func (c *cluster) watchGangs(t *testing.T) *gangWatch {
	t.Helper()
	w, err := c.client.CoreV1().Pods(c.ns).Watch(c.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	g := &gangWatch{bound: map[string]map[string]bool{}, completing: map[string]bool{}}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok {
				continue
			}
			app := p.Labels["userquota.io/app-id"]
			g.mu.Lock()
			if g.bound[app] == nil {
				g.bound[app] = map[string]bool{}
			}
			if ev.Type == watch.Deleted || p.Spec.NodeName == "" {
				delete(g.bound[app], p.Name)
			} else {
				g.bound[app][p.Name] = true
			}
			started := []string{}
			for a, pods := range g.bound {
				if len(pods) > 0 && !g.completing[a] {
					started = append(started, fmt.Sprintf("%s:%d", a, len(pods)))
				}
			}
			if len(started) > g.maxStarted {
				sort.Strings(started)
				g.maxStarted, g.atMax = len(started), fmt.Sprint(started)
			}
			g.mu.Unlock()
		}
	}()
	return g
}

// boundOf returns how many pods of each gang are bound.
func (g *gangWatch) boundOf() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]int{}
	for a, pods := range g.bound {
		out[a] = len(pods)
	}
	return out
}

// TestGangsRunWhole is issue 19's scenario on the real control plane, in
// each of the three gang forms: two users each submit three gangs of 8
// pods x 1 cpu into a queue of 20 cpu with a user limit of 16. With
// gangs, at most two gangs ever run at once (a third would be short of
// quota) and every gang runs whole as earlier ones complete. Ignoring
// gangs (ignoreGangs: true), the queue fills with 20 pods, so some gang
// runs in part: the difference gangs make.
func TestGangsRunWhole(t *testing.T) {
	for _, tc := range []struct {
		name   string
		form   gang.Form
		ignore bool
	}{
		{"TaskGroups", gang.FormTaskGroups, false},
		{"PodGroup", gang.FormPodGroup, false},
		{"Workload", gang.FormWorkload, false},
		{"ignoreGangs", gang.FormTaskGroups, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ignore := tc.ignore
			c := gangCluster(t, tc.form)
			c.setQueueConfig(queueconfigtest.Gangs)
			if ignore {
				c.startSchedulerWith(map[string]any{"ignoreGangs": true})
			} else {
				c.startScheduler()
			}
			w := c.watchGangs(t)
			var apps []string
			for i := 0; i < 3; i++ {
				for _, user := range []string{"sue", "bob"} {
					app := fmt.Sprintf("%s-%d", user, i)
					apps = append(apps, app)
					c.createGang(tc.form, user, app)
				}
			}
			if ignore {
				c.eventually("the queue full", 60*time.Second, func() (bool, error) {
					n := 0
					for _, b := range w.boundOf() {
						n += b
					}
					return n == 20, nil
				})
				partial := 0
				for _, b := range w.boundOf() {
					if b > 0 && b < gangSize {
						partial++
					}
				}
				if partial == 0 {
					t.Fatalf("ignoring gangs, no gang runs in part: %v", w.boundOf())
				}
				t.Logf("ignoring gangs: %d gangs run in part, bound %v", partial, w.boundOf())
				return
			}
			done := map[string]bool{}
			c.eventually("every gang run whole", 3*time.Minute, func() (bool, error) {
				for app, n := range w.boundOf() {
					if n != gangSize || done[app] {
						continue
					}
					// The gang runs whole: it completes.
					w.mu.Lock()
					w.completing[app] = true
					w.mu.Unlock()
					done[app] = true
					for i := 0; i < gangSize; i++ {
						c.deletePod(fmt.Sprintf("%s-%d", app, i))
					}
				}
				return len(done) == len(apps), nil
			})
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.maxStarted > 2 {
				t.Errorf("%d gangs ran at once (%s); the queue has room for 2", w.maxStarted, w.atMax)
			}
			t.Logf("at most %d gangs ran at once (%s)", w.maxStarted, w.atMax)
		})
	}
}
