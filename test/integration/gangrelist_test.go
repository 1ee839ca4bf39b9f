package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// TestGangDriverFoundAfterRelist: the replica a failover makes leader may
// have had its pod watch down while the old leader bound a Spark driver:
// its informer lists again and first sees the driver bound, after its
// start-up (the hole a restart's rebuild does not cover). The scheduler
// here is that replica, reaching the API server through a proxy that
// cuts its pod watch; the test binds the driver meanwhile, as the old
// leader did, then stops the cut. The scheduler learns the gang from the
// driver found running: it reserves the executors' room (a pod of the
// same user that would fit without it stays held), and the executors,
// which carry only their task group's name, run whole. Before, they were
// held as a gang no pod defined, and nothing was reserved.
func TestGangDriverFoundAfterRelist(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(queueconfigtest.Gangs) // root.g: 20 cpu; each user 16
	cutter, kubeconfig := c.podCutter()
	rs := c.startSchedulerOn(kubeconfig, nil)
	c.eventually("the scheduler's pod watch open", 30*time.Second, func() (bool, error) {
		return cutter.watching() > 0, nil
	})
	// A pod decided, so start-up is over.
	c.createPod(podSpec{name: "first", user: "bob", queue: "root.g", cpu: "1"})
	c.waitBound("first", 30*time.Second)

	cutter.cut(true)
	c.eventually("the scheduler's pod list refused", 30*time.Second, func() (bool, error) {
		return cutter.refused() > 0, nil
	})
	const app = "spark"
	driver := c.makePod(podSpec{name: "spark-driver", user: "sue", queue: "root.g", app: app, cpu: "1"})
	driver.Annotations[gang.AnnotationTaskGroupName] = "driver"
	driver.Annotations[gang.AnnotationTaskGroups] = `[{"name":"driver","minMember":1,"minResource":{"cpu":"1"}},{"name":"executors","minMember":7,"minResource":{"cpu":"1"}}]`
	c.createPodObject(driver)
	binding := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: driver.Name}, Target: v1.ObjectReference{Kind: "Node", Name: "node-0"}}
	if err := c.client.CoreV1().Pods(c.ns).Bind(c.ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cutter.cut(false)

	gangKey := fmt.Sprintf("TaskGroups %s/%s", c.ns, app)
	c.eventually("the executors' room reserved from the driver found running", 30*time.Second, func() (bool, error) {
		held, ok := rs.plugin.Ledger().Manager().GangHeld(gangKey)
		return ok && held.String() == "cpu=7,pods=7", nil
	})
	// 1 running + 7 reserved + 9 > 16; without the reservation 10 fits.
	c.createPod(podSpec{name: "other", user: "sue", queue: "root.g", cpu: "9"})
	c.waitHeld("other")
	for i := 0; i < 7; i++ {
		p := c.makePod(podSpec{name: fmt.Sprintf("spark-exec-%d", i), user: "sue", queue: "root.g", app: app, cpu: "1"})
		p.Annotations[gang.AnnotationTaskGroupName] = "executors"
		c.createPodObject(p)
	}
	for i := 0; i < 7; i++ {
		c.waitBound(fmt.Sprintf("spark-exec-%d", i), 30*time.Second)
	}
	if p := c.getPod("other"); p.Spec.NodeName != "" {
		t.Fatalf("the other pod was bound to %s over the gang's room", p.Spec.NodeName)
	}
	c.eventually("the reservation used up", 30*time.Second, func() (bool, error) {
		_, ok := rs.plugin.Ledger().Manager().GangHeld(gangKey)
		return !ok, nil
	})
}

// podCutter stands between a scheduler and the API server and can cut the
// scheduler's view of pods, as a dropped watch and a failed list do:
// while cut, it ends the pod lists and watches open and refuses new ones
// (a watch with 410 Gone, so that the informer lists again instead of
// resuming from where it was). Every other request passes.
type podCutter struct {
	proxy *httputil.ReverseProxy

	mu    sync.Mutex
	isCut bool
	open  map[*http.Request]context.CancelFunc
	// nRefused counts the requests refused while cut.
	nRefused int
}

// podCutter serves a proxy to the test's API server and returns it with a
// kubeconfig that reaches the API server through it.
func (c *cluster) podCutter() (*podCutter, string) {
	c.t.Helper()
	target, err := url.Parse(c.config.Host)
	if err != nil {
		c.t.Fatal(err)
	}
	transport, err := rest.TransportFor(c.config)
	if err != nil {
		c.t.Fatal(err)
	}
	p := &podCutter{open: map[*http.Request]context.CancelFunc{}}
	p.proxy = &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1,
	}
	server := httptest.NewServer(p)
	c.t.Cleanup(server.Close)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: server.URL}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	path := filepath.Join(c.t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		c.t.Fatal(err)
	}
	return p, path
}

func (p *podCutter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/pods" {
		p.proxy.ServeHTTP(w, r)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	r = r.WithContext(ctx)
	p.mu.Lock()
	if p.isCut {
		p.nRefused++
		p.mu.Unlock()
		status := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Reason: metav1.StatusReasonInternalError, Code: http.StatusInternalServerError, Message: "pods cut off by the test"}
		if r.URL.Query().Get("watch") == "true" {
			status.Reason, status.Code = metav1.StatusReasonExpired, http.StatusGone
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(status.Code))
		_ = json.NewEncoder(w).Encode(status)
		return
	}
	p.open[r] = cancel
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.open, r)
		p.mu.Unlock()
	}()
	p.proxy.ServeHTTP(w, r)
}

// cut cuts the pods off (ending the requests open) or restores them.
func (p *podCutter) cut(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCut = on
	if on {
		for _, cancel := range p.open {
			cancel()
		}
	}
}

// watching is how many pod requests (the watch) pass now.
func (p *podCutter) watching() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.open)
}

// refused is how many pod requests were refused while cut.
func (p *podCutter) refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nRefused
}
