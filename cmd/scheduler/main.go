// Command userquota-scheduler is kube-scheduler with the UserQuota plugin
// registered. Which plugins run, and as which schedulerName, is up to its
// --config (see manifests/scheduler-config.yaml).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/userquota/userquota/pkg/plugins/userquota"
)

func main() {
	cmd := app.NewSchedulerCommand(app.WithPlugin(userquota.Name, userquota.New))
	os.Exit(cli.Run(cmd))
}
