package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Queue configs for TestValidateConfig.
const (
	validConfig = "partitions:\n- name: default\n  queues:\n  - name: root\n"
	gpuConfig   = "partitions:\n- name: gpu\n  queues:\n  - name: root\n"
	// twoProblems fails Parse twice.
	twoProblems = "partitions:\n- name: default\n  queues:\n  - name: root\n    maxapplications: -1\n    queues:\n    - name: a b\n"
)

// TestValidateConfig: the queue config is refused unless the scheduler
// would load it (queueconfig.Load, its partition included), with every
// problem listed; a DELETE of it is refused and says how to remove it on
// purpose; other ConfigMaps pass, deleted or not.
func TestValidateConfig(t *testing.T) {
	cm := func(ns, name, data string) []byte {
		raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": ns},
			"data": map[string]any{"queues.yaml": data}})
		return raw
	}
	for _, tc := range []struct {
		name      string
		op        admissionv1.Operation
		ns, cm    string
		partition string
		// collection: a collection delete's request, without a name.
		collection bool
		// object is the request's object (oldObject on DELETE).
		object []byte
		// denied are substrings of the refusal (nil: allowed).
		denied []string
	}{
		{name: "valid", object: cm("ns", "userquota-config", validConfig)},
		{name: "valid update", op: admissionv1.Update, object: cm("ns", "userquota-config", validConfig)},
		{name: "invalid lists every problem", object: cm("ns", "userquota-config", twoProblems),
			denied: []string{"ConfigMap ns/userquota-config: data.queues.yaml is not a valid queue config (2 problems):",
				"line 5: partitions[0].queues[0].maxapplications", `invalid queue name "a b"`}},
		{name: "without the scheduler's partition", op: admissionv1.Update, object: cm("ns", "userquota-config", gpuConfig),
			denied: []string{"(1 problem)", `partitions: no partition "default", the partition the scheduler enforces`, `the config has "gpu"`}},
		{name: "the scheduler's partition set", partition: "gpu", object: cm("ns", "userquota-config", gpuConfig)},
		{name: "another partition set", partition: "gpu", object: cm("ns", "userquota-config", validConfig),
			denied: []string{`no partition "gpu"`, `the config has "default"`}},
		{name: "key missing", object: []byte(`{"kind":"ConfigMap","metadata":{"name":"userquota-config","namespace":"ns"}}`),
			denied: []string{"data.queues.yaml is missing"}},
		{name: "another ConfigMap", cm: "other", object: cm("ns", "other", twoProblems)},
		{name: "another namespace", ns: "elsewhere", object: cm("elsewhere", "userquota-config", twoProblems)},
		{name: "delete refused", op: admissionv1.Delete, object: cm("ns", "userquota-config", validConfig),
			denied: []string{"ConfigMap ns/userquota-config holds the queue config userquota-scheduler enforces and may not be deleted",
				"delete the ValidatingWebhookConfiguration userquota-webhook first"}},
		{name: "delete of another ConfigMap", op: admissionv1.Delete, cm: "other", object: cm("ns", "other", validConfig)},
		{name: "collection delete refused", op: admissionv1.Delete, collection: true, object: cm("ns", "userquota-config", validConfig),
			denied: []string{"ConfigMap ns/userquota-config holds the queue config"}},
		{name: "collection delete of another ConfigMap", op: admissionv1.Delete, collection: true, cm: "other", object: cm("ns", "other", validConfig)},
		{name: "collection delete without oldObject", op: admissionv1.Delete, collection: true,
			denied: []string{"a DELETE of a ConfigMap in ns: cannot tell which"}},
		{name: "delete in another namespace", op: admissionv1.Delete, ns: "elsewhere", object: cm("elsewhere", "userquota-config", validConfig)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.ConfigMapNamespace, cfg.Partition = "ns", tc.partition
			op, ns, name := tc.op, tc.ns, tc.cm
			if op == "" {
				op = admissionv1.Create
			}
			if ns == "" {
				ns = "ns"
			}
			if name == "" {
				name = "userquota-config"
			}
			req := &admissionv1.AdmissionRequest{UID: "u", Operation: op, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
				Namespace: ns, Name: name}
			if tc.collection {
				req.Name = ""
			}
			if op == admissionv1.Delete {
				req.OldObject = runtime.RawExtension{Raw: tc.object}
			} else {
				req.Object = runtime.RawExtension{Raw: tc.object}
			}
			body, _ := json.Marshal(admissionv1.AdmissionReview{Request: req})
			rec := httptest.NewRecorder()
			NewHandler(cfg).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, PathValidateConfig, bytes.NewReader(body)))
			var out admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatalf("response %q: %v", rec.Body.String(), err)
			}
			if len(tc.denied) == 0 {
				if !out.Response.Allowed {
					t.Fatalf("refused: %s", out.Response.Result.Message)
				}
				return
			}
			if out.Response.Allowed {
				t.Fatal("allowed, want refused")
			}
			for _, d := range tc.denied {
				if !strings.Contains(out.Response.Result.Message, d) {
					t.Errorf("message %q lacks %q", out.Response.Result.Message, d)
				}
			}
		})
	}
}
