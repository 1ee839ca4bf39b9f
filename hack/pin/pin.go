//go:build tools

// Package pin keeps the Kubernetes modules the scheduler is built against in
// go.mod before any package imports them, so every issue builds on the same
// pinned set. It is never compiled into a binary (the tools build tag).
package pin

import (
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "sigs.k8s.io/scheduler-plugins/pkg/capacityscheduling"
)
