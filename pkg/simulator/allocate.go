package simulator

import (
	"errors"
	"fmt"
	"strings"

	"github.com/userquota/userquota/pkg/ledger"
	"github.com/userquota/userquota/pkg/resources"
	"github.com/userquota/userquota/pkg/ugm"
)

// Defaults the contract gives for fields an allocate line leaves out; they
// are the scheduler's defaults for a pod without user info or namespace.
const (
	defaultUser      = "nobody"
	defaultNamespace = "default"
)

// onePod is what every pod adds besides its requests: the scheduler
// charges `pods: 1`, so a pods limit caps the number of pods.
var onePod = resources.FromMap(map[string]int64{resources.Pods: 1})

// allocate places a pod and charges it through the ledger, as the plugin's
// PreFilter and Reserve do.
func (s *sim) allocate(n int, l *traceLine) any {
	req, err := allocateRequest(l)
	if err != nil {
		return lineError{Line: n, Error: "allocate: " + err.Error()}
	}
	// A live pod is reported as such whatever its queue now resolves to,
	// as the ledger reports it before asking ugm anything.
	if _, live := s.ledger.Get(l.Pod); live {
		return podError{Pod: l.Pod, Error: "already allocated"}
	}
	placed, err := s.place(&req, l)
	if err == nil {
		req.Queue, req.Create = placed.Queue, placed.Create
		err = s.ledger.Allocate(l.Pod, req)
	}
	if err == nil {
		out := allowed{Pod: l.Pod, Allowed: true}
		// The contract names the queue only when placement chose it: the
		// line names none, or rules decided (they may override the name).
		if l.Queue == "" || s.policy.HasRules() {
			out.Queue = placed.Queue
		}
		return out
	}
	if errors.Is(err, ledger.ErrAlreadyAllocated) {
		return podError{Pod: l.Pod, Error: "already allocated"}
	}
	// Refusals, queue errors, application conflicts and anything else ugm
	// turns down (a usage that would overflow): the pod is not admitted.
	out := refused{Pod: l.Pod, Reason: err.Error()}
	var r *ugm.Refusal
	if errors.As(err, &r) {
		out.Who, out.Name, out.Queue, out.Limit = r.Who, r.Name, r.Queue, r.Limit
		if r.Limit == ugm.LimitResources {
			out.Resource = r.Resource
		}
	}
	return out
}

// allocateRequest builds the ugm request an allocate line stands for, with
// the contract's defaults, or says which field is wrong.
func allocateRequest(l *traceLine) (ugm.Request, error) {
	if l.Pod == "" {
		return ugm.Request{}, errors.New(`missing "pod"`)
	}
	if l.Resources == nil {
		return ugm.Request{}, errors.New(`missing "resources" (Kubernetes quantities, e.g. {"cpu":"1","memory":"1Gi"})`)
	}
	vec, err := resources.Parse(l.Resources)
	if err != nil {
		return ugm.Request{}, fmt.Errorf("resources: %w", err)
	}
	if err := vec.Add(onePod); err != nil {
		return ugm.Request{}, fmt.Errorf("resources: %w", err)
	}
	user := defaultUser
	if l.User != nil {
		// The plugin refuses user info naming no user rather than guess.
		if user = *l.User; strings.TrimSpace(user) == "" {
			return ugm.Request{}, errors.New(`"user" is empty (leave it out for the default user)`)
		}
	}
	req := ugm.Request{
		User:      user,
		Groups:    l.Groups,
		App:       ugm.AppKey{Namespace: l.Namespace, ID: l.App},
		Resources: vec,
	}
	if req.App.Namespace == "" {
		req.App.Namespace = defaultNamespace
	}
	if req.App.ID == "" {
		req.App.ID = l.Pod
	}
	return req, nil
}
