package integration

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fairConfig: three users share root.shared, 10 cpu; with fairness the
// held pods go by their user's share of it, lowest first (issue 21).
func fairConfig(fair bool) string {
	props := ""
	if fair {
		props = `
      properties:
        userquota.fairness: user`
	}
	return `
partitions:
- name: default
  queues:
  - name: root
    submitacl: "*"
    queues:
    - name: default
    - name: shared
      resources:
        max: {vcore: 10}` + props + "\n"
}

// TestFairLetIn is issue 21's flood on the real control plane: flo fills
// root.shared (10 cpu) and holds 50 more pods; then ann and bob submit 2
// each. Each release (a bound pod of flo's deleted) lets one held pod in.
// With user fairness the next four releases let in ann's and bob's pods,
// alternating (the user using least first; on a tie the older
// application); in fifo order they let in four more of flo's and ann's
// and bob's wait behind the flood.
func TestFairLetIn(t *testing.T) {
	for _, tc := range []struct {
		name string
		fair bool
		want []string
	}{
		{"fifo", false, []string{"flo-*", "flo-*", "flo-*", "flo-*"}},
		{"fair", true, []string{"ann-0", "bob-0", "ann-1", "bob-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 1)
			c.setQueueConfig(fairConfig(tc.fair))
			c.startScheduler()
			const flood, room = 60, 10
			for i := range flood {
				c.createPod(podSpec{name: fmt.Sprintf("flo-%02d", i), user: "flo", queue: "root.shared", cpu: "1"})
			}
			c.eventually("flo's first 10 pods bound, the other 50 held", 60*time.Second, func() (bool, error) {
				bound, held := c.fairState()
				return len(bound) == room && len(held) == flood-room, nil
			})
			// ann's and bob's pods come later: a second later, so that
			// their creation (kept to the second) is younger.
			lastFlood := c.getPod(fmt.Sprintf("flo-%02d", flood-1)).CreationTimestamp
			c.eventually("the next second", 5*time.Second, func() (bool, error) {
				return time.Now().Truncate(time.Second).After(lastFlood.Time), nil
			})
			for _, u := range []string{"ann", "bob"} {
				for i := range 2 {
					c.createPod(podSpec{name: fmt.Sprintf("%s-%d", u, i), user: u, queue: "root.shared", cpu: "1"})
				}
			}
			for _, name := range []string{"ann-0", "ann-1", "bob-0", "bob-1"} {
				c.waitHeld(name)
			}
			var got []string
			for range 4 {
				bound, _ := c.fairState()
				victim := ""
				for _, name := range bound {
					if strings.HasPrefix(name, "flo-") {
						victim = name
						break
					}
				}
				c.deletePod(victim)
				var in string
				c.eventually("a held pod let in after "+victim+" went", 30*time.Second, func() (bool, error) {
					now, _ := c.fairState()
					if len(now) != room {
						return false, nil
					}
					for _, name := range now {
						if !contains(bound, name) {
							in = name
						}
					}
					return in != "", nil
				})
				got = append(got, in)
			}
			t.Logf("%s: the four releases after ann's and bob's pods came let in %v", tc.name, got)
			for i, name := range got {
				if w := tc.want[i]; name != w && !(strings.HasSuffix(w, "*") && strings.HasPrefix(name, strings.TrimSuffix(w, "*"))) {
					t.Errorf("let in %v, want %v", got, tc.want)
					break
				}
			}
			if !tc.fair {
				_, held := c.fairState()
				for _, name := range []string{"ann-0", "ann-1", "bob-0", "bob-1"} {
					if !contains(held, name) {
						t.Errorf("%s is not held behind the flood (held: %v)", name, held)
					}
				}
			}
		})
	}
}

// fairState returns the bound pods and the held ones (not bound, not being
// deleted), by name.
func (c *cluster) fairState() (bound, held []string) {
	c.t.Helper()
	list, err := c.client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, p := range list.Items {
		switch {
		case p.DeletionTimestamp != nil:
		case p.Spec.NodeName != "":
			bound = append(bound, p.Name)
		default:
			held = append(held, p.Name)
		}
	}
	sort.Strings(bound)
	sort.Strings(held)
	return bound, held
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
