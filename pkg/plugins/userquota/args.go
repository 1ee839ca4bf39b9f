package userquota

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/userquota/userquota/pkg/queueconfig"
)

// Args are the UserQuota plugin's arguments (pluginConfig[].args in the
// KubeSchedulerConfiguration). Unset fields take the defaults below.
type Args struct {
	// ConfigMapNamespace, ConfigMapName and ConfigMapKey locate the YuniKorn
	// queue config. Defaults: userquota-system, userquota-config, queues.yaml.
	ConfigMapNamespace string `json:"configMapNamespace,omitempty"`
	ConfigMapName      string `json:"configMapName,omitempty"`
	ConfigMapKey       string `json:"configMapKey,omitempty"`
	// Partition is the config partition this scheduler enforces. Default: default.
	Partition string `json:"partition,omitempty"`
	// DefaultQueue is the queue of a pod that names none. Default: root.default.
	DefaultQueue string `json:"defaultQueue,omitempty"`
	// DefaultUser is the user of a pod without user info. Default: nobody.
	DefaultUser string `json:"defaultUser,omitempty"`
	// ReleaseOnTerminating releases a pod's usage when it starts terminating
	// instead of when it is gone. Default: false (a terminating pod still
	// holds its node's resources).
	ReleaseOnTerminating bool `json:"releaseOnTerminating,omitempty"`
	// RESTAddress is the listen address of the usage REST API. Default:
	// ":9089"; an explicit empty string disables it.
	RESTAddress *string `json:"restAddress,omitempty"`
	// RESTAuth protects the REST API: HTTPS, and every request but
	// /healthz and /readyz authenticated (TokenReview) and authorized
	// (SubjectAccessReview, verb get on the path) by the API server. nil
	// means true (SetDefaults leaves it nil; see RESTAuthEnabled); false
	// serves plain HTTP to anyone who reaches the address, for a local
	// cluster on loopback.
	RESTAuth *bool `json:"restAuth,omitempty"`
	// RESTCertFile and RESTKeyFile are the REST API's serving certificate
	// and key (PEM), reloaded when the files change. Without them (and with
	// restAuth) a self-signed certificate is made at the first connection.
	RESTCertFile string `json:"restCertFile,omitempty"`
	RESTKeyFile  string `json:"restKeyFile,omitempty"`
	// LeaderElectionLease is the "namespace/name" of the Lease that
	// kube-scheduler's leader election holds (its leaderElection
	// resourceNamespace and resourceName): only the replica holding it has
	// the live usage and serves it. nil means
	// DefaultLeaderElectionLease (see LeaderLease); "" means no leader
	// election: this replica always serves.
	LeaderElectionLease *string `json:"leaderElectionLease,omitempty"`
	// PerUserMetrics adds per-user and per-group usage gauges to /metrics
	// (one series per user, queue and resource). Default: false.
	PerUserMetrics bool `json:"perUserMetrics,omitempty"`
	// PerUserAccounting keeps the resource-seconds of each user in each
	// leaf queue (docs/accounting.md): a counter series per user, queue,
	// resource and share on /metrics, and reports by user. Queues and
	// groups are always accounted. Default: false.
	PerUserAccounting bool `json:"perUserAccounting,omitempty"`
	// RequireUserInfo refuses a new pod without the user-info annotation
	// (ours or YuniKorn's) instead of running it as DefaultUser: with the
	// admission webhook installed (docs/security.md) every pod it admits
	// carries one, so a pod without it slipped past the webhook. Pods
	// already running are charged as before. Default: false; the manifests
	// set it.
	RequireUserInfo bool `json:"requireUserInfo,omitempty"`
	// StarvationWait is how long a held pod waits before the room it
	// needs is kept for it: pods behind it on the limit that holds it are
	// not let in until it is (docs/design.md, "Hold and let in"). 0 turns
	// it off. A duration such as 90s or 2m. Default: 2m.
	StarvationWait string `json:"starvationWait,omitempty"`
	// StartUpWait is how long, at most, PreEnqueue waits at start-up for
	// the running pods to be accounted and the pods already waiting to be
	// decided (docs/design.md, "Hold and let in"), counted once from the
	// first pod it sees. While it waits the scheduling queue waits with
	// it. A pod seen after it is held until then (kind Starting), as with
	// 0, which turns the wait off: each such pod then stays in the
	// scheduling queue's map of unschedulable pods, whose size every
	// binding's walk pays for as long as the scheduler runs. A duration
	// such as 10s or 1m, at most 10m. Default: 10s.
	StartUpWait string `json:"startUpWait,omitempty"`
	// StatusQPS and StatusBurst rate-limit the client that writes held
	// pods' conditions and events; the scheduler's own client (bindings)
	// is never used for them. Defaults: 20 and 50.
	StatusQPS   float32 `json:"statusQPS,omitempty"`
	StatusBurst int     `json:"statusBurst,omitempty"`
	// StatusBusyQPS is how many held pods' statuses are written a second,
	// at most, while this scheduler binds pods (one reserved within the
	// last second): the writes give way to bindings, which the same API
	// server serves, and resume at statusQPS when binding stops. A hold's
	// first write is followed by its event. At or above statusQPS the
	// writes never give way. At least 0.01. Default: 1.
	StatusBusyQPS float32 `json:"statusBusyQPS,omitempty"`
	// IgnoreGangs decides each pod of a gang on its own, as if it had no
	// gang (docs/gangs.md): a gang may then be admitted in part. Default:
	// false.
	IgnoreGangs bool `json:"ignoreGangs,omitempty"`
}

