// Package rest serves the quota usage over HTTP: YuniKorn's usage endpoints
// and JSON shape (/ws/v1/partition/{p}/usage/...), the caller's own usage
// (/ws/v1/partition/{p}/usage/me, which needs no RBAC), the queue tree in
// YuniKorn's queue shape with guaranteed, max and runtime shares
// (/ws/v1/partition/{p}/queues), the quota trees beside the queue config
// (/ws/v1/partition/{p}/trees, forest.go), the queue config in force (/ws/v1/config),
// a read-only HTML usage page (/), health and readiness (/healthz,
// /readyz), and the one POST, the resize check the admission webhook asks
// (/ws/v1/partition/{p}/check/resize, resize.go), and where a pod stands:
// one pod's explanation (/ws/v1/partition/{p}/why/{namespace}/{name},
// which its owner may read without RBAC) and a queue's held pods in
// let-in order (/ws/v1/partition/{p}/queue/{queue}/held; why.go).
// docs/api.md describes every endpoint.
//
// The package reads what it serves through small interfaces (a Usage
// source, which *ugm.Manager implements, a config getter and a leader
// check), so it holds no lock and no state of its own: every handler takes
// one snapshot (a copy made under ugm's read lock), then encodes it with no
// lock held. Scheduling waits at most for that copy.
package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/rest/dao"
	"github.com/userquota/userquota/pkg/shares"
	"github.com/userquota/userquota/pkg/ugm"
)

// Usage is where the API reads usage: *ugm.Manager implements it. Every
// method returns a copy that shares nothing with the source.
type Usage interface {
	Users() []ugm.UserUsage
	User(name string) (ugm.UserUsage, bool)
	Groups() []ugm.GroupUsage
	Group(name string) (ugm.GroupUsage, bool)
	Queues() *ugm.QueueUsage
}

// LeaderFunc reports whether this replica is the leading scheduler, which
// alone has the live usage, and when not, why (shown to clients).
type LeaderFunc func() (leading bool, why string)

// Options configure the handler. Usage is required.
type Options struct {
	// Partition is the partition the scheduler enforces; the only one the
	// usage endpoints know.
	Partition string
	// Usage is read by every usage endpoint and the page.
	Usage Usage
	// Config returns the queue config in force (nil: none, no limits).
	// A nil func means the same.
	Config func() *queueconfig.Config
	// Shares returns the share table in force (elastic queue quotas:
	// (*ugm.Manager).Shares). A nil func, or a nil table (none computed
	// yet), means no shares: the queues endpoint and the page then show
	// no runtime share, and percentages of guaranteed and max unresolved.
	Shares func() *shares.Table
	// Pending returns the requests of the pods waiting to be scheduled,
	// summed by the full path of the leaf queue each is placed in (a
	// dynamic queue that does not exist yet included). The handler only
	// reads the map, possibly after Pending returned; the caller must not
	// change it afterwards. A nil func means not available: the queues
	// endpoint then leaves pendingResource out.
	Pending func() map[string]resources.Vector
	// Leader is the leader check; nil means always leading (one replica).
	Leader LeaderFunc
	// Resize answers the resize check (dao.ResizeCheckPath, resize.go); nil: the
	// path answers 404.
	Resize ResizeCheckFunc
	// Why explains one pod (dao.WhyPath, why.go); nil: the path answers
	// 404.
	Why WhyFunc
	// Held lists a queue's held pods in let-in order (dao.HeldPath); nil:
	// the path answers 404.
	Held HeldFunc
	// HeldCounts returns how many pods are held in each leaf queue, for
	// the page's links to them; nil: the page links none.
	HeldCounts func() map[string]int
	// Forest returns the quota trees in force with each node's quota and
	// usage ((*ugm.Manager).Forest; forest.go); nil: none.
	Forest func() []ugm.ForestTree
	// Accounting reports resource-seconds over a window
	// (dao.AccountingPath, accounting.go); nil: the path answers 404.
	Accounting Accounting
	// Auth protects every path except /healthz and /readyz (which kubelet
	// probes without credentials): all of them authenticated, all but the
	// caller's own usage (/usage/me) authorized. nil means no protection
	// (and no caller: /usage/me then answers 400).
	Auth *Auth
}

