package simulator

import (
	"errors"

	"github.com/userquota/userquota/pkg/placement"
	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/ugm"
)

// defaultQueue is the queue of an allocate line that names none when the
// config has no placement rules: the scheduler plugin's defaultQueue
// default.
const defaultQueue = "root.default"

// place finds the queue of an allocate line the way the scheduler plugin
// places a pod: both call pkg/placement, with the queue the line names as
// the provided queue, its namespace and labels for tag rules, and the
// queues ugm holds outside the config (dynamic ones) as existing. A named
// queue that does not resolve is refused with a *ugm.QueueError, as the
// plugin refuses the pod.
func (s *sim) place(req *ugm.Request, l *traceLine) (placement.Result, error) {
	in := &placement.Input{
		User:      req.User,
		Groups:    req.Groups,
		Namespace: req.App.Namespace,
		Labels:    l.Labels,
		Queue:     l.Queue,
	}
	placed, err := s.policy.Place(in, s.ledger.Manager(), placement.Options{})
	var re *queueconfig.ResolveError
	if errors.As(err, &re) {
		return placed, &ugm.QueueError{Queue: re.Name, Reason: re.Reason()}
	}
	return placed, err
}
