package webhook

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/userquota/userquota/pkg/resources/resourcestest"
)

// rawReview is an AdmissionReview as anyone who reaches the webhook's
// port can send it: text, not an object the API server has parsed.
func rawReview(kind, op, object string) string {
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",` +
		`"kind":{"group":"","version":"v1","kind":"` + kind + `"},"resource":{"group":"","version":"v1","resource":"x"},` +
		`"namespace":"userquota-system","name":"userquota-config","operation":"` + op + `",` +
		`"userInfo":{"username":"sue","groups":["dev"]},"object":` + object + `,"oldObject":` + object + `}}`
}

// TestHostileReview: an AdmissionReview whose pod or queue config holds
// hostile quantities is answered within two seconds and 16 MiB on every
// path, and the config is refused naming the key. The webhook decodes
// objects as JSON maps, never as Quantities, so nothing of it parses a
// pod's quantities (apimachinery's parser alone takes minutes over
// "1e-2000000000"); this keeps it so.
func TestHostileReview(t *testing.T) {
	h := NewHandler(testConfig(t))
	for _, q := range resourcestest.Hostile {
		pod := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"},"spec":{"schedulerName":"userquota-scheduler",`+
			`"overhead":{"memory":%[1]q},"containers":[{"name":"c","image":"i","resources":{"requests":{"memory":%[1]q,"cpu":%[1]q},"limits":{"memory":%[1]q}}},`+
			`{"name":"d","image":"i","resources":{"requests":{"memory":"1Gi","cpu":1e2000000000}}}]}}`, q)
		config := "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues: [{name: a, resources: {max: {memory: \"" + q + "\"}}}]\n"
		cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"userquota-config","namespace":"userquota-system"},"data":{"queues.yaml":` + strconv.Quote(config) + `}}`
		for _, c := range []struct{ path, kind, op, object string }{
			{PathMutate, "Pod", "CREATE", pod},
			{PathMutate, "Pod", "UPDATE", pod},
			{PathMutateEnforced, "Pod", "CREATE", pod},
			{PathValidateConfig, "ConfigMap", "CREATE", cm},
		} {
			t.Run(q+c.path+"/"+c.op, func(t *testing.T) {
				var rec *httptest.ResponseRecorder
				resourcestest.Within(t, resourcestest.Default, "review", func() {
					rec = httptest.NewRecorder()
					h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(rawReview(c.kind, c.op, c.object))))
				})
				if rec.Code != http.StatusOK {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				if c.kind == "ConfigMap" && strings.Contains(rec.Body.String(), `"allowed":false`) && !strings.Contains(rec.Body.String(), "resources.max.memory: ") {
					t.Errorf("refusal does not name the key: %s", rec.Body)
				}
			})
		}
	}
}

// TestBodyBound: a body over MaxRequestBytes is refused with 413 and a
// message saying so, before the webhook reads it all; one within is
// decoded (a 400 for what is not an AdmissionReview).
func TestBodyBound(t *testing.T) {
	h := NewHandler(testConfig(t))
	big := rawReview("Pod", "CREATE", `{"metadata":{"annotations":{"a":"`+strings.Repeat("x", MaxRequestBytes)+`"}}}`)
	tests := []struct {
		name     string
		body     string
		wantCode int
		wantText string
	}{
		{name: "over the bound", body: big, wantCode: http.StatusRequestEntityTooLarge, wantText: fmt.Sprintf("request body over %d bytes", MaxRequestBytes)},
		{name: "within, not a review", body: `{"kind":"Nothing"}`, wantCode: http.StatusBadRequest, wantText: "want an admission.k8s.io/v1 AdmissionReview"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			// The bound that matters is memory: the body is not read
			// whole. The time is generous, for -race on loaded cores.
			resourcestest.Within(t, resourcestest.Bounds{Time: 30 * time.Second, Alloc: 3 * MaxRequestBytes}, "review", func() {
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, PathMutate, strings.NewReader(tc.body)))
			})
			if rec.Code != tc.wantCode || !strings.Contains(rec.Body.String(), tc.wantText) {
				t.Errorf("status %d %q; want %d and %q", rec.Code, rec.Body, tc.wantCode, tc.wantText)
			}
		})
	}
}
