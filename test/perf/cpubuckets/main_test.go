package main

import (
	"math"
	"strings"
	"testing"
)

const traces = `File: userquota-scheduler
Type: cpu
Duration: 60s, Total samples = 1.35s
-----------+-------------------------------------------------------
     1s   runtime.scanObject
          runtime.gcDrain
          runtime.gcBgMarkWorker
-----------+-------------------------------------------------------
   200ms   runtime.mallocgc
          github.com/userquota/userquota/pkg/ugm.(*Manager).commit
          k8s.io/kubernetes/pkg/scheduler.(*Scheduler).schedulingCycle
-----------+-------------------------------------------------------
   100ms   runtime.memclrNoHeapPointers
          runtime.mallocgc
          k8s.io/client-go/util/workqueue.ParallelizeUntil.func1
-----------+-------------------------------------------------------
    50ms   syscall.Syscall6
          main.main
-----------+-------------------------------------------------------
`

func TestParseTraces(t *testing.T) {
	got, err := parseTraces(strings.NewReader(traces))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"GC": 1, "UserQuota": 0.2, "allocation": 0.1, other: 0.05, "total": 1.35}
	if len(got) != len(want) {
		t.Errorf("buckets %v, want %v", got, want)
	}
	for k, v := range want {
		if math.Abs(got[k]-v) > 1e-9 {
			t.Errorf("%s: %v s, want %v", k, got[k], v)
		}
	}
}

func TestParseTracesRefuses(t *testing.T) {
	bad := "header\n-----------+----\n   runtime.foo\n"
	if _, err := parseTraces(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "runtime.foo") {
		t.Errorf("a stack without a value: %v, want an error naming its line", err)
	}
}
