package resources

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/userquota/userquota/pkg/resources/resourcestest"
)

// FuzzParseQuantity checks that ParseQuantity never panics, never returns
// a negative amount, names the resource in every error, and that a
// quantity it reads is one CheckPodRequests passes in a pod (what the
// config accepts, a pod may ask for). The corpus (testdata/fuzz) holds
// the hostile exponents: apimachinery's parser alone takes minutes over
// "1e-2000000000", so a hang shows as a fuzzer that stops progressing.
func FuzzParseQuantity(f *testing.F) {
	for _, s := range resourcestest.Hostile {
		f.Add(s)
	}
	for _, s := range []string{"0", "1", "100m", "1.5Gi", "1e3", "7Ei", "9223372036854775807", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, name := range []string{"cpu", "memory"} {
			v, err := ParseQuantity(name, s)
			if err != nil {
				if !strings.HasPrefix(err.Error(), name+": ") {
					t.Fatalf("ParseQuantity(%s, %q) error %q does not name the resource", name, s, err)
				}
				continue
			}
			if v < 0 {
				t.Fatalf("ParseQuantity(%s, %q) = %d", name, s, v)
			}
			q := resource.MustParse(s)
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceName(name): q},
			}}}}}
			if err := CheckPodRequests(pod); err != nil {
				t.Fatalf("ParseQuantity(%s, %q) = %d, but a pod of it is refused: %v", name, s, v, err)
			}
		}
	})
}
