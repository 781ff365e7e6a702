// Command kube-scheduler is the upstream kube-scheduler, built from the pinned
// k8s.io/kubernetes module, with schedgate's out-of-tree plugins registered.
package main

import (
	"fmt"
	"os"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"schedgate/pkg/gang"
	"schedgate/pkg/gpuquota"
	"schedgate/pkg/mutant"
	"schedgate/pkg/networkslots"
	"schedgate/pkg/tenantfilter"
	"schedgate/pkg/wrappedaffinity"
	"schedgate/pkg/wrappedpreemption"
)

// plugins lists the out-of-tree plugins compiled into this scheduler. Each
// entry becomes available to any profile; none is enabled by default.
var plugins = []app.Option{
	app.WithPlugin(gang.Name, gang.New),
	app.WithPlugin(gpuquota.Name, gpuquota.New),
	app.WithPlugin(networkslots.Name, networkslots.New),
	app.WithPlugin(tenantfilter.Name, tenantfilter.New),
	app.WithPlugin(wrappedaffinity.Name, wrappedaffinity.New),
	app.WithPlugin(wrappedpreemption.Name, wrappedpreemption.New),
}

// noConsumableCapacity is the scheduler itself built without DRAConsumableCapacity (the gate forced off
// before the flags are read, so a --feature-gates that does not name it leaves it off): a claim that asks
// for part of a shared device's capacity cannot be allocated at all.
var noConsumableCapacity = mutant.Define("kube-scheduler", "no-consumable-capacity",
	"DRAConsumableCapacity forced off: no claim takes part of a shared device")

func main() {
	// A mutant build says so first thing (the toolchain checks it); every plugin has defined its mutants
	// by now, as package-level vars.
	if b := mutant.Banner(); b != "" {
		fmt.Fprintln(os.Stderr, b)
	}
	if noConsumableCapacity.On() {
		if err := utilfeature.DefaultMutableFeatureGate.Set("DRAConsumableCapacity=false"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	command := app.NewSchedulerCommand(plugins...)
	os.Exit(cli.Run(command))
}
