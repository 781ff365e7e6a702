// Command maintenance-scheduler is an out-of-tree kube-scheduler: the upstream scheduler of the
// Kubernetes version in go.mod, with one plugin of this module's own registered. It is what
// `--scheduler-module examples/out-of-tree-scheduler` builds and tests.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"example.com/maintenance-scheduler/maintenance"
)

func main() {
	command := app.NewSchedulerCommand(app.WithPlugin(maintenance.Name, maintenance.New))
	os.Exit(cli.Run(command))
}
