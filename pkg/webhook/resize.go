package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/userquota/userquota/pkg/rest/dao"
)

// PathValidateResize checks an in-place resize (pods/resize) of a running
// pod of ours against its quota.
const PathValidateResize = "/validate-resize"

// ResizeChecker asks the scheduler whether a running pod may grow to the
// requests of pod (the resized pod as JSON, as the API server sent it:
// the webhook never decodes its quantities). An error means no answer.
type ResizeChecker func(ctx context.Context, pod []byte) (dao.ResizeCheck, error)

// resizeTimeout bounds the question to the scheduler, inside the
// webhook's own timeout of 5 s (manifests/webhook-config.yaml).
const resizeTimeout = 3 * time.Second

// validateResize refuses a pods/resize of a bound pod of ours that would
// take its user, group or queue over a limit, with the scheduler's own
// reason (issue 20, point 2; docs/security.md, "No skipping the
// scheduler"). A running pod cannot be refused by the scheduler, which
// charges a resize anyway: admission is the only place to stop it. The
// usage is the leading scheduler's (its REST API's resize check, which
// checks the growth as an increase of the pod's charge); when it does not
// answer the resize is refused (fail closed: a resize can wait, a pod
// keeps running at its size). Without --scheduler-url (ResizeCheck nil)
// the check is off: allowed, with a warning. A pod not bound yet is allowed: the
// scheduler reads its requests when it admits it.
func (h *Handler) validateResize(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Kind.Kind != "Pod" || req.SubResource != "resize" || req.Operation != admissionv1.Update {
		return allowed()
	}
	var obj map[string]any
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return denied(http.StatusBadRequest, fmt.Sprintf("Pod %s/%s: cannot decode the object: %v", req.Namespace, req.Name, err))
	}
	if h.boundNode(obj) == "" {
		return allowed()
	}
	if h.cfg.ResizeCheck == nil {
		// Not set up (the manifests as shipped): the check is opt-in, so
		// that installing the webhook does not stop every resize; the
		// scheduler charges the resize anyway and counts it when it goes
		// over (userquota_resizes_over_limit_total).
		a := allowed()
		a.Warnings = []string{fmt.Sprintf("resize of Pod %s/%s not checked against its quota: the userquota webhook has no --scheduler-url (docs/security.md)", req.Namespace, req.Name)}
		return a
	}
	ctx, cancel := context.WithTimeout(context.Background(), resizeTimeout)
	defer cancel()
	answer, err := h.cfg.ResizeCheck(ctx, req.Object.Raw)
	switch {
	case err != nil:
		return denied(http.StatusServiceUnavailable, fmt.Sprintf("Pod %s/%s: this resize cannot be checked against the pod's quota, so it is refused until it can (retry): the scheduler did not answer: %v",
			req.Namespace, req.Name, err))
	case !answer.Fits:
		return denied(http.StatusForbidden, fmt.Sprintf("Pod %s/%s: this resize would take it over its quota, so it is refused (the pod keeps running at its size): %s",
			req.Namespace, req.Name, answer.Reason))
	}
	return allowed()
}
