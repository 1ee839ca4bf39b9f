// Package gang recognises a pod's gang, an application that needs a
// minimum of its pods to run together, in the three forms users write
// today, and computes the gang's minimum: what quota must take at once or
// not at all (docs/gangs.md).
//
//   - the Kubernetes Workload API (scheduling.k8s.io/v1alpha1): a pod's
//     spec.workloadRef names a Workload whose pod group has a gang policy;
//   - scheduler-plugins coscheduling: the pod label
//     scheduling.x-k8s.io/pod-group names a PodGroup (minMember,
//     minResources, scheduleTimeoutSeconds);
//   - YuniKorn task groups: the pod annotations task-group-name,
//     task-groups and schedulingPolicyParameters.
//
// It reads objects it is given and decides nothing about limits; the
// scheduler plugin looks the objects up and asks ugm.
package gang

import (
	"fmt"
	"time"

	"github.com/userquota/userquota/pkg/resources"
)

// Form is how a gang is written.
type Form string

// Forms of gangs.
const (
	FormWorkload   Form = "Workload"
	FormPodGroup   Form = "PodGroup"
	FormTaskGroups Form = "TaskGroups"
)

// ID identifies one gang within a namespace: the Workload (and its pod
// group and replica key), the PodGroup, or the YuniKorn application.
type ID struct {
	Namespace string
	Form      Form
	Name      string
	// PodGroup and Replica: a Workload's pod group and
	// podGroupReplicaKey (the gang policy applies to each replica).
	PodGroup string
	Replica  string
}

// String names the gang for messages and keys: "Workload ns/name/group",
// with "/replica" when the replica key is set.
func (id ID) String() string {
	s := fmt.Sprintf("%s %s/%s", id.Form, id.Namespace, id.Name)
	if id.PodGroup != "" {
		s += "/" + id.PodGroup
	}
	if id.Replica != "" {
		s += "/" + id.Replica
	}
	return s
}

// Style is what happens when a gang's reservation times out.
type Style string

// Styles, YuniKorn's names.
const (
	// Soft: the reservation is released and the gang's pods go on one by
	// one as ordinary pods.
	Soft Style = "Soft"
	// Hard: the reservation is released and the gang fails: its pods stay
	// held with a condition that says so.
	Hard Style = "Hard"
)

// Phase is where a gang stands (docs/design.md, "Gangs"): the scheduler
// plugin's and the simulator's one model.
type Phase int

const (
	// Waiting: no reservation; its pods are held until its whole minimum
	// fits.
	Waiting Phase = iota
	// Reserved: its minimum is reserved (ugm.ReserveGang); its pods draw
	// on it until the timeout.
	Reserved
	// Settled: the reservation was used or timed out Soft; its pods are
	// ordinary pods.
	Settled
	// Failed: the reservation timed out Hard before its minimum was
	// drawn; its pods not admitted stay held.
	Failed
)

// DefaultTimeout is how long a reservation waits for its members when the
// form names no timeout: YuniKorn's placeholder timeout, 15 minutes. The
// Workload API has no timeout field; its gangs get this one too.
const DefaultTimeout = 15 * time.Minute

// Min is a gang's minimum: reserved all at once or not at all.
type Min struct {
	// Members is how many pods the minimum is for.
	Members int32
	// Resources is the whole minimum in base units, pods included.
	Resources resources.Vector
	Timeout   time.Duration
	Style     Style
}

// String is for held reasons: "4 pods (cpu=8,pods=4)", or only the
// resources ("cpu=8") for a minimum that counts no pods (Members 0: the
// simulator's gang line whose "min" names no "pods").
func (m Min) String() string {
	if m.Members == 0 {
		return m.Resources.String()
	}
	return fmt.Sprintf("%d pods (%s)", m.Members, m.Resources)
}

// Error is a gang that cannot be read: the annotation or object it names
// is malformed or missing. It changes no usage; the pod is held with it.
type Error struct {
	Gang ID
	// What names the annotation, label or object ("annotation
	// yunikorn.apache.org/task-groups", "Workload ns/w").
	What   string
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("gang %s: %s: %s", e.Gang, e.What, e.Reason)
}
