package webhook

import (
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
)

// refuseNodeName refuses a pod of ours, or a workload whose pod template
// names our scheduler, that an untrusted requester writes with
// spec.nodeName already set (issue 20, point 2; docs/security.md, "No
// skipping the scheduler"). The kubelet of that node runs such a pod
// without any scheduler, so its quota is never checked: the scheduler
// finds it bound and can only charge it, over the limit if need be. A
// template with nodeName would do the same through a trusted controller,
// which copies it onto the pods it creates.
//
// An UPDATE is refused only when it sets or changes nodeName, or moves
// the object to our scheduler: a bound pod of ours carries the nodeName
// the scheduler gave it, and updates of it are not affected. Trusted
// requesters (the controllers) may: none of the workload controllers sets
// nodeName (DaemonSet pods are placed by node affinity and scheduled),
// and what they copy passed this check. obj and old are the object and,
// on UPDATE, the old one; base is where they keep their pod template (a
// pod: nil). nil: nothing to refuse.
func (h *Handler) refuseNodeName(req *admissionv1.AdmissionRequest, obj, old map[string]any, base []string) *admissionv1.AdmissionResponse {
	node, _ := lookup(lookup(obj, base), []string{"spec"})["nodeName"].(string)
	if node == "" || h.trusted(req.UserInfo) {
		return nil
	}
	if req.Operation == admissionv1.Update {
		oldSpec := lookup(lookup(old, base), []string{"spec"})
		oldNode, _ := oldSpec["nodeName"].(string)
		oldSched, _ := oldSpec["schedulerName"].(string)
		if oldNode == node && oldSched == h.cfg.SchedulerName {
			return nil
		}
	}
	field, who := "spec.nodeName", "the pod"
	if len(base) > 0 {
		field, who = strings.Join(base, ".")+".spec.nodeName", "the pods made from it"
	}
	return denied(http.StatusForbidden, fmt.Sprintf("%s %s/%s: %s is set (to %q), so %s would skip %s and its quota check: the kubelet runs a pod that names a node without any scheduler, and its usage would be charged even over its user's, group's or queue's limit. "+
		"Remove nodeName (to pick the node, use a nodeSelector or node affinity on kubernetes.io/hostname), or ask for %q to be made a trusted user",
		req.Kind.Kind, req.Namespace, objName(req, obj), field, node, who, h.cfg.SchedulerName, req.UserInfo.Username))
}
