// Package webhook holds the admission webhooks that make a pod's identity
// impossible to forge (docs/security.md): a mutating webhook that stamps
// userquota.io/user-info on pods and on the pod templates of workloads from
// the authenticated requester, and a validating webhook that refuses a
// queue-config ConfigMap the scheduler would not load, and its deletion
// (config.go).
//
// The Handler is stateless: which objects reach it is the webhook
// configurations' business (manifests/webhook.yaml); what it does with them
// depends only on the request and on Config.
package webhook

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/userquota/userquota/pkg/podmeta"
)

// LabelEnforce on a namespace opts it in: every pod there is scheduled by
// our scheduler (docs/security.md).
const LabelEnforce = "userquota.io/enforce"

// Paths the Handler serves.
const (
	// PathMutate stamps identity on pods and workloads that name our
	// scheduler (or, from namespaces that opt in, on every one).
	PathMutate = "/mutate"
	// PathMutateEnforced does what PathMutate does and also sets
	// schedulerName; the webhook configuration sends only namespaces
	// labelled userquota.io/enforce: "true" here.
	PathMutateEnforced = "/mutate-enforced"
	// PathValidateConfig validates the queue-config ConfigMap.
	PathValidateConfig = "/validate-queue-config"
)

// DefaultTrustedUsers are the requesters that may create objects carrying
// the annotation unchanged: the controller manager and its controllers'
// service accounts (--use-service-account-credentials), which copy the
// annotation from a template into the objects they create.
var DefaultTrustedUsers = []string{
	"system:kube-controller-manager",
	`system:serviceaccount:kube-system:(replicaset|deployment|statefulset|daemon-set|job|cronjob|replication)-controller`,
}

// Config says whom the webhook trusts and how it stamps.
type Config struct {
	// SchedulerName is our scheduler's profile name (userquota-scheduler).
	SchedulerName string
	// TrustedUsers and TrustedGroups match (whole string) the requesters
	// that may create or change an object carrying any annotation: the
	// controllers that copy it from templates. An object they create
	// without one is not stamped with their own name.
	TrustedUsers, TrustedGroups []*regexp.Regexp
	// Submitters match (whole string) user names that submit for others (a
	// workflow engine): they may set the annotation to anyone; without
	// one, their own identity is stamped.
	Submitters []*regexp.Regexp
	// QuotaGroups, when set, keeps only the requester's groups it matches
	// (whole string) in the stamp; nil keeps every group.
	QuotaGroups *regexp.Regexp
	// ConfigMapNamespace, ConfigMapName and ConfigMapKey name the queue
	// config PathValidateConfig checks (config.go); other ConfigMaps are
	// allowed.
	ConfigMapNamespace, ConfigMapName, ConfigMapKey string
	// Partition is the partition the scheduler enforces (its args'
	// partition; empty: DefaultPartition): a config without it is refused.
	Partition string
	// ResizeCheck asks the scheduler about a pods/resize (resize.go); nil
	// leaves resizes of running pods of ours unchecked: allowed, with a
	// warning.
	ResizeCheck ResizeChecker
}

