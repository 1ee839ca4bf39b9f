package estimate

import "time"

// The reference accuracy of the estimates: measured by the simulator on
// the churn trace (ReferenceConfig, ReferenceTrace: a closed-loop
// workload of completions, made by pkg/simulator's TestChurnTrace) with
//
//	userquotactl simulate --requeue --estimates --config testdata/estimates/churn.yaml --trace testdata/estimates/churn.jsonl
//
// A pod's explanation states it until its scheduler has compared enough
// estimates of its own. TestReferenceAccuracy (pkg/simulator) measures it
// again and fails when it differs, so these numbers are what the code
// does.
const (
	ReferenceConfig   = "testdata/estimates/churn.yaml"
	ReferenceTrace    = "testdata/estimates/churn.jsonl"
	ReferenceCompared = 1112
	ReferenceP50      = 98 * time.Second
	ReferenceP90      = 543 * time.Second
)
