package userquota

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	schedulingv1alpha1 "k8s.io/api/scheduling/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1alpha1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/hold"
	"github.com/userquota/userquota/pkg/ugm"
)

// Gangs of the object forms (docs/gangs.md): a coscheduling PodGroup or a
// Workload defines the gang's minimum, so the plugin watches them. Each
// is watched only when the API server serves its API (discovery at
// start-up): a cluster without scheduler-plugins' CRD or the alpha
// Workload API runs as before, and a pod naming such an object is held
// saying the API is not served. An object created after its pods lets
// them in; deleting one releases what its gangs still hold.

// APIs of the object forms.
var (
	podGroupAPI = schedv1alpha1.SchemeGroupVersion.String() // scheduling.x-k8s.io/v1alpha1
	workloadAPI = schedulingv1alpha1.SchemeGroupVersion.String()
)

// gangObjects are the listers of the gang objects; nil where the API is
// not served.
type gangObjects struct {
	podGroups pglisters.PodGroupLister
	workloads schedulinglisters.WorkloadLister
	// synced report whether the plugin's handlers of the objects watched
	// saw every existing object: start-up waits for them before it
	// rebuilds the gangs, which read them.
	synced []cache.InformerSynced
}

// served reports whether the API server serves resource in groupVersion.
// A group version it does not know is not served; any other error is
// returned (start-up fails rather than guess).
func served(d discovery.DiscoveryInterface, groupVersion, resource string) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", groupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}

// startGangObjects watches the gang objects whose APIs are served:
// PodGroups through scheduler-plugins' generated client pgc (nil: none)
// on an informer of its own, waited for (RBAC on scheduling.x-k8s.io is
// ours to grant), and Workloads on the scheduler's shared informer (the
// in-tree GangScheduling plugin's too; system:kube-scheduler may read
// them when the GenericWorkload gate is on).
func (pl *Plugin) startGangObjects(ctx context.Context, pgc pgclientset.Interface) error {
	if pl.args.IgnoreGangs {
		return nil
	}
	logger := klog.FromContext(ctx)
	handler := func(form gang.Form) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { pl.onGangObject(logger, form, obj, false) },
			UpdateFunc: func(_, obj interface{}) { pl.onGangObject(logger, form, obj, false) },
			DeleteFunc: func(obj interface{}) { pl.onGangObject(logger, form, obj, true) },
		}
	}
	if pgc != nil {
		ok, err := served(pgc.Discovery(), podGroupAPI, "podgroups")
		if err != nil {
			return err
		}
		if ok {
			inf := podGroupInformer(pgc)
			reg, err := inf.AddEventHandler(handler(gang.FormPodGroup))
			if err != nil {
				return err
			}
			go inf.RunWithContext(ctx)
			syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
			defer cancel()
			if !cache.WaitForCacheSync(syncCtx.Done(), reg.HasSynced) {
				return fmt.Errorf("could not list PodGroups (%s) within %s: can the scheduler list and watch podgroups in API group %s?",
					podGroupAPI, syncTimeout, schedv1alpha1.SchemeGroupVersion.Group)
			}
			pl.objects.podGroups = pglisters.NewPodGroupLister(inf.GetIndexer())
			pl.objects.synced = append(pl.objects.synced, reg.HasSynced)
		}
		logger.Info("PodGroup gangs", "api", podGroupAPI, "served", ok)
	}
	ok, err := served(pl.handle.ClientSet().Discovery(), workloadAPI, "workloads")
	if err != nil {
		return err
	}
	if ok {
		// The scheduler starts its informers after the plugins are made:
		// start-up waits for this one (objects.synced).
		inf := pl.handle.SharedInformerFactory().Scheduling().V1alpha1().Workloads()
		reg, err := inf.Informer().AddEventHandler(handler(gang.FormWorkload))
		if err != nil {
			return err
		}
		pl.objects.workloads = inf.Lister()
		pl.objects.synced = append(pl.objects.synced, reg.HasSynced)
	}
	logger.Info("Workload gangs", "api", workloadAPI, "served", ok)
	return nil
}

