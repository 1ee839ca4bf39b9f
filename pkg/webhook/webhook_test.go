package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/userquota/userquota/pkg/podmeta"
)

func testConfig(t *testing.T) Config {
	t.Helper()
	users, err := CompileList("trusted-users", DefaultTrustedUsers)
	if err != nil {
		t.Fatal(err)
	}
	subs, _ := CompileList("submitters", []string{"system:serviceaccount:argo:.*"})
	groups, _ := CompileList("trusted-groups", []string{"controllers"})
	return Config{
		SchedulerName: "userquota-scheduler",
		TrustedUsers:  users, TrustedGroups: groups, Submitters: subs,
		QuotaGroups:        regexp.MustCompile(`^(?:[^:]+)$`),
		ConfigMapNamespace: "userquota-system", ConfigMapName: "userquota-config", ConfigMapKey: "queues.yaml",
	}
}

var (
	sue    = authenticationv1.UserInfo{Username: "sue", Groups: []string{"dev", "system:authenticated"}}
	bob    = authenticationv1.UserInfo{Username: "bob", Groups: []string{"ops", "system:authenticated"}}
	jobCtl = authenticationv1.UserInfo{Username: "system:serviceaccount:kube-system:job-controller", Groups: []string{"system:serviceaccounts"}}
	argo   = authenticationv1.UserInfo{Username: "system:serviceaccount:argo:workflow", Groups: []string{"system:serviceaccounts"}}
)

const (
	sueInfo = `{"user":"sue","groups":["dev"]}`
	bobInfo = `{"user":"bob","groups":["ops"]}`
)

func pod(scheduler string, annotations map[string]string) map[string]any {
	meta := map[string]any{"name": "p", "namespace": "ns"}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta,
		"spec": map[string]any{"schedulerName": scheduler, "containers": []any{map[string]any{"name": "c", "image": "i"}}}}
}

func cronJob(annotations map[string]string) map[string]any {
	tmpl := map[string]any{"spec": map[string]any{"schedulerName": "userquota-scheduler"}}
	if annotations != nil {
		tmpl["metadata"] = map[string]any{"annotations": annotations}
	}
	return map[string]any{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": map[string]any{"name": "cj", "namespace": "ns"},
		"spec": map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": tmpl}}}}
}

func deployment(scheduler string, annotations map[string]string) map[string]any {
	tmpl := map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}, "spec": map[string]any{"schedulerName": scheduler}}
	if annotations != nil {
		tmpl["metadata"].(map[string]any)["annotations"] = annotations
	}
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d", "namespace": "ns"},
		"spec": map[string]any{"template": tmpl}}
}

type review struct {
	path     string
	op       admissionv1.Operation
	user     authenticationv1.UserInfo
	obj, old map[string]any
}

// send posts the review to the handler through httptest and returns the
// response and the object after its patch.
func send(t *testing.T, h http.Handler, r review) (*admissionv1.AdmissionResponse, map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(r.obj)
	req := &admissionv1.AdmissionRequest{UID: "u1", Operation: r.op, UserInfo: r.user, Namespace: "ns",
		Kind: metav1.GroupVersionKind{Kind: r.obj["kind"].(string)}, Object: runtime.RawExtension{Raw: raw}}
	if name, ok := r.obj["metadata"].(map[string]any)["name"].(string); ok {
		req.Name = name
	}
	if r.old != nil {
		req.OldObject.Raw, _ = json.Marshal(r.old)
	}
	resp := post(t, h, r.path, req)
	patched := raw
	if len(resp.Patch) > 0 {
		p, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatalf("patch %s: %v", resp.Patch, err)
		}
		if patched, err = p.Apply(raw); err != nil {
			t.Fatalf("patch %s: %v", resp.Patch, err)
		}
	}
	var obj map[string]any
	_ = json.Unmarshal(patched, &obj)
	return resp, obj
}

// post sends req (its UID u1) to path of the handler through httptest as
// an AdmissionReview and returns the response, which must carry the UID.
func post(t *testing.T, h http.Handler, path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	body, _ := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || out.Response.UID != "u1" {
		t.Fatalf("response %+v: want the request's UID", out.Response)
	}
	return out.Response
}

// checkAnswer fails t unless resp is allowed (denied nil) or refused with
// code and a message holding each of denied.
func checkAnswer(t *testing.T, resp *admissionv1.AdmissionResponse, denied []string, code int32) {
	t.Helper()
	switch {
	case denied == nil && !resp.Allowed:
		t.Fatalf("refused: %s", resp.Result.Message)
	case denied == nil:
		return
	case resp.Allowed:
		t.Fatalf("allowed, want refused with %q", denied)
	}
	for _, want := range denied {
		if !strings.Contains(resp.Result.Message, want) {
			t.Errorf("refusal %q lacks %q", resp.Result.Message, want)
		}
	}
	if resp.Result.Code != code {
		t.Errorf("code %d, want %d", resp.Result.Code, code)
	}
}

