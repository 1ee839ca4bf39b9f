package userquota

import (
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/placement"
	"github.com/userquota/userquota/pkg/podmeta"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/ugm"
)

// podRequest turns a pod into what ugm charges: user, groups, queue,
// application and resources, as the admission of a new pod sees it: the
// queue is where the partition's placement rules put the pod, and its
// submit ACLs must let the user in. The queue comes back as a full path
// (with Create set when the rule that chose it may create it); an error
// names what is wrong with the pod or why it may not go anywhere.
//
// queues answers placement for the queues ugm holds outside the config:
// pl.queues(), or the view ugm.Decide hands its Placer.
func (pl *Plugin) podRequest(pod *v1.Pod, cfg *queueconfig.Partition, queues placement.Queues) (ugm.Request, error) {
	var req ugm.Request
	if pl.args.RequireUserInfo && !hasUserInfo(pod) {
		return req, errNoUserInfo
	}
	user, groups, err := podUser(pod, pl.args.DefaultUser)
	if err != nil {
		return req, err
	}
	placed, err := pl.placePod(pod, cfg, queues, user, groups, placement.Options{})
	if err != nil {
		return req, err
	}
	res, err := pl.requests.of(pod)
	if err != nil {
		return req, err
	}
	return ugm.Request{User: user, Groups: groups, Queue: placed.Queue, Create: placed.Create, App: podApp(pod), Resources: res,
		NonPreemptible: !podPreemptible(pod), Trees: podTrees(pod)}, nil
}

// placer decides pod against the config ugm has in force (ugm.Decide).
func (pl *Plugin) placer(pod *v1.Pod) ugm.Placer {
	return func(in *ugm.InForce, queues ugm.Queues) (ugm.Request, error) {
		return pl.podRequest(pod, in.Partition, queues)
	}
}

// queues is ugm as placement's view of the queues outside the config.
func (pl *Plugin) queues() placement.Queues {
	if pl.ugm == nil {
		return nil
	}
	return pl.ugm
}

// podPreemptible reports whether the pod may be preempted: unless its
// label userquota.io/preemptible says "false" (in any case).
func podPreemptible(pod *v1.Pod) bool {
	return !strings.EqualFold(strings.TrimSpace(pod.Labels[podmeta.LabelPreemptible]), "false")
}

// errNoUserInfo refuses a pod without user info when requireUserInfo is
// on; it names the webhook that should have stamped it.
var errNoUserInfo = errors.New("pod has no " + podmeta.AnnotationUserInfo + " annotation and requireUserInfo is on: " +
	"the userquota admission webhook (userquota-webhook) stamps it at creation, so this pod was not admitted through it; " +
	"check that the webhook is installed and its MutatingWebhookConfiguration matches this pod (docs/security.md)")

// hasUserInfo reports whether the pod carries user info (ours or YuniKorn's).
func hasUserInfo(pod *v1.Pod) bool {
	for _, key := range podmeta.UserInfoKeys {
		if _, ok := pod.Annotations[key]; ok {
			return true
		}
	}
	return false
}

// podUser reads the user and groups: our annotation, then YuniKorn's, then
// the default user without groups.
func podUser(pod *v1.Pod, defaultUser string) (string, []string, error) {
	for _, key := range podmeta.UserInfoKeys {
		raw, ok := pod.Annotations[key]
		if !ok {
			continue
		}
		ui, err := userInfoCache.parse(key, raw)
		if err != nil {
			return "", nil, err
		}
		return ui.User, ui.Groups, nil
	}
	return defaultUser, nil, nil
}

// placePod runs the partition's placement (pkg/placement) for the pod: its
// rules in order with the queue the pod names as the provided queue, or,
// without rules, the named queue resolved against the config (root.NAME if
// that exists, else the one leaf called NAME), else the defaultQueue arg.
// Queues created by rules, known to ugm, count as existing.
func (pl *Plugin) placePod(pod *v1.Pod, cfg *queueconfig.Partition, queues placement.Queues, user string, groups []string, opts placement.Options) (placement.Result, error) {
	name, from := podNamedQueue(pod)
	in := &placement.Input{
		User:        user,
		Groups:      groups,
		Namespace:   pod.Namespace,
		Labels:      pod.Labels,
		Annotations: pod.Annotations,
		Queue:       name,
		QueueFrom:   from,
	}
	placed, err := placement.For(cfg, pl.args.DefaultQueue).Place(in, queues, opts)
	if err == nil {
		// Before errors.As: its target escapes, an allocation per pod.
		return placed, nil
	}
	var re *queueconfig.ResolveError
	if errors.As(err, &re) {
		return placed, &ugm.QueueError{Queue: re.Name, Reason: fmt.Sprintf("(from %s) %s", from, re.Reason())}
	}
	return placed, err
}

// podNamedQueue finds the queue the pod names: annotation, then label,
// userquota.io/queue, then YuniKorn's yunikorn.apache.org/queue and
// `queue`. It returns "" when the pod names none, and where the name was
// found ("label queue") for messages.
func podNamedQueue(pod *v1.Pod) (name, from string) {
	for i, k := range podmeta.QueueKeys {
		if v, _ := k.In(pod.Labels, pod.Annotations); v != "" {
			return v, queueKeyNames[i]
		}
	}
	return "", ""
}

// queueKeyNames are the QueueKeys' names, made once rather than for
// every pod placed.
var queueKeyNames = func() (names [len(podmeta.QueueKeys)]string) {
	for i, k := range podmeta.QueueKeys {
		names[i] = k.String()
	}
	return names
}()

// podApp keys the pod's application within its namespace: an explicit id
// label or annotation (podmeta.ExplicitAppID: a valid label value, so it
// never contains '/'), then the gang object it names, then the top
// controlling owner (a ReplicaSet made by a Deployment counts as the
// Deployment, so a rollout stays one application), then the pod itself.
// The derived ids all contain '/' ("Deployment/web", "pod/<uid>"), so no
// explicit id can name one of them. test/soak's appID mirrors this.
func podApp(pod *v1.Pod) ugm.AppKey {
	key := ugm.AppKey{Namespace: pod.Namespace}
	if id := podmeta.ExplicitAppID(pod.Labels, pod.Annotations); id != "" {
		key.ID = id
		return key
	}
	// A gang object's pods are one application, whatever controls them
	// (an MPI launcher Job and its workers' StatefulSet).
	if id, ok := gang.ObjectApp(pod); ok {
		key.ID = id
		return key
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		name := ref.Name
		kind := ref.Kind
		// The Deployment controller names its ReplicaSets
		// <deployment>-<pod-template-hash> and labels their pods with the
		// hash, so the Deployment is found without watching ReplicaSets.
		if kind == "ReplicaSet" {
			if h := pod.Labels["pod-template-hash"]; h != "" && strings.HasSuffix(name, "-"+h) {
				kind, name = "Deployment", strings.TrimSuffix(name, "-"+h)
			}
		}
		key.ID = kind + "/" + name
		return key
	}
	key.ID = "pod/" + string(pod.UID)
	return key
}
