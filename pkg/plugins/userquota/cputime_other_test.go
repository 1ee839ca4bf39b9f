//go:build !unix

package userquota

import "time"

// processCPU is not measured here: the cpu-ns/pod metrics read 0.
func processCPU() time.Duration { return 0 }