// Defaults of Args.
const (
	DefaultConfigMapNamespace  = "userquota-system"
	DefaultConfigMapName       = "userquota-config"
	DefaultConfigMapKey        = "queues.yaml"
	DefaultPartition           = queueconfig.DefaultPartition
	DefaultQueue               = "root.default"
	DefaultUser                = "nobody"
	DefaultRESTAddress         = ":9089"
	DefaultLeaderElectionLease = "userquota-system/userquota-scheduler"
	DefaultStarvationWait      = "2m" // hold.DefaultStarvation
	DefaultStartUpWait         = "10s"
	// maxStarvationWait bounds starvationWait: a longer wait is a typo.
	maxStarvationWait = 24 * time.Hour
	// maxStartUpWait bounds startUpWait: the scheduling queue waits too.
	maxStartUpWait = 10 * time.Minute
	// minStatusBusyQPS bounds statusBusyQPS from below: held pods are
	// still explained while a scheduler binds without pause.
	minStatusBusyQPS = 0.01
)

// Starvation is starvationWait as a duration (0 when it does not parse:
// Validate refuses that).
func (a *Args) Starvation() time.Duration {
	w, _ := time.ParseDuration(a.StarvationWait)
	return w
}

// StartUpHold is startUpWait as a duration (0 when it does not parse:
// Validate refuses that).
func (a *Args) StartUpHold() time.Duration {
	w, _ := time.ParseDuration(a.StartUpWait)
	return w
}

// RESTAuthEnabled reports whether the REST API authenticates and
// authorizes requests (restAuth, default true).
func (a *Args) RESTAuthEnabled() bool { return a.RESTAuth == nil || *a.RESTAuth }

// LeaderLease returns the namespace and name of the leader-election Lease
// (leaderElectionLease with its default); ok is false when there is none.
func (a *Args) LeaderLease() (namespace, name string, ok bool) {
	lease := DefaultLeaderElectionLease
	if a.LeaderElectionLease != nil {
		lease = *a.LeaderElectionLease
	}
	namespace, name, ok = strings.Cut(lease, "/")
	return namespace, name, ok
}

// SetDefaults fills every unset field.
func (a *Args) SetDefaults() {
	set := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	set(&a.ConfigMapNamespace, DefaultConfigMapNamespace)
	set(&a.ConfigMapName, DefaultConfigMapName)
	set(&a.ConfigMapKey, DefaultConfigMapKey)
	set(&a.Partition, DefaultPartition)
	set(&a.DefaultQueue, DefaultQueue)
	set(&a.DefaultUser, DefaultUser)
	if a.RESTAddress == nil {
		addr := DefaultRESTAddress
		a.RESTAddress = &addr
	}
	if a.StarvationWait == "" {
		a.StarvationWait = DefaultStarvationWait
	}
	if a.StartUpWait == "" {
		a.StartUpWait = DefaultStartUpWait
	}
	if a.StatusQPS == 0 {
		a.StatusQPS = DefaultStatusQPS
	}
	if a.StatusBurst == 0 {
		a.StatusBurst = DefaultStatusBurst
	}
	if a.StatusBusyQPS == 0 {
		a.StatusBusyQPS = DefaultStatusBusyQPS
	}
}

