package gang

import (
	"fmt"
	"time"
)

// HeldError holds a gang's pod: the gang's whole minimum does not fit
// now (Err says which limit), or never can (Never: it is more than a
// maximum on its path).
type HeldError struct {
	Gang  ID
	Min   Min
	Err   error
	Never bool
}

func (e *HeldError) Error() string {
	if e.Never {
		return fmt.Sprintf("gang %s can never run: its minimum of %s is more than a maximum on its path: %v", e.Gang, e.Min, e.Err)
	}
	return fmt.Sprintf("gang %s waits until its minimum of %s fits at once: %v", e.Gang, e.Min, e.Err)
}

func (e *HeldError) Unwrap() error { return e.Err }

// FailedError holds a pod of a gang whose reservation timed out Hard
// before its minimum was drawn.
type FailedError struct {
	Gang    ID
	Timeout time.Duration
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("gang %s failed: its minimum did not run within %s (gangSchedulingStyle=Hard); delete and resubmit the application", e.Gang, e.Timeout)
}
