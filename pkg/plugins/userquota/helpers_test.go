package userquota

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/kubernetes/pkg/scheduler/backend/queue"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	pgfake "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned/fake"

	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
	"github.com/userquota/userquota/pkg/ugm"
)

// TestMain registers the scheduler's metrics, which the framework runtime
// instruments its plugins with.
func TestMain(m *testing.M) {
	metrics.Register()
	os.Exit(m.Run())
}

// profileName is the scheduler profile (schedulerName) of the test
// framework: only pods naming it are the plugin's.
const profileName = "userquota-scheduler"

// testNode is where test pods are "bound".
const testNode = "node-1"

// sandboxConfig is the queue config most tests run under: user, group and
// queue limits on one leaf, a second leaf without limits, and a parent.
//
//	sue: 2 cpu in root.sandbox; group dev: 3 cpu; the queue: 4 cpu, 3 apps.
const sandboxConfig = `
partitions:
- name: default
  queues:
  - name: root
    queues:
    - name: default
    - name: sandbox
      maxapplications: 3
      resources:
        max: {vcore: 4}
      limits:
      - limit: sue
        users: [sue]
        maxresources: {vcore: 2}
      - limit: dev
        groups: [dev]
        maxresources: {vcore: 3}
    - name: open
    - name: parent
      queues:
      - name: leaf
`

// envOptions configure newEnv.
type envOptions struct {
	// args are the plugin's args (nil: defaults); restAddress nil means
	// "" here: the REST API is off in tests.
	args *Args
	// config is the queue config YAML put in the ConfigMap before the plugin
	// starts; "" means no ConfigMap.
	config string
	// objects are in the cluster before the plugin starts.
	objects []runtime.Object
	// gangAPIs: the API server serves Workloads and scheduler-plugins'
	// PodGroups (a fake client of its own, env.pgc), with podGroups in it.
	gangAPIs  bool
	podGroups []runtime.Object
	// noStart leaves the scheduler's informer factory unstarted: the test
	// starts it (env.start) after arranging what it needs.
	noStart bool
	// reactors are prepended to the fake clientset before anything runs.
	reactors func(cs *fake.Clientset)
	// clock times requeues, preemption delays and the share debounce
	// (nil: the real clock).
	clock clock.WithTickerAndDelayedExecution
	// plugins are registered in the framework beside UserQuota (e.g.
	// NodeResourcesFit for a preemption dry run).
	plugins []tf.RegisterPluginFunc
}

// env is one plugin on the real framework runtime over a fake clientset:
// the scheduler's shared informer factory drives the plugin's pod handler,
// and the plugin's own ConfigMap informer watches the same clientset.
type env struct {
	t         *testing.T
	ctx       context.Context
	cs        *fake.Clientset
	informers informers.SharedInformerFactory
	fh        framework.Framework
	pl        *Plugin
	activator *recordingActivator
	recorder  *recordingRecorder
	watches   *watchCounter
	barriers  int
	// pgc serves PodGroups (envOptions.gangAPIs), else nil.
	pgc *pgfake.Clientset
}

