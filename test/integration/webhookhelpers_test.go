package integration

import (
	"os"
	"path/filepath"
	"testing"
)

// tokenCluster is a cluster of nodes whose API server authenticates the
// users of webhookTokens (--token-auth-file).
func tokenCluster(t *testing.T, nodes int) *cluster {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(webhookTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	return newCluster(t, nodes, "--token-auth-file="+tokenFile)
}

// webhookCluster is a tokenCluster with the webhook (webhookConfig)
// served and registered from manifests/webhook-config.yaml; no queue
// config is set and the scheduler is not started.
func webhookCluster(t *testing.T, nodes int) *cluster {
	t.Helper()
	c := tokenCluster(t, nodes)
	url, caPEM := c.serveWebhook(webhookConfig(t, c.ns))
	c.registerWebhooks(url, caPEM)
	return c
}
