package dao

// ResizeCheckPath is the route of the resize check ({partition} is the
// partition's name): POST a Pod as JSON, get a ResizeCheck.
const ResizeCheckPath = "/ws/v1/partition/{partition}/check/resize"

// ResizeCheck is the answer of POST /ws/v1/partition/{p}/check/resize
// (docs/api.md): whether a running pod of ours may grow to the requests
// of the pod sent, which the admission webhook asks before it lets a
// pods/resize through.
type ResizeCheck struct {
	// Pod is the pod checked, namespace/name.
	Pod string `json:"pod"`
	// Charged says whether the scheduler charges the pod (it is bound and
	// in its ledger). A pod not charged has nothing to check: its
	// requests are read when it is admitted.
	Charged bool `json:"charged"`
	// Fits says whether the new requests fit every limit of the pod's
	// user, group and queues; true when not Charged or when nothing grows.
	Fits bool `json:"fits"`
	// Reason is the refusal when not Fits, the text the scheduler gives
	// when a pod does not fit (ugm's Refusal), or why the new requests
	// cannot be read.
	Reason string `json:"reason,omitempty"`
}
