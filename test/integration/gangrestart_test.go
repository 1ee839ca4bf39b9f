package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/userquota/userquota/pkg/gang"
	"github.com/userquota/userquota/pkg/queueconfig/queueconfigtest"
)

// TestGangReservationAcrossRestart: a Spark-like gang whose driver runs
// holds room for the executors it has not created yet; a new scheduler
// (a restart; a failover's new leader starts the same way) rebuilds that
// reservation from the running driver before it decides a pod. Another
// pod of the same user that would fit without the reservation stays held,
// and the executors, created after the restart, run whole. Without the
// rebuild the other pod takes the room and the executors find no
// definition of their gang (only the driver carries it).
func TestGangReservationAcrossRestart(t *testing.T) {
	c := newCluster(t, 1)
	c.setQueueConfig(queueconfigtest.Gangs) // root.g: 20 cpu; each user 16
	rs := c.startScheduler()
	const app, key = "spark", "TaskGroups %s/spark"
	driver := c.makePod(podSpec{name: "spark-driver", user: "sue", queue: "root.g", app: app, cpu: "1"})
	driver.Annotations[gang.AnnotationTaskGroupName] = "driver"
	driver.Annotations[gang.AnnotationTaskGroups] = `[{"name":"driver","minMember":1,"minResource":{"cpu":"1"}},{"name":"executors","minMember":7,"minResource":{"cpu":"1"}}]`
	c.createPodObject(driver)
	c.waitBound("spark-driver", 30*time.Second)
	gangKey := fmt.Sprintf(key, c.ns)
	if held, ok := rs.plugin.Ledger().Manager().GangHeld(gangKey); !ok || held.String() != "cpu=7,pods=7" {
		t.Fatalf("before the restart, reserved for the executors: %v (%v), want cpu=7,pods=7", held, ok)
	}
	rs.stop()

	rs = c.startScheduler()
	c.eventually("the reservation rebuilt", 30*time.Second, func() (bool, error) {
		held, ok := rs.plugin.Ledger().Manager().GangHeld(gangKey)
		return ok && held.String() == "cpu=7,pods=7", nil
	})
	// 1 running + 7 reserved + 9 > 16; without the reservation 10 fits.
	c.createPod(podSpec{name: "other", user: "sue", queue: "root.g", cpu: "9"})
	c.waitHeld("other")
	for i := 0; i < 7; i++ {
		p := c.makePod(podSpec{name: fmt.Sprintf("spark-exec-%d", i), user: "sue", queue: "root.g", app: app, cpu: "1"})
		p.Annotations[gang.AnnotationTaskGroupName] = "executors"
		c.createPodObject(p)
	}
	for i := 0; i < 7; i++ {
		c.waitBound(fmt.Sprintf("spark-exec-%d", i), 30*time.Second)
	}
	if p := c.getPod("other"); p.Spec.NodeName != "" {
		t.Fatalf("the other pod was bound to %s over the gang's room", p.Spec.NodeName)
	}
	c.eventually("the reservation used up", 30*time.Second, func() (bool, error) {
		_, ok := rs.plugin.Ledger().Manager().GangHeld(gangKey)
		return !ok, nil
	})
}
