package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestValidateConfigTrees: the config webhook loads the quota trees beside
// the queue config as the scheduler does (queueconfig.LoadConfigMap): a
// valid forest passes; a bad tree, two trees with one name, or a bad
// queue config beside good trees are refused naming the key, the tree and
// the node.
func TestValidateConfigTrees(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "queueconfig", "testdata", "trees", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ctx, svc := read("contexttree.tree.json"), read("servicetree.tree.json")
	for _, tc := range []struct {
		name   string
		data   map[string]string
		denied []string
	}{
		{name: "a forest", data: map[string]string{"queues.yaml": validConfig, "ctx.tree.json": ctx, "svc.tree.json": svc}},
		{name: "undeclared unit", data: map[string]string{"queues.yaml": validConfig, "ctx.tree.json": strings.Replace(ctx, `"quota": {"cpu": "4"}}`, `"quota": {"cpu": "4", "disk": "1"}}`, 1)},
			denied: []string{`data.queues.yaml with the quota trees in data.ctx.tree.json is not a valid queue config (1 problem)`,
				`ctx.tree.json (tree "ContextTree"): node "Context-1": quota names disk, a resource the tree does not declare`}},
		{name: "two trees with one name", data: map[string]string{"queues.yaml": validConfig, "a.tree.json": svc, "b.tree.json": svc},
			denied: []string{`b.tree.json (tree "ServiceTree"): a second tree named "ServiceTree": a.tree.json has one already`}},
		{name: "bad queue config beside good trees", data: map[string]string{"queues.yaml": twoProblems, "ctx.tree.json": ctx},
			denied: []string{"(2 problems)", `invalid queue name "a b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "userquota-config", "namespace": "ns"}, "data": tc.data})
			cfg := testConfig(t)
			cfg.ConfigMapNamespace = "ns"
			req := &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Update, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
				Namespace: "ns", Name: "userquota-config", Object: runtime.RawExtension{Raw: raw}}
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
