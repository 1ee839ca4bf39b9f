package simulator

import (
	"errors"

	"github.com/userquota/userquota/pkg/queueconfig"
	"github.com/userquota/userquota/pkg/ugm"
)

// resolveQueue turns the queue an allocate line names into a full path the
// way the scheduler plugin does for a pod's queue label: both call
// queueconfig.ResolveQueue. An unknown or ambiguous name is refused with a
// *ugm.QueueError, as the plugin refuses the pod.
func resolveQueue(name string, p *queueconfig.Partition) (string, error) {
	path, err := queueconfig.ResolveQueue(p, name)
	var re *queueconfig.ResolveError
	if errors.As(err, &re) {
		return "", &ugm.QueueError{Queue: re.Name, Reason: re.Reason()}
	}
	return path, err
}