// newEnv builds the framework with UserQuota at PreFilter and Reserve (plus
// the queue sort and bind plugins every profile needs), starts the informers
// and waits until the plugin has seen every existing pod and both the pod
// and the ConfigMap watches are open (the fake clientset's watch does not
// replay what happened between list and watch).
func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)

	objs := append([]runtime.Object(nil), o.objects...)
	if o.config != "" {
		objs = append(objs, configMap(o.config))
	}
	cs := fake.NewClientset(objs...)
	w := &watchCounter{}
	w.serve(&cs.Fake, cs.Tracker())
	var pgc *pgfake.Clientset
	if o.gangAPIs {
		cs.Resources = append(cs.Resources, &metav1.APIResourceList{GroupVersion: workloadAPI, APIResources: []metav1.APIResource{{Name: "workloads"}}})
		pgc = pgfake.NewSimpleClientset(o.podGroups...) // NewClientset has no PodGroup schema for its field manager
		pgc.Resources = append(pgc.Resources, &metav1.APIResourceList{GroupVersion: podGroupAPI, APIResources: []metav1.APIResource{{Name: "podgroups"}}})
		w.serve(&pgc.Fake, pgc.Tracker())
	}
	if o.reactors != nil {
		o.reactors(cs)
	}

	e := &env{
		t:   t,
		ctx: ctx,
		cs:  cs,
		// The informer factory kube-scheduler hands its framework (its pod
		// informer leaves out terminal pods where the API server filters).
		informers: scheduler.NewInformerFactory(cs, 0),
		activator: &recordingActivator{},
		recorder:  &recordingRecorder{},
		watches:   w,
		pgc:       pgc,
	}
	// The plugin's args; unless a test says otherwise the usage REST API
	// is off, so that no test binds a port.
	a := Args{}
	if o.args != nil {
		a = *o.args
	}
	if a.RESTAddress == nil {
		a.RESTAddress = ptr.To("")
	}
	args := &a
	var c clock.WithTickerAndDelayedExecution = clock.RealClock{}
	if o.clock != nil {
		c = o.clock
	}
	factory := func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		var pgi pgclientset.Interface
		if pgc != nil {
			pgi = fakePodGroups{pgc}
		}
		p, err := newPlugin(ctx, args, h, c, pgi)
		if err != nil {
			return nil, err
		}
		e.pl = p
		return p, nil
	}
	plugins := append([]tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
		tf.RegisterPluginAsExtensions(Name, factory, "PreFilter", "Reserve"),
	}, o.plugins...)
	fh, err := tf.NewFramework(ctx, plugins, profileName,
		frameworkruntime.WithClientSet(cs),
		frameworkruntime.WithInformerFactory(e.informers),
		frameworkruntime.WithEventRecorder(e.recorder),
		frameworkruntime.WithPodActivator(e.activator),
		frameworkruntime.WithSnapshotSharedLister(schedcache.NewEmptySnapshot()),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
		// The scheduling queue answers which pods are nominated to a node.
		frameworkruntime.WithPodNominator(queue.NewTestQueue(ctx, nil)),
	)
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	e.fh = fh
	t.Cleanup(e.informers.Shutdown)
	t.Cleanup(cancel) // runs first: stop informers before Shutdown waits
	// The plugin's ConfigMap informer has listed (New waits for it); wait
	// until its watch is open too, so later changes are seen.
	e.waitFor("the ConfigMap watch", func() bool { return w.count("configmaps") >= 1 })
	if !o.noStart {
		e.start()
	}
	return e
}

// start starts the scheduler's informers and waits for the plugin's pod
// handler to have seen every existing pod and for the pod watch to be open.
func (e *env) start() {
	e.t.Helper()
	e.informers.Start(e.ctx.Done())
	e.waitFor("the plugin's pod handler to sync", e.pl.podsSynced)
	e.waitFor("the plugin to decide pods (start-up over)", e.pl.held.isReady)
	e.waitFor("the pod watch", func() bool { return e.watches.count("pods") >= 1 })
}

// waitFor polls cond until it holds, failing the test after 10s.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		e.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// preFilter runs the framework's PreFilter plugins on pod in a new cycle.
func (e *env) preFilter(pod *v1.Pod) (fwk.CycleState, *fwk.Status) {
	e.t.Helper()
	state := framework.NewCycleState()
	_, s, _ := e.fh.RunPreFilterPlugins(e.ctx, state, pod)
	return state, s
}

// reserve runs the Reserve plugins of the cycle in state.
func (e *env) reserve(state fwk.CycleState, pod *v1.Pod) *fwk.Status {
	return e.fh.RunReservePluginsReserve(e.ctx, state, pod, testNode)
}

// unreserve runs the Unreserve plugins of the cycle in state.
func (e *env) unreserve(state fwk.CycleState, pod *v1.Pod) {
	e.fh.RunReservePluginsUnreserve(e.ctx, state, pod, testNode)
}

// schedule runs PreFilter then, if it passed, Reserve, as one scheduling
// cycle does, and returns the first failure.
func (e *env) schedule(pod *v1.Pod) *fwk.Status {
	e.t.Helper()
	state, s := e.preFilter(pod)
	if !s.IsSuccess() {
		return s
	}
	return e.reserve(state, pod)
}

// mustSchedule schedules pod and fails the test unless it is admitted.
func (e *env) mustSchedule(pod *v1.Pod) {
	e.t.Helper()
	if s := e.schedule(pod); !s.IsSuccess() {
		e.t.Fatalf("scheduling %s: %v", pod.Name, s)
	}
}

