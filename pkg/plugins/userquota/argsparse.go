package userquota

import "k8s.io/apimachinery/pkg/runtime"

// ParseArgs decodes, defaults and validates the plugin's args as the
// scheduler hands them over (what New does first), for tools and tests
// that check a scheduler configuration without starting a scheduler.
func ParseArgs(obj runtime.Object) (Args, error) { return decodeArgs(obj) }
