package integration

import (
	"testing"
)

// groupRulesConfig places a pod in a queue named after the user's first
// group below root.groups, created on first use with the child template's
// max of 2 cpu; users without groups go to root.default.
const groupRulesConfig = `
partitions:
- name: default
  placementrules:
  - name: primaryGroup
    create: true
    parent:
      name: fixed
      value: root.groups
  - name: fixed
    value: root.default
  queues:
  - name: root
    submitacl: '*'
    queues:
    - name: default
    - name: groups
      parent: true
      childtemplate:
        resources:
          max: {vcore: 2}
`

// TestPrimaryGroupPlacement (issue 20, point 6): the primaryGroup rule puts
// each pod in its user's first group's queue, and that queue's limit binds
// across the group's users. Before, the rule loaded and never matched: every
// pod ran in root.default, which has no limit, so ann's pod was bound.
func TestPrimaryGroupPlacement(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(groupRulesConfig)
	rs := c.startScheduler()

	c.createPod(podSpec{name: "sue-1", user: "sue", groups: []string{"dev", "ops"}, cpu: "1"})
	c.waitBound("sue-1", bindTimeout)
	c.createPod(podSpec{name: "bob-1", user: "bob", groups: []string{"dev"}, cpu: "1"})
	c.waitBound("bob-1", bindTimeout)
	// ml's queue is another queue with its own 2 cpu.
	c.createPod(podSpec{name: "carl-1", user: "carl", groups: []string{"ml", "dev"}, cpu: "2"})
	c.waitBound("carl-1", bindTimeout)
	c.createPod(podSpec{name: "nogroup-1", user: "eve", cpu: "3"})
	c.waitBound("nogroup-1", bindTimeout)

	for name, want := range map[string]string{"sue-1": "root.groups.dev", "bob-1": "root.groups.dev", "carl-1": "root.groups.ml", "nogroup-1": "root.default"} {
		ch, ok := rs.plugin.Ledger().Get(string(c.getPod(name).UID))
		if !ok || ch.Request.Queue != want {
			t.Errorf("%s charged to %+v (live %v), want %s", name, ch.Request, ok, want)
		}
	}

	// dev's queue holds 2 cpu: a third dev user is refused there.
	c.createPod(podSpec{name: "ann-1", user: "ann", groups: []string{"dev"}, cpu: "1"})
	msg := c.waitRefused("ann-1", "queue root.groups.dev would exceed max: cpu 2+1 > 2")
	t.Logf("refusal as the user sees it: %s", msg)

	// Room in the group's queue lets the pod in.
	c.deletePod("bob-1")
	c.waitBound("ann-1", bindTimeout)
}