// podGroupInformer is an informer of every PodGroup. scheduler-plugins'
// generated informer does not ask its client whether it supports
// watch-list semantics, as client-go's own informers do; this one does.
func podGroupInformer(pgc pgclientset.Interface) cache.SharedIndexInformer {
	pgs := pgc.SchedulingV1alpha1().PodGroups(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return pgs.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return pgs.Watch(ctx, o)
		},
	}
	return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, pgc), &schedv1alpha1.PodGroup{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// onGangObject lets in the pods held for the gangs of a PodGroup or
// Workload that was created or changed (their minimum is read anew), and
// releases what those gangs hold when it was deleted.
func (pl *Plugin) onGangObject(logger klog.Logger, form gang.Form, obj interface{}, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	var ns, name string
	switch o := obj.(type) {
	case *schedv1alpha1.PodGroup:
		ns, name = o.Namespace, o.Name
	case *schedulingv1alpha1.Workload:
		ns, name = o.Namespace, o.Name
	default:
		return
	}
	for _, key := range pl.gangs.keysOf(form, ns, name) {
		if deleted {
			pl.gangs.reset(key)
			pl.releaseGang(logger, key, fmt.Sprintf("%s %s/%s was deleted", form, ns, name))
		}
		pl.letInGang(key)
	}
}

// objectMember reads the gang of a pod of an object form from its object,
// for a member whose request is req: m's Min is the gang's minimum; nil,
// nil when the object says the pod is in no gang (a Workload's pod group
// without a gang policy). The error names the object: not found, not
// served, or invalid.
func (pl *Plugin) objectMember(pod *v1.Pod, req *ugm.Request) (*gang.Member, error) {
	m, err := gang.Of(pod, "")
	if err != nil || m == nil {
		return m, err
	}
	id := m.ID
	what := fmt.Sprintf("%s %s/%s", id.Form, id.Namespace, id.Name)
	missing := func(api, how string) error {
		return &gang.Error{Gang: id, What: what, Reason: how + " (API " + api + ")"}
	}
	switch id.Form {
	case gang.FormPodGroup:
		if pl.objects.podGroups == nil {
			return m, missing(podGroupAPI, "its API is not served: install scheduler-plugins' PodGroup CRD and restart the scheduler")
		}
		pg, err := pl.objects.podGroups.PodGroups(id.Namespace).Get(id.Name)
		if err != nil {
			return m, missing(podGroupAPI, "not found")
		}
		if req == nil {
			return m, nil
		}
		min, err := gang.PodGroupMin(pg, req.Resources)
		if err != nil {
			return m, err
		}
		m.Min = &min
	case gang.FormWorkload:
		if pl.objects.workloads == nil {
			return m, missing(workloadAPI, "its API is not served: the API server needs --runtime-config="+workloadAPI+"=true and the GenericWorkload feature gate")
		}
		w, err := pl.objects.workloads.Workloads(id.Namespace).Get(id.Name)
		if err != nil {
			return m, missing(workloadAPI, "not found")
		}
		if req == nil {
			return m, nil
		}
		min, isGang, err := gang.WorkloadMin(w, id, req.Resources)
		if err != nil || !isGang {
			return nil, err
		}
		m.Min = &min
	}
	return m, nil
}

// workloadMissing is the hold of an unbound pod whose Workload does not
// exist: nil when it exists, or the pod names none. The in-tree
// GangScheduling plugin keeps such a pod out of the scheduling queue
// before UserQuota's PreEnqueue sees it, so the pod informer says why.
func (pl *Plugin) workloadMissing(pod *v1.Pod) error {
	ref := pod.Spec.WorkloadRef
	if ref == nil || pl.objects.workloads == nil || pl.args.IgnoreGangs {
		return nil
	}
	if _, err := pl.objects.workloads.Workloads(pod.Namespace).Get(ref.Name); err == nil {
		return nil
	}
	_, err := pl.objectMember(pod, nil)
	return err
}

// sayWorkloadMissing asks for the status of an unbound pod whose Workload
// is missing to say so (workloadMissing).
func (pl *Plugin) sayWorkloadMissing(pod *v1.Pod) {
	if err := pl.workloadMissing(pod); err != nil {
		pl.status.held(pod, hold.KindOf(err), err)
	}
}
