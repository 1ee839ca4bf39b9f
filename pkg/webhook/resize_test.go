package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/userquota/userquota/pkg/rest/dao"
)

// Issue 20, point 2: an in-place resize (pods/resize) of a running pod of
// ours that would take a limit over is refused with the scheduler's reason.

func resizeReview(obj map[string]any, sub string) *admissionv1.AdmissionRequest {
	raw, _ := json.Marshal(obj)
	return &admissionv1.AdmissionRequest{UID: "u1", Operation: admissionv1.Update, SubResource: sub, UserInfo: bob, Namespace: "ns", Name: "p",
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw}, OldObject: runtime.RawExtension{Raw: raw}}
}

func TestValidateResize(t *testing.T) {
	const (
		qs     = "userquota-scheduler"
		reason = `user "bob" would exceed maxresources in root.default: cpu 500m+1500m > 1`
	)
	bound := withNode(pod(qs, ours(bobInfo)), "node-1")
	for _, tc := range []struct {
		name     string
		obj      map[string]any
		sub      string // "" : resize
		answer   dao.ResizeCheck
		err      error
		noCheck  bool
		asked    bool
		denied   []string // nil: allowed
		deniedAs int32
		warning  string // in the answer's warnings when allowed
	}{
		{name: "fits", obj: bound, answer: dao.ResizeCheck{Charged: true, Fits: true}, asked: true},
		{name: "over a limit: the scheduler's reason", obj: bound, answer: dao.ResizeCheck{Charged: true, Reason: reason}, asked: true,
			denied: []string{"Pod ns/p: this resize would take it over its quota", reason}, deniedAs: 403},
		{name: "not charged by the scheduler", obj: bound, answer: dao.ResizeCheck{Fits: true}, asked: true},
		{name: "scheduler down: fail closed", obj: bound, err: errors.New("connection refused"), asked: true,
			denied: []string{"cannot be checked against the pod's quota, so it is refused until it can", "the scheduler did not answer: connection refused"}, deniedAs: 503},
		{name: "no --scheduler-url: not checked, allowed with a warning", obj: bound, noCheck: true, warning: "not checked against its quota: the userquota webhook has no --scheduler-url"},
		{name: "pod not bound: the scheduler reads it at admission", obj: pod(qs, ours(bobInfo))},
		{name: "another scheduler's pod", obj: withNode(pod("default-scheduler", nil), "node-1")},
		{name: "not the resize subresource", obj: bound, sub: "status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			asked := false
			if !tc.noCheck {
				cfg.ResizeCheck = func(_ context.Context, p []byte) (dao.ResizeCheck, error) {
					asked = true
					if !strings.Contains(string(p), `"nodeName":"node-1"`) {
						t.Errorf("asked about %s, want the pod as sent", p)
					}
					return tc.answer, tc.err
				}
			}
			sub := tc.sub
			if sub == "" {
				sub = "resize"
			}
			resp := NewHandler(cfg).validateResize(resizeReview(tc.obj, sub))
			if asked != tc.asked {
				t.Errorf("scheduler asked: %v, want %v", asked, tc.asked)
			}
			checkAnswer(t, resp, tc.denied, tc.deniedAs)
			if got := strings.Join(resp.Warnings, "\n"); tc.denied == nil && (tc.warning != "" && !strings.Contains(got, tc.warning) || tc.warning == "" && got != "") {
				t.Errorf("warnings %q, want %q", got, tc.warning)
			}
		})
	}
}

// TestValidateResizeServed: the path is served (an AdmissionReview in, the
// answer out).
func TestValidateResizeServed(t *testing.T) {
	cfg := testConfig(t)
	cfg.ResizeCheck = func(context.Context, []byte) (dao.ResizeCheck, error) {
		return dao.ResizeCheck{Charged: true, Reason: "over"}, nil
	}
	resp := post(t, NewHandler(cfg), PathValidateResize, resizeReview(withNode(pod("userquota-scheduler", nil), "node-1"), "resize"))
	if resp.Allowed {
		t.Fatalf("response %+v, want refused", resp)
	}
}