// NewHandler returns the API's handler. It panics if o.Usage is nil (a
// programming error).
func NewHandler(o Options) http.Handler {
	if o.Usage == nil {
		panic("rest.NewHandler: Options.Usage is nil")
	}
	s := &server{opts: o}
	api := http.NewServeMux()
	api.HandleFunc("/ws/v1/partition/{partition}/usage/{rest...}", s.leaderOnly(s.usage))
	api.HandleFunc("/ws/v1/partition/{partition}/usage", s.leaderOnly(s.usage))
	api.HandleFunc("/ws/v1/partition/{partition}/queues", s.leaderOnly(s.queues))
	api.HandleFunc(TreesPattern, s.leaderOnly(s.trees))
	api.HandleFunc(dao.HeldPath, s.leaderOnly(s.held))
	api.HandleFunc(dao.AccountingPath, s.leaderOnly(s.accountingReport))
	api.HandleFunc("/ws/v1/config", s.config)
	api.HandleFunc("/{$}", s.leaderOnly(s.page))
	api.HandleFunc("/", s.notFound)
	// The caller's own usage is routed by the same mux that routes
	// everything else past authentication, so the path that skips the
	// SubjectAccessReview is exactly the path its handler serves.
	var whole http.Handler = api
	var self http.Handler = s.leaderOnly(s.self)
	// A pod's explanation is authenticated here and authorized by its
	// handler: its owner needs no RBAC, anyone else get on the path.
	var why http.Handler = s.leaderOnly(s.why)
	if o.Auth != nil {
		whole = o.Auth.authenticate(o.Auth.authorize(api))
		self = o.Auth.authenticate(self)
		why = o.Auth.authenticate(why)
	}

	root := http.NewServeMux()
	root.HandleFunc("/healthz", s.healthz)
	root.HandleFunc("/readyz", s.readyz)
	root.Handle(SelfPattern, self)
	root.Handle(dao.WhyPath, why)
	root.Handle("/", whole)

	// The resize check is the one POST: authenticated and authorized as
	// every other path, leader only.
	var resize http.Handler = s.leaderOnly(s.resize)
	if o.Auth != nil {
		resize = o.Auth.authenticate(o.Auth.authorize(resize))
	}
	top := http.NewServeMux()
	top.Handle("POST "+dao.ResizeCheckPath, resize)
	top.Handle("/", getOnly(root))
	return top
}

type server struct {
	opts Options
}

// Error is the JSON body of every error answer, in YuniKorn's shape
// (dao.YAPIError).
type Error struct {
	StatusCode  int    `json:"status_code"`
	Message     string `json:"message"`
	Description string `json:"description"`
}

// writeError answers with status and a JSON Error body.
func writeError(w http.ResponseWriter, status int, message, description string) {
	if description == "" {
		description = message
	}
	writeJSON(w, status, Error{StatusCode: status, Message: message, Description: description})
}

// writeJSON answers with v as JSON. Usage names users and changes all the
// time: nothing may cache it.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only a programming error (an unmarshalable type) gets here.
		status = http.StatusInternalServerError
		body, _ = json.Marshal(Error{StatusCode: status, Message: "encoding the answer failed", Description: err.Error()})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// getOnly answers 405 to anything but GET and HEAD: the API is read-only.
func getOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed", "the usage API is read-only: use GET")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *server) leading() (bool, string) {
	if s.opts.Leader == nil {
		return true, ""
	}
	return s.opts.Leader()
}

// leaderOnly answers 503 on a replica that is not leading: its usage is not
// the live one. ?local=true asks any replica for its own state (what a
// follower would start from, were it to lead), said by HeaderLeader.
func (s *server) leaderOnly(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		local := false
		if v := r.URL.Query().Get("local"); v != "" {
			var err error
			if local, err = strconv.ParseBool(v); err != nil {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("bad query parameter local=%.64q", v), "local is true or false: true answers from this replica even when it is not the leader")
				return
			}
		}
		ok, why := s.leading()
		w.Header().Set(dao.HeaderLeader, strconv.FormatBool(ok))
		if !ok && !local {
			w.Header().Set("Retry-After", "5")
			writeError(w, http.StatusServiceUnavailable, "not the leader",
				"this scheduler replica is not the leader; only the leader has the live usage: "+why)
			return
		}
		next(w, r)
	}
}

