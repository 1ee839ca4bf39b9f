package queueconfig

import (
	"fmt"
	"strings"
	"testing"

	"github.com/userquota/userquota/pkg/resources/resourcestest"
)

// TestHostileQuantities: every quantity of a config (a queue's max and
// guaranteed, a queue's and the partition's limits) written as a hostile
// quantity is refused or read within two seconds and 16 MiB, and a
// refusal names the queue and the key. apimachinery's parser takes
// minutes over "1e-2000000000", and a Quantity of 1e2000000000 minutes to
// compare or round; resources.ParseQuantity refuses them by their text.
// "8Ei" and "9999...Ei" were read as 2^63-1 (apimachinery caps them)
// before: an unlimited limit where the operator wrote an impossible one.
func TestHostileQuantities(t *testing.T) {
	sites := []struct {
		name, yaml string
		where      string // the line, queue and key the error names
	}{
		{"queue max", "        queues:\n          - name: a\n            resources: {max: {memory: %q}}\n", "line 7: partitions[0].queues[0].queues[0].resources.max.memory: "},
		{"queue guaranteed", "        queues:\n          - name: a\n            resources: {guaranteed: {memory: %q}}\n", "line 7: partitions[0].queues[0].queues[0].resources.guaranteed.memory: "},
		{"queue limit", "        queues:\n          - name: a\n            limits: [{users: [sue], maxresources: {memory: %q}}]\n", "line 7: partitions[0].queues[0].queues[0].limits[0].maxresources.memory: "},
		{"root limit", "        limits: [{groups: [dev], maxresources: {memory: %q}}]\n", "line 5: partitions[0].queues[0].limits[0].maxresources.memory: "},
	}
	for _, site := range sites {
		for _, q := range resourcestest.Hostile {
			t.Run(site.name+"/"+q, func(t *testing.T) {
				text := underRoot(fmt.Sprintf(site.yaml, q))
				var err error
				resourcestest.Within(t, resourcestest.Default, "Parse", func() { _, err = Parse([]byte(text)) })
				if err == nil {
					return // in range, such as 9E18 bytes
				}
				if msg := err.Error(); !strings.HasPrefix(msg, site.where) || !strings.Contains(msg, q[:min(len(q), 20)]) {
					t.Errorf("error does not start with the line, queue and key %q and quote the quantity:\n%s", site.where, msg)
				}
			})
		}
	}
	// The ones out of range are refused, not capped.
	for _, q := range []string{"1e2000000000", "1e-2000000000", "8Ei", "99999999999999999999999999999999Ei", "1e99", "1e4294967296"} {
		t.Run("refused/"+q, func(t *testing.T) {
			mustFail(t, underRoot(fmt.Sprintf(sites[0].yaml, q)), "resources.max.memory: ")
		})
	}
}
