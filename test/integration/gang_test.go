package integration

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/userquota/userquota/pkg/gang"
)

// gangConfig is issue 19's queue: root.g runs 20 cpu at most, each user
// 16 cpu there.
const gangConfig = `
partitions:
- name: default
  queues:
  - name: root
    submitacl: "*"
    queues:
    - name: default
    - name: g
      resources: {max: {vcore: 20}}
      limits:
      - limit: everyone
        users: ["*"]
        maxresources: {vcore: 16}
`

const gangSize = 8

// createGang creates the 8 pods of user's YuniKorn application app, 1
// cpu each, all in one task group of minMember 8 (every pod carries the
// task groups, as a Spark job's driver and executor templates may).
func (c *cluster) createGang(user, app string) {
	c.t.Helper()
	for i := 0; i < gangSize; i++ {
		p := c.makePod(podSpec{name: fmt.Sprintf("%s-%d", app, i), user: user, queue: "root.g", app: app, cpu: "1"})
		p.Annotations[gang.AnnotationTaskGroupName] = "workers"
		p.Annotations[gang.AnnotationTaskGroups] = fmt.Sprintf(`[{"name":"workers","minMember":%d,"minResource":{"cpu":"1"}}]`, gangSize)
		c.createPodObject(p)
	}
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

// TestGangsRunWhole is issue 19's scenario on the real control plane: two
// users each submit three gangs of 8 pods x 1 cpu into a queue of 20 cpu
// with a user limit of 16. With gangs, at most two gangs ever run at once
// (a third would be short of quota) and every gang runs whole as earlier
// ones complete. Ignoring gangs (ignoreGangs: true), the queue fills with
// 20 pods, so some gang runs in part: the difference gangs make.
func TestGangsRunWhole(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignoreGangs=%v", ignore), func(t *testing.T) {
			c := newCluster(t, 1)
			c.setQueueConfig(gangConfig)
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
					c.createGang(user, app)
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
