package controlplane

import (
	"testing"

	"github.com/userquota/userquota/pkg/plugins/userquota"
)

// The harness's copies of the plugin's defaults are the plugin's.
func TestQueueConfigMapIsThePlugins(t *testing.T) {
	if QueueConfigMap != userquota.DefaultConfigMapName || QueueConfigKey != userquota.DefaultConfigMapKey {
		t.Errorf("QueueConfigMap/QueueConfigKey = %s/%s, the plugin reads %s/%s",
			QueueConfigMap, QueueConfigKey, userquota.DefaultConfigMapName, userquota.DefaultConfigMapKey)
	}
}