// bind creates pod in the cluster as bound to testNode (what the binder
// does after Reserve), so the informer sees it.
func (e *env) bind(pod *v1.Pod) *v1.Pod {
	e.t.Helper()
	p := pod.DeepCopy()
	p.Spec.NodeName = testNode
	if p.Status.Phase == "" {
		p.Status.Phase = v1.PodRunning
	}
	got, err := e.cs.CoreV1().Pods(p.Namespace).Create(e.ctx, p, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Pending in the cluster (pending): bind it.
		got = e.update(pod, func(q *v1.Pod) { q.Spec.NodeName, q.Status.Phase = p.Spec.NodeName, p.Status.Phase })
		err = nil
	}
	if err != nil {
		e.t.Fatalf("creating pod %s: %v", p.Name, err)
	}
	return got
}

// storeDelete and storeUpdate change the scheduler's pod informer store
// behind its handlers' back: the state a lost event leaves.
func (e *env) storeDelete(pod *v1.Pod) {
	e.t.Helper()
	if err := e.informers.Core().V1().Pods().Informer().GetStore().Delete(pod); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) storeUpdate(pod *v1.Pod) {
	e.t.Helper()
	if err := e.informers.Core().V1().Pods().Informer().GetStore().Update(pod); err != nil {
		e.t.Fatal(err)
	}
}

// create creates pod in the cluster as it is.
func (e *env) create(pod *v1.Pod) {
	e.t.Helper()
	if _, err := e.cs.CoreV1().Pods(pod.Namespace).Create(e.ctx, pod, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
}

// pending creates pod in the cluster, unless the informer has it, and
// waits for the informer: a pod in the scheduling queue exists.
func (e *env) pending(pod *v1.Pod) {
	e.t.Helper()
	has := func() bool {
		_, err := e.informers.Core().V1().Pods().Lister().Pods(pod.Namespace).Get(pod.Name)
		return err == nil
	}
	if !has() {
		e.create(pod)
		e.waitFor("the pod in the informer", has)
	}
}

// update changes a pod in the cluster with mutate.
func (e *env) update(pod *v1.Pod, mutate func(*v1.Pod)) *v1.Pod {
	e.t.Helper()
	p, err := e.cs.CoreV1().Pods(pod.Namespace).Get(e.ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("getting pod %s: %v", pod.Name, err)
	}
	mutate(p)
	p, err = e.cs.CoreV1().Pods(pod.Namespace).Update(e.ctx, p, metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatalf("updating pod %s: %v", pod.Name, err)
	}
	return p
}

// delete deletes a pod from the cluster.
func (e *env) delete(pod *v1.Pod) {
	e.t.Helper()
	if err := e.cs.CoreV1().Pods(pod.Namespace).Delete(e.ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("deleting pod %s: %v", pod.Name, err)
	}
}

// barrier returns once the plugin's pod handler has handled every pod event
// sent before it was called: the informer delivers a handler's events in
// order, so seeing a sentinel pod come and go means everything before it
// was handled. The sentinel belongs to its own user, namespace and queue
// and leaves nothing behind.
func (e *env) barrier() {
	e.t.Helper()
	e.barriers++
	p := podOf(fmt.Sprintf("barrier-%d", e.barriers)).Namespace("barrier").
		Annotation(podmeta.AnnotationUserInfo, `{"user":"barrier"}`).
		Annotation(podmeta.LabelQueue, "root.barrier").Req(cpu("1m")).Obj()
	e.bind(p)
	e.waitFor("the barrier pod to be charged", func() bool { _, ok := e.pl.ledger.Get(string(p.UID)); return ok })
	e.delete(p)
	e.waitFor("the barrier pod to be released", func() bool { _, ok := e.pl.ledger.Get(string(p.UID)); return !ok })
}

// setConfig creates or updates the queue config ConfigMap.
func (e *env) setConfig(yaml string) {
	e.t.Helper()
	e.writeConfigMap(configMap(yaml))
}

// writeConfigMap creates or updates a ConfigMap.
func (e *env) writeConfigMap(cm *v1.ConfigMap) {
	e.t.Helper()
	_, err := e.cs.CoreV1().ConfigMaps(cm.Namespace).Update(e.ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = e.cs.CoreV1().ConfigMaps(cm.Namespace).Create(e.ctx, cm, metav1.CreateOptions{})
	}
	if err != nil {
		e.t.Fatalf("writing the ConfigMap: %v", err)
	}
}

// waitConfig waits until the config in force was parsed from yaml.
func (e *env) waitConfig(yaml string) {
	e.t.Helper()
	want := queueconfigtest.MustParse(e.t, yaml).Checksum
	e.waitFor("the new config to be in force", func() bool {
		c := e.pl.Config()
		return c != nil && c.Checksum == want
	})
	// ledger.Enforce shows the config before it syncs the ledger's
	// observers (the usage history), under the ledger's lock: passing
	// through that lock waits for the sync too.
	e.pl.ledger.Get("")
}

// configMap is the plugin's ConfigMap (default location) holding yaml.
func configMap(yaml string) *v1.ConfigMap {
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: DefaultConfigMapNamespace, Name: DefaultConfigMapName},
		Data:       map[string]string{DefaultConfigMapKey: yaml},
	}
}

