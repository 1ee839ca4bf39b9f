package webhook

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/userquota/userquota/pkg/podmeta"
)

// frozenKeys are the keys the scheduler reads when it charges a pod, each
// where it reads it: the named queue (podmeta.QueueKeys, which the
// plugin's podNamedQueue reads), the explicit application id
// (podmeta.ExplicitAppID: each of AppIDKeys as label and annotation) and
// the preemptible label (podPreemptible). The user info keys are guarded
// by mutate itself.
var frozenKeys = func() []podmeta.MetaKey {
	keys := append([]podmeta.MetaKey(nil), podmeta.QueueKeys[:]...)
	for _, k := range podmeta.AppIDKeys {
		keys = append(keys, podmeta.MetaKey{Key: k}, podmeta.MetaKey{Annotation: true, Key: k})
	}
	return append(keys, podmeta.MetaKey{Key: podmeta.LabelPreemptible})
}()

// refuseFrozen refuses an UPDATE of a bound pod of ours that changes, adds
// or removes any of frozenKeys, whoever asks (trusted requesters too: no
// controller needs to). The scheduler charged the pod by those keys when
// it admitted it and keeps that charge while the pod runs, but a scheduler
// that starts (a restart, a failover) charges the running pods it finds by
// what they carry then: a relabel would move the pod's usage to another
// queue or application, or make a pod that borrowed capacity
// unreclaimable. A pod not bound yet may still change them: the scheduler
// reads them when it admits it. nil: nothing to refuse.
func (h *Handler) refuseFrozen(req *admissionv1.AdmissionRequest, obj map[string]any) *admissionv1.AdmissionResponse {
	if req.Kind.Kind != "Pod" || req.Operation != admissionv1.Update {
		return nil
	}
	var old map[string]any
	if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
		return denied(http.StatusBadRequest, fmt.Sprintf("Pod %s/%s: cannot decode the old object: %v", req.Namespace, req.Name, err))
	}
	node := h.boundNode(old)
	if node == "" {
		return nil
	}
	var changes []string
	for _, k := range frozenKeys {
		was, had := metaValue(old, k)
		now, has := metaValue(obj, k)
		if had == has && was == now {
			continue
		}
		changes = append(changes, fmt.Sprintf("%s from %s to %s", k, quoteOrAbsent(was, had), quoteOrAbsent(now, has)))
	}
	changes = append(changes, treeLabelChanges(old, obj)...)
	if changes == nil {
		return nil
	}
	sort.Strings(changes)
	return denied(http.StatusForbidden, fmt.Sprintf("Pod %s/%s is bound to node %s by %s, so its queue, application id, preemptible and quota tree labels and annotations are read-only: the request changes %s. "+
		"Its usage is charged where it was admitted, by the values it had then; a changed value would move the charge or make the pod unreclaimable at the scheduler's next start. "+
		"Set them before the pod is scheduled, or delete the pod and create it with the new values",
		req.Namespace, req.Name, node, h.cfg.SchedulerName, strings.Join(changes, "; ")))
}

// boundNode is the node a pod of ours is bound to; "" when the pod names
// another scheduler or is not bound yet.
func (h *Handler) boundNode(pod map[string]any) string {
	spec := lookup(pod, []string{"spec"})
	node, _ := spec["nodeName"].(string)
	if sched, _ := spec["schedulerName"].(string); sched != h.cfg.SchedulerName {
		return ""
	}
	return node
}

// metaValue is the value of a pod's label or annotation k, and whether it
// is present (a value that is not a string counts as absent).
func metaValue(obj map[string]any, k podmeta.MetaKey) (string, bool) {
	field := "labels"
	if k.Annotation {
		field = "annotations"
	}
	m, _ := lookup(obj, []string{"metadata"})[field].(map[string]any)
	v, ok := m[k.Key].(string)
	return v, ok
}

func quoteOrAbsent(v string, present bool) string {
	if !present {
		return "(absent)"
	}
	return fmt.Sprintf("%q", v)
}
