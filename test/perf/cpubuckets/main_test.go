package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// cpuProfile is a CPU profile of the given stacks (leaf first), each
// with its nanoseconds, written and parsed as pprof does.
func cpuProfile(t *testing.T, stacks map[string]int64) *profile.Profile {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	fns := map[string]*profile.Function{}
	for stack, ns := range stacks {
		var locs []*profile.Location
		for _, name := range strings.Fields(stack) {
			fn := fns[name]
			if fn == nil {
				fn = &profile.Function{ID: uint64(len(fns) + 1), Name: name}
				fns[name] = fn
				p.Function = append(p.Function, fn)
			}
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
			p.Location = append(p.Location, loc)
			locs = append(locs, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{ns / 10_000_000, ns}})
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	parsed, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}

func TestBucketSeconds(t *testing.T) {
	p := cpuProfile(t, map[string]int64{
		"runtime.scanObject runtime.gcDrain runtime.gcBgMarkWorker":                                                                              1_000_000_000,
		"runtime.mallocgc github.com/userquota/userquota/pkg/ugm.(*Manager).commit k8s.io/kubernetes/pkg/scheduler.(*Scheduler).schedulingCycle": 200_000_000,
		"runtime.memclrNoHeapPointers runtime.mallocgc k8s.io/client-go/util/workqueue.ParallelizeUntil.func1":                                   100_000_000,
		"syscall.Syscall6 main.main": 50_000_000,
	})
	got, err := bucketSeconds(p)
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

func TestBucketSecondsRefuses(t *testing.T) {
	p := cpuProfile(t, map[string]int64{"main.main": 1})
	p.SampleType = []*profile.ValueType{{Type: "delay", Unit: "nanoseconds"}, {Type: "contentions", Unit: "count"}}
	if _, err := bucketSeconds(p); err == nil || !strings.Contains(err.Error(), "not a CPU profile") {
		t.Errorf("a block profile: %v, want an error saying it is not a CPU profile", err)
	}
}