func annotationOf(obj map[string]any, path ...string) string {
	m := lookup(obj, append(path, "metadata", "annotations"))
	s, _ := m[podmeta.AnnotationUserInfo].(string)
	return s
}

func schedulerOf(obj map[string]any, path ...string) string {
	s, _ := lookup(obj, append(path, "spec"))["schedulerName"].(string)
	return s
}

func TestMutate(t *testing.T) {
	h := NewHandler(testConfig(t))
	tmpl := []string{"spec", "template"}
	cronTmpl := []string{"spec", "jobTemplate", "spec", "template"}
	for _, tc := range []struct {
		name string
		r    review
		// path of the pod template in the object (nil: the pod itself)
		at        []string
		want      string // the annotation after the patch
		scheduler string // schedulerName after the patch, when checked
		denied    string // part of the refusal, "" when allowed
	}{
		{name: "pod stamped", r: review{path: PathMutate, op: admissionv1.Create, user: sue, obj: pod("userquota-scheduler", nil)}, want: sueInfo},
		{name: "pod of another scheduler untouched", r: review{path: PathMutate, op: admissionv1.Create, user: sue, obj: pod("default-scheduler", map[string]string{podmeta.AnnotationUserInfo: bobInfo})}, want: bobInfo},
		{name: "pod naming itself correctly", r: review{path: PathMutate, op: admissionv1.Create, user: sue, obj: pod("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: `{"user":"sue","groups":["dev"]}`})}, want: sueInfo},
		{name: "forged pod refused", r: review{path: PathMutate, op: admissionv1.Create, user: sue, obj: pod("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: bobInfo})}, denied: "you may not set it to " + bobInfo},
		{name: "trusted controller keeps the template's", r: review{path: PathMutate, op: admissionv1.Create, user: jobCtl, obj: pod("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: bobInfo})}, want: bobInfo},
		{name: "trusted group keeps it", r: review{path: PathMutate, op: admissionv1.Create, user: authenticationv1.UserInfo{Username: "x", Groups: []string{"controllers"}}, obj: pod("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: bobInfo})}, want: bobInfo},
		{name: "trusted controller without one is not stamped", r: review{path: PathMutate, op: admissionv1.Create, user: jobCtl, obj: pod("userquota-scheduler", nil)}, want: ""},
		{name: "submitter sets anyone", r: review{path: PathMutate, op: admissionv1.Create, user: argo, obj: pod("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: bobInfo})}, want: bobInfo},
		{name: "submitter without one is itself", r: review{path: PathMutate, op: admissionv1.Create, user: argo, obj: pod("userquota-scheduler", nil)}, want: `{"user":"system:serviceaccount:argo:workflow","groups":[]}`},
		{name: "pod update cannot change it", r: review{path: PathMutate, op: admissionv1.Update, user: sue, obj: pod("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: sueInfo}), old: pod("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: bobInfo})}, denied: "cannot be changed"},
		{name: "pod update dropping it restores it", r: review{path: PathMutate, op: admissionv1.Update, user: bob, obj: pod("userquota-scheduler", map[string]string{"x": "y"}), old: pod("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: bobInfo})}, want: bobInfo},
		{name: "pod from before the webhook is not stamped by its updater", r: review{path: PathMutate, op: admissionv1.Update, user: sue, obj: pod("userquota-scheduler", nil), old: pod("userquota-scheduler", nil)}, want: ""},
		{name: "submitter's update of a pod from before the webhook is not stamped", r: review{path: PathMutate, op: admissionv1.Update, user: argo, obj: pod("userquota-scheduler", nil), old: pod("userquota-scheduler", nil)}, want: ""},
		{name: "submitter may change it on update", r: review{path: PathMutate, op: admissionv1.Update, user: argo, obj: pod("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: sueInfo}), old: pod("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: bobInfo})}, want: sueInfo},
		{name: "update adding the requester's own is allowed", r: review{path: PathMutate, op: admissionv1.Update, user: sue, obj: pod("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: sueInfo}), old: pod("userquota-scheduler", nil)}, want: sueInfo},
		{name: "update adding someone else's is refused", r: review{path: PathMutate, op: admissionv1.Update, user: sue, obj: pod("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: bobInfo}), old: pod("userquota-scheduler", nil)}, denied: "you may not set it"},
		{name: "pod update in an enforced namespace keeps another scheduler", r: review{path: PathMutateEnforced, op: admissionv1.Update, user: sue, obj: pod("volcano", nil), old: pod("volcano", nil)}, want: "", scheduler: "volcano"},
		{name: "statefulset in an enforced namespace refused for another scheduler", r: review{path: PathMutateEnforced, op: admissionv1.Update, user: sue, obj: func() map[string]any { d := deployment("volcano", nil); d["kind"] = "StatefulSet"; return d }()}, denied: `not "volcano"`},
		{name: "deployment template stamped", r: review{path: PathMutate, op: admissionv1.Create, user: sue, obj: deployment("userquota-scheduler", nil)}, at: tmpl, want: sueInfo},
		{name: "cronjob template without metadata stamped", r: review{path: PathMutate, op: admissionv1.Create, user: bob, obj: cronJob(nil)}, at: cronTmpl, want: bobInfo},
		{name: "deployment apply without it keeps the submitter", r: review{path: PathMutate, op: admissionv1.Update, user: sue, obj: deployment("userquota-scheduler", nil), old: deployment("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: bobInfo})}, at: tmpl, want: bobInfo},
		{name: "deployment untrusted change refused", r: review{path: PathMutate, op: admissionv1.Update, user: sue, obj: deployment("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: sueInfo}), old: deployment("userquota-scheduler", map[string]string{podmeta.AnnotationUserInfo: bobInfo})}, at: tmpl, denied: "cannot be changed"},
		{name: "enforced: default scheduler redirected", r: review{path: PathMutateEnforced, op: admissionv1.Create, user: sue, obj: pod("default-scheduler", nil)}, want: sueInfo, scheduler: "userquota-scheduler"},
		{name: "enforced: no scheduler redirected", r: review{path: PathMutateEnforced, op: admissionv1.Create, user: sue, obj: deployment("", nil)}, at: tmpl, want: sueInfo, scheduler: "userquota-scheduler"},
		{name: "enforced: another scheduler refused", r: review{path: PathMutateEnforced, op: admissionv1.Create, user: sue, obj: pod("volcano", nil)}, denied: `not "volcano"`},
		{name: "enforced: forged refused", r: review{path: PathMutateEnforced, op: admissionv1.Create, user: sue, obj: pod("default-scheduler", map[string]string{podmeta.AnnotationUserInfo: bobInfo})}, denied: "you may not set it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, obj := send(t, h, tc.r)
			if tc.denied != "" {
				if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, tc.denied) {
					t.Fatalf("got allowed=%v %+v, want refused with %q", resp.Allowed, resp.Result, tc.denied)
				}
				return
			}
			if !resp.Allowed {
				t.Fatalf("refused: %s", resp.Result.Message)
			}
			if got := annotationOf(obj, tc.at...); got != tc.want {
				t.Errorf("annotation = %s, want %s", got, tc.want)
			}
			if tc.scheduler != "" {
				if got := schedulerOf(obj, tc.at...); got != tc.scheduler {
					t.Errorf("schedulerName = %q, want %q", got, tc.scheduler)
				}
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	h := NewHandler(testConfig(t))
	for _, tc := range []struct {
		method, body string
		want         int
	}{
		{http.MethodGet, "", http.StatusMethodNotAllowed},
		{http.MethodPost, "{", http.StatusBadRequest},
		{http.MethodPost, "{}", http.StatusBadRequest},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, PathMutate, strings.NewReader(tc.body)))
		if rec.Code != tc.want {
			t.Errorf("%s %q: %d, want %d", tc.method, tc.body, rec.Code, tc.want)
		}
	}
}

func TestCompileAnchors(t *testing.T) {
	res, err := CompileList("trusted-users", DefaultTrustedUsers)
	if err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]bool{
		"system:kube-controller-manager":                       true,
		"system:serviceaccount:kube-system:job-controller":     true,
		"system:serviceaccount:kube-system:job-controller-x":   false,
		"system:serviceaccount:evil:job-controller":            false,
		"xsystem:kube-controller-manager":                      false,
		"system:serviceaccount:kube-system:cronjob-controller": true,
	} {
		got := false
		for _, re := range res {
			got = got || re.MatchString(user)
		}
		if got != want {
			t.Errorf("%s trusted = %v, want %v", user, got, want)
		}
	}
	if _, err := CompileList("trusted-users", []string{"("}); err == nil || !strings.Contains(err.Error(), "trusted-users") {
		t.Errorf("err = %v, want one naming the flag", err)
	}
}
