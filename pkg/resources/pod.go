package resources

import (
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// CheckPodRequests checks every quantity that kube-scheduler's request
// computation (k8s.io/component-helpers/resource.PodRequests) may read
// from pod: the requests of its containers and init containers, their
// resize status (actual and allocated), the pod-level requests and status,
// and the overhead. Each must be 0 or more and fit in int64 base units
// (BaseUnits); the first that does not is returned as an error naming
// where it is and the resource:
//
//	container "main": memory: quantity "100e1999999998": value out of range
//
// Call it before PodRequests: PodRequests adds and compares quantities
// with Quantity.Add and Quantity.Cmp, which line two quantities up by
// writing their scale difference out in decimal digits, so one request of
// "1e2000000000" beside another of "1Gi" builds a number of two billion
// digits (minutes and gigabytes). Quantities that pass are below 2^63 base
// units and at or above a nano (the API server's parser rounds up to
// that), so the sums and comparisons stay a few dozen digits wide.
//
// It allocates nothing for the usual quantities (whole numbers, milli and
// binary suffixes). SameRequestInputs compares these fields between two
// versions of a pod: keep the two lists alike.
func CheckPodRequests(pod *corev1.Pod) error {
	for i := range pod.Spec.InitContainers {
		if err := checkList(pod.Spec.InitContainers[i].Resources.Requests); err != nil {
			return fmt.Errorf("init container %q: %w", pod.Spec.InitContainers[i].Name, err)
		}
	}
	for i := range pod.Spec.Containers {
		if err := checkList(pod.Spec.Containers[i].Resources.Requests); err != nil {
			return fmt.Errorf("container %q: %w", pod.Spec.Containers[i].Name, err)
		}
	}
	if pod.Spec.Resources != nil {
		if err := checkList(pod.Spec.Resources.Requests); err != nil {
			return fmt.Errorf("pod-level resources: %w", err)
		}
	}
	if err := checkList(pod.Spec.Overhead); err != nil {
		return fmt.Errorf("overhead: %w", err)
	}
	if pod.Status.Resources != nil {
		if err := checkList(pod.Status.Resources.Requests); err != nil {
			return fmt.Errorf("status.resources: %w", err)
		}
	}
	if err := checkList(pod.Status.AllocatedResources); err != nil {
		return fmt.Errorf("status.allocatedResources: %w", err)
	}
	for _, statuses := range [2][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range statuses {
			cs := &statuses[i]
			if cs.Resources != nil {
				if err := checkList(cs.Resources.Requests); err != nil {
					return fmt.Errorf("status of container %q: %w", cs.Name, err)
				}
			}
			if err := checkList(cs.AllocatedResources); err != nil {
				return fmt.Errorf("status of container %q (allocated): %w", cs.Name, err)
			}
		}
	}
	return nil
}

// checkList is checkQuantity over a resource list; the error names the
// resource and the quantity.
func checkList(rl corev1.ResourceList) error {
	for name, q := range rl {
		if err := checkQuantity(string(name), &q); err != nil {
			return fmt.Errorf("%s: quantity %s: %w", name, Describe(q), err)
		}
	}
	return nil
}

// checkQuantity refuses what PodRequests cannot add or compare in
// bounded time. Without allocating for an int64-backed quantity it passes
// one clearly within BaseUnits' range, between half a nano and a tenth of
// MaxInt64 base units: AsApproximateFloat64 multiplies the mantissa by a
// power of ten (infinite or 0 for a hostile exponent), never doing big
// arithmetic. The rest is decided by BaseUnits, by magnitude, except a
// zero and a value below a nano written with a huge exponent, which the
// API server never stores (it rounds up to a nano and writes zero as "0")
// and Quantity.Cmp would still line up digit by digit.
func checkQuantity(name string, q *resource.Quantity) error {
	limit := float64(math.MaxInt64) / 10
	if CanonicalName(name) == CPU {
		limit /= 1000
	}
	if q.IsZero() {
		if _, exp := q.AsCanonicalBytes(nil); exp < -maxExponent || exp > maxExponent {
			return fmt.Errorf("zero with a decimal exponent beyond ±%d: %w", maxExponent, ErrOverflow)
		}
		return nil
	}
	f := q.AsApproximateFloat64()
	switch {
	case f >= 0.5e-9 && f < limit:
		return nil
	case f >= 0 && f < 0.5e-9: // not zero: below a nano, or 0 by underflow
		return fmt.Errorf("below 1n, the smallest quantity the API server stores: %w", ErrOverflow)
	}
	_, err := BaseUnits(name, *q)
	return err
}

// Describe renders q for a message, quoted, in bounded time: as
// Quantity.String when its magnitude is within 10^±30, else as
// "about 1e2000000000" from its size alone (String prints a DecimalSI
// quantity of 1e2000000000 as "100", and a decimal-backed one of that size
// would take minutes to print).
func Describe(q resource.Quantity) string {
	if q.IsZero() {
		return `"0"`
	}
	d := q.AsDec()
	u := d.UnscaledBig()
	digits := int64(float64(u.BitLen())*math.Log10(2)) + 1
	mag := digits - 1 - int64(d.Scale())
	if digits > 40 || mag > 30 || mag < -30 {
		sign := ""
		if u.Sign() < 0 {
			sign = "-"
		}
		return fmt.Sprintf("of about %s1e%d", sign, mag)
	}
	return strconv.Quote(q.String())
}
