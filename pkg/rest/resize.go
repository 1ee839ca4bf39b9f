package rest

import (
	"encoding/json"
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"

	"github.com/userquota/userquota/pkg/rest/dao"
)

// maxResizeBody bounds the pod POSTed to the resize check: one pod, at
// most the 1.5 MiB etcd stores, with room for escaping.
const maxResizeBody = 3 << 20

// ResizeCheckFunc decides whether the running pod pod.UID may grow to
// the requests of pod. An error means the answer is not known (the
// scheduler has not yet seen every pod): the handler answers 503.
type ResizeCheckFunc func(pod *v1.Pod) (dao.ResizeCheck, error)

// resize serves POST dao.ResizeCheckPath, which the admission webhook
// asks before it lets a pods/resize of a pod of ours through
// (docs/security.md): the answer of Options.Resize for the resized pod
// (its new spec, as JSON) in the body. It changes nothing; it is a POST
// because the question is a pod.
func (s *server) resize(w http.ResponseWriter, r *http.Request) {
	if !s.partitionOK(w, r) {
		return
	}
	if s.opts.Resize == nil {
		writeError(w, http.StatusNotFound, "no resize check", "this server does not check resizes")
		return
	}
	var pod v1.Pod
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxResizeBody)).Decode(&pod); err != nil {
		writeError(w, http.StatusBadRequest, "want a Pod as JSON: "+err.Error(), "POST the resized pod (its new spec) as JSON")
		return
	}
	if pod.UID == "" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("pod %s/%s has no metadata.uid", pod.Namespace, pod.Name), "the running pod is found by its UID")
		return
	}
	answer, err := s.opts.Resize(&pod)
	if err != nil {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "cannot check the resize yet", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, answer)
}
