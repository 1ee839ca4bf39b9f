//go:build unix

package userquota

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used so
// far: the recovery benchmarks report it beside wall time, which a
// loaded machine stretches by whatever else runs.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
