package webhook

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/userquota/userquota/pkg/queueconfig"
)

// DefaultPartition is the partition the scheduler enforces unless its
// args name another (the flag --partition's default).
const DefaultPartition = queueconfig.DefaultPartition

// validateConfig guards the queue-config ConfigMap (docs/security.md, "Fail
// closed"): a CREATE or UPDATE whose config the scheduler would not load
// (queueconfig.Load: the config and the scheduler's partition in it) is
// refused with every problem listed, and so is a DELETE: a scheduler that
// restarts without the ConfigMap enforces no limits. Other ConfigMaps are
// allowed.
func (h *Handler) validateConfig(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Kind.Kind != "ConfigMap" || req.Namespace != h.cfg.ConfigMapNamespace {
		return allowed()
	}
	switch req.Operation {
	case admissionv1.Delete:
		name, err := deletedName(req)
		if err != nil {
			// The API server sent it here because its name matched.
			return denied(http.StatusBadRequest, fmt.Sprintf("a DELETE of a ConfigMap in %s: cannot tell which: %v", req.Namespace, err))
		}
		if name != h.cfg.ConfigMapName {
			return allowed()
		}
		return denied(http.StatusForbidden, fmt.Sprintf("ConfigMap %s/%s holds the queue config userquota-scheduler enforces and may not be deleted: "+
			"a scheduler that starts without it runs pods without limits. To change the limits apply a new config; "+
			"to remove it on purpose (uninstalling), delete the ValidatingWebhookConfiguration userquota-webhook first (docs/security.md, \"Fail closed\")",
			req.Namespace, h.cfg.ConfigMapName))
	case admissionv1.Create, admissionv1.Update:
		if req.Name != h.cfg.ConfigMapName {
			return allowed()
		}
	default:
		return allowed()
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(req.Object.Raw, &cm); err != nil {
		return denied(http.StatusBadRequest, fmt.Sprintf("ConfigMap %s/%s: %v", req.Namespace, req.Name, err))
	}
	if _, ok := cm.Data[h.cfg.ConfigMapKey]; !ok {
		return denied(http.StatusUnprocessableEntity, fmt.Sprintf("ConfigMap %s/%s: data.%s is missing: it holds the queue config", req.Namespace, req.Name, h.cfg.ConfigMapKey))
	}
	partition := h.cfg.Partition
	if partition == "" {
		partition = DefaultPartition
	}
	// The queue config and the quota trees beside it, as the scheduler
	// loads them (docs/forests.md).
	if _, err := queueconfig.LoadConfigMap(cm.Data, h.cfg.ConfigMapKey, partition); err != nil {
		problems := queueconfig.Problems(err)
		noun := "problems"
		if len(problems) == 1 {
			noun = "problem"
		}
		what := "data." + h.cfg.ConfigMapKey + " is not a valid queue config"
		if trees := treeKeys(cm.Data); len(trees) > 0 {
			what = fmt.Sprintf("data.%s with the quota trees in %s is not a valid queue config", h.cfg.ConfigMapKey, strings.Join(trees, ", "))
		}
		return denied(http.StatusUnprocessableEntity, fmt.Sprintf("ConfigMap %s/%s: %s (%d %s):\n%s",
			req.Namespace, req.Name, what, len(problems), noun, strings.Join(problems, "\n")))
	}
	return allowed()
}

// deletedName is the name of the object a DELETE removes: the request's,
// or, when that is empty, oldObject's. A collection delete
// (`kubectl delete configmaps --all`, a namespace's deletion) asks once
// per object with the request's name empty.
func deletedName(req *admissionv1.AdmissionRequest) (string, error) {
	if req.Name != "" {
		return req.Name, nil
	}
	var old struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil || old.Metadata.Name == "" {
		return "", fmt.Errorf("no name in the request or in oldObject (%v)", err)
	}
	return old.Metadata.Name, nil
}

// treeKeys lists, sorted, the data keys holding quota trees.
func treeKeys(data map[string]string) []string {
	var out []string
	for k := range data {
		if queueconfig.IsTreeKey(k) {
			out = append(out, "data."+k)
		}
	}
	sort.Strings(out)
	return out
}