// podOf starts a pod of this profile in namespace ns1 with a UID derived
// from its name.
func podOf(name string) *st.PodWrapper {
	return st.MakePod().Name(name).Namespace("ns1").UID("uid-" + name).SchedulerName(profileName)
}

// userPod is a pod of user (and groups) in queue asking for cpu.
func userPod(name, user, groups, queue, cpuQty string) *v1.Pod {
	ui := fmt.Sprintf(`{"user":%q}`, user)
	if groups != "" {
		ui = fmt.Sprintf(`{"user":%q,"groups":["%s"]}`, user, strings.ReplaceAll(groups, ",", `","`))
	}
	w := podOf(name).Annotation(podmeta.AnnotationUserInfo, ui).Req(cpu(cpuQty))
	if queue != "" {
		w = w.Label(podmeta.LabelQueue, queue)
	}
	return w.Obj()
}

func cpu(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }

func rl(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// usage is a comparable summary of what the plugin has charged: per user
// and per group the usage at every queue of its tree, the aggregate usage
// of every queue, and the live pods of the ledger.
type usage struct {
	Users  map[string]map[string]map[string]int64 // user -> queue -> resource -> amount
	Groups map[string]map[string]map[string]int64
	Queues map[string]map[string]int64 // queue -> resource -> amount (non-zero only)
	Apps   map[string][]string         // user -> running applications
	Pods   []string                    // live pod UIDs, sorted
}

// snapshot reads the ugm and ledger snapshots into a usage. Trackers and
// queues that hold nothing are absent, so an idle plugin's usage is empty.
func snapshot(pl *Plugin) usage {
	u := usage{
		Users:  map[string]map[string]map[string]int64{},
		Groups: map[string]map[string]map[string]int64{},
		Queues: map[string]map[string]int64{},
		Apps:   map[string][]string{},
		Pods:   pl.ledger.Pods(),
	}
	sort.Strings(u.Pods)
	for _, uu := range pl.ugm.Users() {
		u.Users[uu.UserName] = flatten(uu.Queues, map[string]map[string]int64{})
		for app := range uu.Groups {
			u.Apps[uu.UserName] = append(u.Apps[uu.UserName], app)
		}
		sort.Strings(u.Apps[uu.UserName])
	}
	for _, gu := range pl.ugm.Groups() {
		u.Groups[gu.GroupName] = flatten(gu.Queues, map[string]map[string]int64{})
	}
	flatten(pl.ugm.Queues(), u.Queues)
	return u
}

func flatten(q *ugm.QueueUsage, into map[string]map[string]int64) map[string]map[string]int64 {
	if q == nil {
		return into
	}
	if m := q.ResourceUsage.Map(); len(m) > 0 {
		into[q.QueuePath] = m
	}
	for _, c := range q.Children {
		flatten(c, into)
	}
	return into
}

// emptyUsage is the usage of a plugin that holds nothing.
func emptyUsage() usage {
	return usage{
		Users:  map[string]map[string]map[string]int64{},
		Groups: map[string]map[string]map[string]int64{},
		Queues: map[string]map[string]int64{},
		Apps:   map[string][]string{},
		Pods:   []string{},
	}
}

// userUsage is one user's usage at root (what the user holds in total).
func userUsage(pl *Plugin, user string) map[string]int64 {
	uu, ok := pl.ugm.User(user)
	if !ok || uu.Queues == nil {
		return nil
	}
	if m := uu.Queues.ResourceUsage.Map(); len(m) > 0 {
		return m
	}
	return nil
}

// recordingActivator is the scheduling queue's PodActivator: it records
// every Activate call (the keys of the pods, sorted) and, when a probe is
// set, what the probe saw at the moment of each call.
type recordingActivator struct {
	mu     sync.Mutex
	calls  [][]string
	probe  func() any
	probes []any
	// next, if set, is handed every call too (a real scheduling queue).
	next fwk.PodActivator
}

// forward hands every later Activate call to next as well.
func (a *recordingActivator) forward(next fwk.PodActivator) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next = next
}