// CompileList compiles patterns anchored to the whole string; errors name
// the flag (or setting) and the pattern.
func CompileList(name string, patterns []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, p := range patterns {
		if strings.TrimSpace(p) == "" {
			continue
		}
		re, err := Compile(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// Compile compiles one pattern anchored to the whole string.
func Compile(p string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(`^(?:` + p + `)$`)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", p, err)
	}
	return re, nil
}

// Handler serves the admission webhooks.
type Handler struct {
	cfg Config
	mux *http.ServeMux
}

// NewHandler returns the webhooks' HTTP handler.
func NewHandler(cfg Config) *Handler {
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	h.mux.HandleFunc(PathMutate, h.serve(func(r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return h.mutate(r, false)
	}))
	h.mux.HandleFunc(PathMutateEnforced, h.serve(func(r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return h.mutate(r, true)
	}))
	h.mux.HandleFunc(PathValidateConfig, h.serve(h.validateConfig))
	h.mux.HandleFunc(PathValidateResize, h.serve(h.validateResize)) // resize.go
	h.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// MaxRequestBytes bounds the body of a request: an AdmissionReview holds
// the object and, on UPDATE, the old one, each at most the 1.5 MiB etcd
// stores by default (the API server's --max-request-bytes is 3 MiB), so
// 6 MiB leaves room for JSON escaping; a larger body is refused with 413
// before it is read, whoever sends it.
const MaxRequestBytes = 6 << 20

// serve decodes an AdmissionReview, answers it with review and writes it back.
func (h *Handler) serve(review func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
			return
		}
		var in admissionv1.AdmissionReview
		err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRequestBytes)).Decode(&in)
		// json.Decoder hands the reader's error back as it is.
		_, tooLarge := err.(*http.MaxBytesError)
		switch {
		case tooLarge:
			http.Error(w, fmt.Sprintf("request body over %d bytes: an AdmissionReview carries at most two objects of the API server's 1.5 MiB each", MaxRequestBytes), http.StatusRequestEntityTooLarge)
			return
		case err != nil || in.Request == nil:
			http.Error(w, fmt.Sprintf("want an admission.k8s.io/v1 AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		resp := review(in.Request)
		resp.UID = in.Request.UID
		out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: resp}
		if out.APIVersion == "" {
			out.APIVersion, out.Kind = "admission.k8s.io/v1", "AdmissionReview"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&out)
	}
}

// templatePaths is where each kind keeps the pod metadata and spec it
// creates pods from (a Pod: itself).
var templatePaths = map[string][]string{
	"Pod":                   nil,
	"ReplicationController": {"spec", "template"},
	"Deployment":            {"spec", "template"},
	"ReplicaSet":            {"spec", "template"},
	"StatefulSet":           {"spec", "template"},
	"DaemonSet":             {"spec", "template"},
	"Job":                   {"spec", "template"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template"},
}

// mutate stamps the requester's identity (or keeps a trusted one), and with
// enforce sets schedulerName.
//
// The user info the scheduler reads (podmeta.UserInfoKeys: ours, then
// YuniKorn's) is only vouched for when it passed this webhook: on an
// object that named our scheduler when it was written. So an UPDATE that
// moves an object to our scheduler (its schedulerName changed, or set here
// in a namespace labelled enforce after the object existed) is checked as
// a creation, whatever the old object carried; a trusted controller's
// object that did not name our scheduler (a pod copied from such a
// template, redirected here) keeps no user info; and YuniKorn's key, when
// it stands alone, is a claim checked like ours, and is otherwise made to
// agree with ours, so it is never the identity of an object of ours.
func (h *Handler) mutate(req *admissionv1.AdmissionRequest, enforce bool) *admissionv1.AdmissionResponse {
	logger := klog.Background().WithValues("kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name, "user", req.UserInfo.Username, "operation", req.Operation)
	base, ok := templatePaths[req.Kind.Kind]
	if !ok || req.SubResource != "" || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return allowed()
	}
	var obj map[string]any
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return denied(http.StatusBadRequest, fmt.Sprintf("%s: cannot decode the object: %v", req.Kind.Kind, err))
	}
	if resp := h.refuseFrozen(req, obj); resp != nil { // frozen.go
		return resp
	}
	// The old object, decoded once for the checks of an UPDATE below.
	var oldObj map[string]any
	if req.Operation == admissionv1.Update {
		_ = json.Unmarshal(req.OldObject.Raw, &oldObj)
	}
	tmpl := lookup(obj, base)
	if tmpl == nil {
		return allowed()
	}
	var patch []patchOp
	ptr := pointer(base)

	// The scheduler, in an enforced namespace.
	sched, _ := lookup(tmpl, []string{"spec"})["schedulerName"].(string)
	namedUs := sched == h.cfg.SchedulerName
	if enforce && sched != h.cfg.SchedulerName && (req.Operation == admissionv1.Create || req.Kind.Kind != "Pod") {
		if sched != "" && sched != "default-scheduler" {
			return denied(http.StatusForbidden, fmt.Sprintf("namespace %s is labelled %s=true: its pods are scheduled by %s, not %q (remove schedulerName or set it to %s)",
				req.Namespace, LabelEnforce, h.cfg.SchedulerName, sched, h.cfg.SchedulerName))
		}
		patch = append(patch, patchOp{Op: "add", Path: ptr + "/spec/schedulerName", Value: h.cfg.SchedulerName})
		sched = h.cfg.SchedulerName
	}
	if sched != h.cfg.SchedulerName {
		return allowed()
	}
	if resp := h.refuseNodeName(req, obj, oldObj, base); resp != nil { // noskip.go
		return resp
	}

	meta, _ := tmpl["metadata"].(map[string]any)
	annotations := map[string]string{}
	if a, ok := meta["annotations"].(map[string]any); ok {
		for k, v := range a {
			s, _ := v.(string)
			annotations[k] = s
		}
	}
	// The claim: ours, else YuniKorn's (the order the scheduler reads).
	key := podmeta.AnnotationUserInfo
	got, has := annotations[key]
	theirs, hasTheirs := annotations[podmeta.YuniKornUserInfo]
	if !has && hasTheirs {
		key, got, has = podmeta.YuniKornUserInfo, theirs, true
	}

	// created: the user info is checked as at creation. An UPDATE is one
	// when the old object did not name our scheduler (a switch, or a
	// namespace labelled enforce after it was written): nothing checked
	// what it carried. vouched: what the object carries passed this
	// webhook (its template named our scheduler when written).
	created, vouched := req.Operation == admissionv1.Create, namedUs
	var old string
	var hadOld bool
	if req.Operation == admissionv1.Update {
		oldTmpl := lookup(oldObj, base)
		oldSched, _ := lookup(oldTmpl, []string{"spec"})["schedulerName"].(string)
		vouched = oldSched == h.cfg.SchedulerName
		created = !vouched
		if vouched {
			if om, ok := lookup(oldTmpl, []string{"metadata"})["annotations"].(map[string]any); ok {
				old, hadOld = om[podmeta.AnnotationUserInfo].(string)
			}
		}
	}
	asCreated := ""
	if req.Operation == admissionv1.Update && created {
		asCreated = fmt.Sprintf("this update moves it to %s, so its user info is treated as at creation (nothing checked what it carried before): ", h.cfg.SchedulerName)
	}

	trusted := h.trusted(req.UserInfo)
	submitter := h.submitter(req.UserInfo.Username)
	stamp := h.stamp(req.UserInfo)
	var want string
	switch {
	case !created && hadOld:
		// The original submitter stays: restored if an apply dropped it,
		// refused if changed by anyone but a trusted requester.
		switch {
		case !has:
			want = old
		case got == old:
			want = old
		case trusted || submitter:
			want = got
		default:
			return denied(http.StatusForbidden, fmt.Sprintf("%s %s/%s: annotation %s is set by the userquota webhook at creation and cannot be changed (it is %s; the request sets %s); only trusted requesters may change it, not %q",
				req.Kind.Kind, req.Namespace, req.Name, key, old, got, req.UserInfo.Username))
		}
	case !created && !has:
		// An object from before the webhook: updating it does not make
		// the updater its submitter.
		return patchResponse(patch)
	case has && (submitter || trusted && vouched):
		want = got
	case trusted && has:
		// A controller's object from a template that did not name our
		// scheduler (redirected in a namespace labelled enforce after the
		// template was written), or its update moving one to us: nothing
		// checked the claim, and a controller is nobody's submitter. It
		// keeps no user info; the scheduler's requireUserInfo refuses the
		// pod, naming the webhook.
		delete(annotations, podmeta.AnnotationUserInfo)
		delete(annotations, podmeta.YuniKornUserInfo)
		logger.V(2).Info("Trusted requester's object did not name our scheduler; its unchecked user info is dropped", "userInfo", got)
		return patchResponse(append(patch, patchOp{Op: "add", Path: ptr + "/metadata/annotations", Value: annotations}))
	case has && !sameIdentity(got, stamp):
		return denied(http.StatusForbidden, fmt.Sprintf("%s %s/%s: %sannotation %s is set by the userquota webhook from who you are (%s); you may not set it to %s: remove it, or ask for %q to be made a trusted user or submitter",
			req.Kind.Kind, req.Namespace, objName(req, obj), asCreated, key, stamp, got, req.UserInfo.Username))
	case trusted:
		// A controller creating from a template without an annotation: its
		// own name is not a submitter; the scheduler's requireUserInfo
		// refuses the pod, naming the webhook.
		logger.V(2).Info("Trusted requester's object has no user info; not stamped")
		return patchResponse(patch)
	default:
		want = stamp
	}
	// Ours says want; YuniKorn's, when present, says the same (the
	// scheduler reads ours first; other readers see no other claim).
	changed := false
	for _, k := range podmeta.UserInfoKeys {
		if v, ok := annotations[k]; (ok || k == podmeta.AnnotationUserInfo) && v != want {
			annotations[k], changed = want, true
		}
	}
	if !changed {
		return patchResponse(patch)
	}
	if meta == nil {
		patch = append(patch, patchOp{Op: "add", Path: ptr + "/metadata", Value: map[string]any{"annotations": annotations}})
	} else {
		patch = append(patch, patchOp{Op: "add", Path: ptr + "/metadata/annotations", Value: annotations})
	}
	logger.V(4).Info("Stamping user info", "userInfo", want)
	return patchResponse(patch)
}

// stamp is the annotation for the requester: user name and the groups
// that count for quota, sorted.
func (h *Handler) stamp(u authenticationv1.UserInfo) string {
	groups := []string{}
	for _, g := range u.Groups {
		if h.cfg.QuotaGroups == nil || h.cfg.QuotaGroups.MatchString(g) {
			groups = append(groups, g)
		}
	}
	sort.Strings(groups)
	return podmeta.UserInfo{User: u.Username, Groups: groups}.String()
}

// trusted reports whether the requester may create objects carrying any
// annotation (TrustedUsers, TrustedGroups).
func (h *Handler) trusted(u authenticationv1.UserInfo) bool {
	for _, re := range h.cfg.TrustedUsers {
		if re.MatchString(u.Username) {
			return true
		}
	}
	for _, g := range u.Groups {
		for _, re := range h.cfg.TrustedGroups {
			if re.MatchString(g) {
				return true
			}
		}
	}
	return false
}

// submitter reports whether the user submits for others (Submitters).
func (h *Handler) submitter(user string) bool {
	for _, re := range h.cfg.Submitters {
		if re.MatchString(user) {
			return true
		}
	}
	return false
}

// sameIdentity reports whether an annotation names the same user and
// groups as the stamp (so a manifest that states its submitter correctly
// still applies).
func sameIdentity(annotation, stamp string) bool {
	var a, b podmeta.UserInfo
	if json.Unmarshal([]byte(annotation), &a) != nil || json.Unmarshal([]byte(stamp), &b) != nil {
		return false
	}
	sort.Strings(a.Groups)
	return a.User == b.User && strings.Join(a.Groups, "\n") == strings.Join(b.Groups, "\n")
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

func allowed() *admissionv1.AdmissionResponse { return &admissionv1.AdmissionResponse{Allowed: true} }

func denied(code int32, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: metav1.StatusReasonForbidden, Message: msg}}
}

func patchResponse(patch []patchOp) *admissionv1.AdmissionResponse {
	resp := allowed()
	if len(patch) == 0 {
		return resp
	}
	b, _ := json.Marshal(patch)
	pt := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = b, &pt
	return resp
}

// lookup walks maps along path; nil when a step is missing.
func lookup(obj map[string]any, path []string) map[string]any {
	cur := obj
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}

// pointer is the JSON pointer of path ("" for the root).
func pointer(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// objName names the object for messages: its name, or its generateName
// followed by "*".
func objName(req *admissionv1.AdmissionRequest, obj map[string]any) string {
	if req.Name != "" {
		return req.Name
	}
	m := lookup(obj, []string{"metadata"})
	if n, _ := m["generateName"].(string); n != "" {
		return n + "*"
	}
	return "(new)"
}