func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintln(w, "ok")
}

// readyz is ready only on the leader, so a Service sends usage requests to
// the replica that has the live state.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	if ok, why := s.leading(); !ok {
		writeError(w, http.StatusServiceUnavailable, "not the leader", "this scheduler replica is not the leader: "+why)
		return
	}
	s.healthz(w, r)
}

func (s *server) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path, "see docs/api.md for the endpoints")
}

// usage serves /ws/v1/partition/{partition}/usage/{users|groups|queues}
// and /usage/{user|group}/{name}.
func (s *server) usage(w http.ResponseWriter, r *http.Request) {
	if !s.partitionOK(w, r) {
		return
	}
	// Split the escaped path, so that a name holding an escaped "/" (%2F,
	// as in OIDC user names) stays one segment.
	// The mux matched /ws/v1/partition/{partition}/usage[/...], so the
	// escaped path has at least those 6 elements ("" first).
	segs := strings.Split(r.URL.EscapedPath(), "/")[6:]
	if len(segs) > 2 {
		writeError(w, http.StatusBadRequest, "too many path segments after /usage/",
			`escape a "/" in a name as %2F`)
		return
	}
	var kind, name string
	var err error
	if len(segs) > 0 {
		kind, err = url.PathUnescape(segs[0])
	}
	hasName := len(segs) == 2
	if err == nil && hasName {
		name, err = url.PathUnescape(segs[1])
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad escape in the path: "+err.Error(), "")
		return
	}
	switch kind {
	case "users", "groups", "queues":
		if hasName {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("/usage/%s takes no name", kind), "")
			return
		}
	case "user", "group":
		if !hasName {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("/usage/%s needs a name: /usage/%s/NAME", kind, kind), "")
			return
		}
		if msg := badName(name); msg != "" {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("bad %s name: %s", kind, msg), "")
			return
		}
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown usage kind %q", kind),
			"want users, user/NAME, groups, group/NAME, queues or me")
		return
	}
	u := s.opts.Usage
	switch kind {
	case "users":
		writeJSON(w, http.StatusOK, u.Users())
	case "groups":
		writeJSON(w, http.StatusOK, u.Groups())
	case "queues":
		writeJSON(w, http.StatusOK, u.Queues())
	case "user":
		if uu, ok := u.User(name); ok {
			writeJSON(w, http.StatusOK, uu)
		} else {
			writeError(w, http.StatusNotFound, fmt.Sprintf("user %q not found", name), "the user has no running pods and no gang reservation in this partition")
		}
	case "group":
		if gu, ok := u.Group(name); ok {
			writeJSON(w, http.StatusOK, gu)
		} else {
			writeError(w, http.StatusNotFound, fmt.Sprintf("group %q not found", name), "the group has no running applications and no gang reservation in this partition")
		}
	}
}

// partitionOK checks the {partition} of the path: it answers 400 for a bad
// name and 404 for a partition other than the one this scheduler enforces,
// and returns false; true when the request may go on.
func (s *server) partitionOK(w http.ResponseWriter, r *http.Request) bool {
	partition := r.PathValue("partition")
	if msg := badName(partition); msg != "" {
		writeError(w, http.StatusBadRequest, "bad partition name: "+msg, "")
		return false
	}
	if partition != s.opts.Partition {
		writeError(w, http.StatusNotFound, fmt.Sprintf("partition %q not found", partition),
			fmt.Sprintf("this scheduler enforces partition %q", s.opts.Partition))
		return false
	}
	return true
}

// maxNameLen bounds names in paths; Kubernetes user names have no limit,
// but nothing real comes near this.
const maxNameLen = 1024

// badName says what is wrong with a partition, user or group name taken
// from the path ("" when nothing). Names come from pod annotations, so
// anything printable is allowed (a "/" escaped as %2F in the path).
func badName(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > maxNameLen:
		return fmt.Sprintf("longer than %d bytes", maxNameLen)
	case strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) || r == unicode.ReplacementChar }) >= 0:
		return "contains a control or invalid character"
	}
	return ""
}