// setProbe makes every later Activate call run probe first and keep its
// result (see probed).
func (a *recordingActivator) setProbe(probe func() any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.probe = probe
}

// probed returns the probe results of the Activate calls so far.
func (a *recordingActivator) probed() []any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]any(nil), a.probes...)
}

func (a *recordingActivator) Activate(logger klog.Logger, pods map[string]*v1.Pod) {
	a.mu.Lock()
	probe, next := a.probe, a.next
	a.mu.Unlock()
	if next != nil {
		next.Activate(logger, pods)
	}
	var seen any
	if probe != nil {
		seen = probe()
	}
	keys := make([]string, 0, len(pods))
	for k, p := range pods {
		if k != p.Namespace+"/"+p.Name {
			k = "BAD KEY " + k
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, keys)
	if probe != nil {
		a.probes = append(a.probes, seen)
	}
}

// activated returns every pod key activated so far, sorted, each once.
func (a *recordingActivator) activated() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := map[string]bool{}
	out := []string{}
	for _, c := range a.calls {
		for _, k := range c {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// callsSoFar returns every Activate call so far, each its sorted keys.
func (a *recordingActivator) callsSoFar() [][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([][]string(nil), a.calls...)
}

func (a *recordingActivator) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls, a.probes = nil, nil
}

// event is one event the plugin raised.
type event struct {
	Regarding string // kind namespace/name
	Type      string
	Reason    string
	Action    string
	Note      string
}

// recordingRecorder is the framework's event recorder: it keeps every event.
type recordingRecorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recordingRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	ref := fmt.Sprintf("%T", regarding)
	if m, err := metaOf(regarding); err == nil {
		ref += " " + m.GetNamespace() + "/" + m.GetName()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{Regarding: ref, Type: eventtype, Reason: reason, Action: action, Note: fmt.Sprintf(note, args...)})
}

func (r *recordingRecorder) list(reason string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, ev := range r.events {
		if ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

// except returns the events whose reason is not reason.
func (r *recordingRecorder) except(reason string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, ev := range r.events {
		if ev.Reason != reason {
			out = append(out, ev)
		}
	}
	return out
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	if m, ok := obj.(metav1.Object); ok {
		return m, nil
	}
	return nil, fmt.Errorf("%T has no object meta", obj)
}

// serve makes the fake f's watches come from tracker, counted.
func (w *watchCounter) serve(f *clienttesting.Fake, tracker clienttesting.ObjectTracker) {
	f.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := action.(clienttesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		wi, err := tracker.Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		w.add(action.GetResource().Resource)
		return true, wi, nil
	})
}

// fakePodGroups is scheduler-plugins' fake client, which (unlike
// client-go's fakes) does not say that its watches send no initial
// events: an informer would wait for them forever.
type fakePodGroups struct{ *pgfake.Clientset }

func (fakePodGroups) IsWatchListSemanticsUnSupported() bool { return true }

// watchCounter counts the watches the fake clientset opened, by resource.
type watchCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *watchCounter) add(resource string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	w.n[resource]++
}

func (w *watchCounter) count(resource string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[resource]
}

// statusOf summarises a framework status for comparison.
type statusOf struct {
	Code    fwk.Code
	Message string
}

func summary(s *fwk.Status) statusOf {
	if s == nil {
		return statusOf{Code: fwk.Success}
	}
	return statusOf{Code: s.Code(), Message: s.Message()}
}
