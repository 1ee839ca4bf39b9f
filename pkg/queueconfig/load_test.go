package queueconfig

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLoad: Load accepts what Parse accepts only when the enforced
// partition is there, and names the partitions the config has otherwise.
func TestLoad(t *testing.T) {
	const gpuOnly = "partitions:\n- name: gpu\n  queues:\n  - name: root\n"
	for _, tc := range []struct {
		name, data, partition string
		// want are the problems (nil: loads).
		want []string
	}{
		{name: "valid", data: "partitions:\n- name: default\n  queues:\n  - name: root\n", partition: "default"},
		{name: "another partition enforced", data: gpuOnly, partition: "gpu"},
		{name: "partition missing", data: gpuOnly, partition: "default",
			want: []string{`partitions: no partition "default", the partition the scheduler enforces (its partition argument); the config has "gpu"`}},
		{name: "invalid: Parse's problems", data: "partitions:\n- name: default\n  queues:\n  - name: root\n    maxapplications: -1\n", partition: "default",
			want: []string{"line 5: partitions[0].queues[0].maxapplications: expected a whole number"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load([]byte(tc.data), tc.partition)
			if tc.want == nil {
				if err != nil || cfg == nil || cfg.Partition(tc.partition) == nil {
					t.Fatalf("Load = %v, %v; want the config with partition %q", cfg, err, tc.partition)
				}
				return
			}
			if cfg != nil {
				t.Errorf("Load returned a config for an invalid one")
			}
			got := Problems(err)
			if len(got) != len(tc.want) {
				t.Fatalf("problems = %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("problem %d (-want,+got):\n%s", i, cmp.Diff(tc.want[i], got[i]))
				}
			}
		})
	}
}
