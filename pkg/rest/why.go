package rest

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/userquota/userquota/pkg/rest/dao"
)

// Viewer is who reads a pod's explanation: the authenticated caller's
// name, and whether they may see everything (All: they have the
// cluster-wide right, get on the path, or the server authenticates
// nobody). A viewer without All sees only pods whose user is theirs, and
// of other users' pods only counts and amounts, never names.
type Viewer struct {
	User string
	All  bool
}

// WhyFunc explains the pod namespace/name to v. It returns ErrNoPod when
// there is no such pod, or v may not see it (it is not v's: the same
// answer, so that nothing tells the two apart), and a *NotOursError for a
// pod another scheduler schedules.
type WhyFunc func(namespace, name string, v Viewer) (*dao.PodExplanation, error)

// HeldFunc returns the page of the pods held in the leaf queue queue (a
// full path), in let-in order, from offset, at most limit.
type HeldFunc func(queue string, offset, limit int) dao.HeldPods

// ErrNoPod: no such pod, or not the viewer's (WhyFunc).
var ErrNoPod = errors.New("no such pod")

// NotOursError: the pod exists but another scheduler schedules it
// (WhyFunc).
type NotOursError struct {
	// SchedulerName is the pod's spec.schedulerName; Ours this
	// scheduler's.
	SchedulerName, Ours string
}

func (e *NotOursError) Error() string {
	return fmt.Sprintf("the pod is not scheduled by %s (its schedulerName is %q): no quota of ours holds it", e.Ours, e.SchedulerName)
}

// Paging of HeldPath.
const (
	defaultHeldLimit = 100
	maxHeldLimit     = 1000
)

// viewer is the caller of r as a Viewer: with authentication, the caller
// the authenticator put in the context, All when the authorizer allows
// them get on the request's path (the right every other path needs);
// without authentication everyone sees everything, as on every path.
func (s *server) viewer(r *http.Request) (Viewer, bool) {
	if s.opts.Auth == nil {
		return Viewer{All: true}, true
	}
	u, ok := request.UserFrom(r.Context())
	if !ok || u.GetName() == "" {
		return Viewer{}, false
	}
	v := Viewer{User: u.GetName()}
	decision, _, _ := s.opts.Auth.Authorizer.Authorize(r.Context(), authorizer.AttributesRecord{
		User: u, Verb: "get", Path: r.URL.Path, ResourceRequest: false,
	})
	v.All = decision == authorizer.DecisionAllow
	return v, true
}

// why serves WhyPath: one pod's explanation, to its owner (as /usage/me
// decides who the caller is) or to a caller with get on the path.
func (s *server) why(w http.ResponseWriter, r *http.Request) {
	if !s.partitionOK(w, r) {
		return
	}
	if s.opts.Why == nil {
		s.notFound(w, r)
		return
	}
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("bad namespace %.64q", ns), strings.Join(msgs, "; "))
		return
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("bad pod name %.64q", name), strings.Join(msgs, "; "))
		return
	}
	v, ok := s.viewer(r)
	if !ok {
		writeError(w, http.StatusUnauthorized, "unauthorized", "the request was not authenticated")
		return
	}
	e, err := s.opts.Why(ns, name, v)
	var notOurs *NotOursError
	switch {
	case errors.Is(err, ErrNoPod) && v.All:
		writeError(w, http.StatusNotFound, fmt.Sprintf("pod %s/%s not found", ns, name), "the scheduler's informer has no such pod")
	case errors.Is(err, ErrNoPod):
		// The same answer for a pod that does not exist and for
		// another user's: nothing tells them apart.
		writeError(w, http.StatusNotFound, fmt.Sprintf("no pod %s/%s of yours is known to this scheduler", ns, name),
			fmt.Sprintf("you (%s) see the explanation of your own pods only; get on this path shows any pod", v.User))
	case errors.As(err, &notOurs):
		writeError(w, http.StatusNotFound, fmt.Sprintf("pod %s/%s is not scheduled by %s", ns, name, notOurs.Ours), notOurs.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, "explaining the pod failed", err.Error())
	default:
		writeJSON(w, http.StatusOK, e)
	}
}

// held serves HeldPath: a page of a queue's held pods in let-in order.
func (s *server) held(w http.ResponseWriter, r *http.Request) {
	if !s.partitionOK(w, r) {
		return
	}
	if s.opts.Held == nil {
		s.notFound(w, r)
		return
	}
	queue := strings.ToLower(r.PathValue("queue"))
	if msg := badName(queue); msg != "" {
		writeError(w, http.StatusBadRequest, "bad queue name: "+msg, "")
		return
	}
	if queue != "root" && !strings.HasPrefix(queue, "root.") {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("bad queue name %.64q: want its full path, root.a.b", queue), "")
		return
	}
	offset, okOffset := queryInt(r, "offset", 0, 0, int(^uint(0)>>1))
	limit, okLimit := queryInt(r, "limit", defaultHeldLimit, 1, maxHeldLimit)
	if !okOffset || !okLimit {
		writeError(w, http.StatusBadRequest, "bad offset or limit",
			fmt.Sprintf("offset is 0 or more (default 0), limit 1 to %d (default %d)", maxHeldLimit, defaultHeldLimit))
		return
	}
	writeJSON(w, http.StatusOK, s.opts.Held(queue, offset, limit))
}

// queryInt reads the integer query parameter name within [lo, hi], def
// when absent; false when it is not such an integer.
func queryInt(r *http.Request, name string, def, lo, hi int) (int, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, false
	}
	return n, true
}
