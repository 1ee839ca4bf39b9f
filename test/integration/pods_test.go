package integration

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/userquota/userquota/pkg/podmeta"
)

// podSpec describes a test pod.
type podSpec struct {
	name   string
	user   string
	groups []string
	queue  string
	app    string
	cpu    string
	// yunikorn uses YuniKorn's annotation and labels instead of ours.
	yunikorn bool
}

func (c *cluster) makePod(ps podSpec) *v1.Pod {
	groups := `[]`
	if len(ps.groups) > 0 {
		groups = `["` + strings.Join(ps.groups, `","`) + `"]`
	}
	info := fmt.Sprintf(`{"user":%q,"groups":%s}`, ps.user, groups)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: ps.name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: v1.PodSpec{
			SchedulerName: schedulerName,
			Containers: []v1.Container{{
				Name:      "c",
				Image:     "registry.invalid/none:0",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(ps.cpu)}},
			}},
		},
	}
	if ps.yunikorn {
		pod.Annotations["yunikorn.apache.org/user.info"] = info
		if ps.queue != "" {
			pod.Labels["queue"] = ps.queue
		}
		if ps.app != "" {
			pod.Labels["applicationId"] = ps.app
		}
		return pod
	}
	if ps.user != "" {
		pod.Annotations[podmeta.AnnotationUserInfo] = info
	}
	if ps.queue != "" {
		pod.Labels[podmeta.LabelQueue] = ps.queue
	}
	if ps.app != "" {
		pod.Labels[podmeta.LabelAppID] = ps.app
	}
	return pod
}

func (c *cluster) createPod(ps podSpec) *v1.Pod {
	c.t.Helper()
	p, err := c.client.CoreV1().Pods(c.ns).Create(c.ctx, c.makePod(ps), metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

// createPodObject creates p, retrying while the API server's Priority
// admission does not know p's PriorityClass yet: a class created just
// before reaches the admission plugin's informer a moment later, which a
// loaded machine makes long enough to see.
func (c *cluster) createPodObject(p *v1.Pod) *v1.Pod {
	c.t.Helper()
	var created *v1.Pod
	c.eventually("pod "+p.Name+" created", 30*time.Second, func() (bool, error) {
		var err error
		created, err = c.client.CoreV1().Pods(p.Namespace).Create(c.ctx, p, metav1.CreateOptions{})
		if err != nil && strings.Contains(err.Error(), "no PriorityClass with name") {
			return false, nil
		}
		return err == nil, err
	})
	return created
}

func (c *cluster) getPod(name string) *v1.Pod {
	c.t.Helper()
	p, err := c.client.CoreV1().Pods(c.ns).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

// waitBound waits until the pod is bound to a node.
func (c *cluster) waitBound(name string, timeout time.Duration) {
	c.t.Helper()
	c.eventually("pod "+name+" bound", timeout, func() (bool, error) {
		return c.getPod(name).Spec.NodeName != "", nil
	})
}

// waitRefused waits until the pod's PodScheduled condition is False with a
// message containing want, and returns the message.
func (c *cluster) waitRefused(name, want string) string {
	c.t.Helper()
	var msg string
	c.eventually(fmt.Sprintf("pod %s refused with %q", name, want), 30*time.Second, func() (bool, error) {
		p := c.getPod(name)
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("pod %s was bound to %s", name, p.Spec.NodeName)
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1.PodScheduled && cond.Status == v1.ConditionFalse {
				msg = cond.Message
				return strings.Contains(msg, want), nil
			}
		}
		return false, nil
	})
	return msg
}

// stillPending checks that the pod stays unbound for a while.
func (c *cluster) stillPending(name string, d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if n := c.getPod(name).Spec.NodeName; n != "" {
			c.t.Fatalf("pod %s was bound to %s, want it pending", name, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *cluster) deletePod(name string) {
	c.t.Helper()
	zero := int64(0)
	if err := c.client.CoreV1().Pods(c.ns).Delete(c.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		c.t.Fatal(err)
	}
}

// finishPod sets the pod's phase to Succeeded, as its kubelet would.
func (c *cluster) finishPod(name string) {
	c.t.Helper()
	p := c.getPod(name)
	p.Status.Phase = v1.PodSucceeded
	if _, err := c.client.CoreV1().Pods(c.ns).UpdateStatus(c.ctx, p, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}