// Validate reports every invalid field, each named by its path.
func (a *Args) Validate() error {
	var errs field.ErrorList
	root := field.NewPath("args")
	for _, msg := range validation.IsDNS1123Label(a.ConfigMapNamespace) {
		errs = append(errs, field.Invalid(root.Child("configMapNamespace"), a.ConfigMapNamespace, msg))
	}
	for _, msg := range validation.IsDNS1123Subdomain(a.ConfigMapName) {
		errs = append(errs, field.Invalid(root.Child("configMapName"), a.ConfigMapName, msg))
	}
	for _, msg := range validation.IsConfigMapKey(a.ConfigMapKey) {
		errs = append(errs, field.Invalid(root.Child("configMapKey"), a.ConfigMapKey, msg))
	}
	if strings.TrimSpace(a.Partition) == "" {
		errs = append(errs, field.Required(root.Child("partition"), ""))
	}
	if a.DefaultQueue != "root" && !strings.HasPrefix(a.DefaultQueue, "root.") || strings.Contains(a.DefaultQueue, "..") || strings.HasSuffix(a.DefaultQueue, ".") {
		errs = append(errs, field.Invalid(root.Child("defaultQueue"), a.DefaultQueue, "must be a full queue path such as root.default"))
	}
	if strings.TrimSpace(a.DefaultUser) == "" {
		errs = append(errs, field.Required(root.Child("defaultUser"), ""))
	}
	if a.RESTAddress != nil && *a.RESTAddress != "" {
		if _, port, err := net.SplitHostPort(*a.RESTAddress); err != nil {
			errs = append(errs, field.Invalid(root.Child("restAddress"), *a.RESTAddress, err.Error()))
		} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			errs = append(errs, field.Invalid(root.Child("restAddress"), *a.RESTAddress, "port must be a number from 0 to 65535"))
		}
	}
	if (a.RESTCertFile == "") != (a.RESTKeyFile == "") {
		errs = append(errs, field.Invalid(root.Child("restCertFile"), a.RESTCertFile, "restCertFile and restKeyFile go together: give both or neither"))
	}
	if a.RESTCertFile != "" && !a.RESTAuthEnabled() {
		errs = append(errs, field.Invalid(root.Child("restCertFile"), a.RESTCertFile, "HTTPS is served only with restAuth: true"))
	}
	if a.LeaderElectionLease != nil && *a.LeaderElectionLease != "" {
		p := root.Child("leaderElectionLease")
		ns, name, ok := strings.Cut(*a.LeaderElectionLease, "/")
		if !ok {
			errs = append(errs, field.Invalid(p, *a.LeaderElectionLease, `must be "namespace/name", or "" for no leader election`))
		} else {
			for _, msg := range validation.IsDNS1123Label(ns) {
				errs = append(errs, field.Invalid(p, *a.LeaderElectionLease, "namespace: "+msg))
			}
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(p, *a.LeaderElectionLease, "name: "+msg))
			}
		}
	}
	if !durationUpTo(a.StarvationWait, maxStarvationWait) {
		errs = append(errs, field.Invalid(root.Child("starvationWait"), a.StarvationWait, "must be a duration from 0 (off) to 24h, such as 90s or 2m"))
	}
	if !durationUpTo(a.StartUpWait, maxStartUpWait) {
		errs = append(errs, field.Invalid(root.Child("startUpWait"), a.StartUpWait, "must be a duration from 0 (off) to 10m, such as 10s or 1m"))
	}
	if a.StatusQPS < 0 {
		errs = append(errs, field.Invalid(root.Child("statusQPS"), a.StatusQPS, "must not be negative"))
	}
	if a.StatusBurst < 0 {
		errs = append(errs, field.Invalid(root.Child("statusBurst"), a.StatusBurst, "must not be negative"))
	}
	if a.StatusBusyQPS < minStatusBusyQPS {
		errs = append(errs, field.Invalid(root.Child("statusBusyQPS"), a.StatusBusyQPS, "must be at least 0.01 (a write every 100s), so that held pods are explained while pods bind"))
	}
	return errs.ToAggregate()
}

// durationUpTo reports whether s is unset or a duration from 0 to max.
func durationUpTo(s string, max time.Duration) bool {
	w, err := time.ParseDuration(s)
	return s == "" || err == nil && w >= 0 && w <= max
}

// decodeArgs reads the plugin's args strictly (an unknown field is an
// error naming it), applies defaults and validates. The scheduler hands
// out-of-tree plugin args over as raw JSON or YAML (*runtime.Unknown).
func decodeArgs(obj runtime.Object) (Args, error) {
	var a Args
	switch o := obj.(type) {
	case nil:
	case *Args:
		a = *o
	case *runtime.Unknown:
		if len(bytes.TrimSpace(o.Raw)) > 0 {
			raw := o.Raw
			if o.ContentType == runtime.ContentTypeYAML {
				j, err := yaml.YAMLToJSON(raw)
				if err != nil {
					return a, fmt.Errorf("%s args: %w", Name, err)
				}
				raw = j
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&a); err != nil {
				return a, fmt.Errorf("%s args: %w", Name, err)
			}
		}
	default:
		return a, fmt.Errorf("%s args: want *runtime.Unknown, got %T", Name, obj)
	}
	a.SetDefaults()
	if err := a.Validate(); err != nil {
		return a, fmt.Errorf("%s args: %w", Name, err)
	}
	return a, nil
}

// GetObjectKind and DeepCopyObject make *Args a runtime.Object, so tests and
// embedders can pass typed args to New directly.
func (a *Args) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (a *Args) DeepCopyObject() runtime.Object {
	c := *a
	if a.RESTAddress != nil {
		addr := *a.RESTAddress
		c.RESTAddress = &addr
	}
	if a.RESTAuth != nil {
		auth := *a.RESTAuth
		c.RESTAuth = &auth
	}
	if a.LeaderElectionLease != nil {
		lease := *a.LeaderElectionLease
		c.LeaderElectionLease = &lease
	}
	return &c
}
