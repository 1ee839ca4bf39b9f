package integration

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/userquota/userquota/pkg/plugins/userquota"
)

// TestWebhookGuardsQueueConfig runs the config webhook behind the real
// API server with manifests/webhook-config.yaml: a config the scheduler
// would not load is refused, also when it fails only the whole validation
// (no partition default, the scheduler's); a DELETE of the queue config is
// refused saying how to remove it on purpose, while other ConfigMaps of
// the namespace are deleted as usual (the match condition reads oldObject
// on DELETE); once the webhook configuration is gone, the queue config
// can be deleted. On the code before this test, the config without the
// partition and the delete were both let through.
func TestWebhookGuardsQueueConfig(t *testing.T) {
	c := webhookCluster(t, 1)
	cms := c.client.CoreV1().ConfigMaps(c.ns)

	c.setQueueConfig(sueTwoCPU)
	err := updateQueueConfig(c, noDefaultPartition)
	if err == nil || !strings.Contains(err.Error(), `partitions: no partition "default", the partition the scheduler enforces`) {
		t.Fatalf("config without the partition: err = %v, want refused naming the partition", err)
	}
	t.Logf("config without the partition refused: %v", err)

	err = cms.Delete(c.ctx, userquota.DefaultConfigMapName, metav1.DeleteOptions{})
	if err == nil || !strings.Contains(err.Error(), "may not be deleted") ||
		!strings.Contains(err.Error(), "delete the ValidatingWebhookConfiguration userquota-webhook first") {
		t.Fatalf("deleting the queue config: err = %v, want refused saying how", err)
	}
	t.Logf("delete refused: %v", err)

	// Other ConfigMaps come and go, one by one or all at once.
	for _, name := range []string{"other-1", "other-2", "other-3"} {
		if _, err := cms.Create(c.ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating ConfigMap %s: %v", name, err)
		}
	}
	if err := cms.Delete(c.ctx, "other-1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting another ConfigMap: %v", err)
	}
	err = cms.DeleteCollection(c.ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	if err == nil || !strings.Contains(err.Error(), "may not be deleted") {
		t.Errorf("deleting every ConfigMap of the namespace: err = %v, want the queue config's refusal", err)
	}
	for _, name := range []string{"other-2", "other-3"} {
		if _, err := cms.Get(c.ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s after the collection delete: err = %v, want gone", name, err)
		}
	}
	if _, err := cms.Get(c.ctx, userquota.DefaultConfigMapName, metav1.GetOptions{}); err != nil {
		t.Fatalf("the queue config after the deletes: %v", err)
	}

	// On purpose: the webhook configuration first, then the ConfigMap.
	if err := c.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(c.ctx, "userquota-webhook", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.eventually("the queue config deleted once the webhook configuration is gone", 30*time.Second, func() (bool, error) {
		err := cms.Delete(c.ctx, userquota.DefaultConfigMapName, metav1.DeleteOptions{})
		return err == nil, nil
	})
}

// updateQueueConfig writes the queue config and returns the API server's
// answer (setQueueConfig fails the test on a refusal).
func updateQueueConfig(c *cluster, yaml string) error {
	cm, err := c.client.CoreV1().ConfigMaps(c.ns).Get(c.ctx, userquota.DefaultConfigMapName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.Data = map[string]string{userquota.DefaultConfigMapKey: yaml}
	_, err = c.client.CoreV1().ConfigMaps(c.ns).Update(c.ctx, cm, metav1.UpdateOptions{})
	return err
}
