package poolscheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"schedgate/pkg/mutant"
	"schedgate/pkg/mutant/mutanttest"
)

func TestEachMutantNameTurnsOnExactlyItsSwitch(t *testing.T) {
	mutanttest.Switches(t, Plugin, map[string]mutant.Switch{
		"ignoresGPUCapacity": ignoresGPUCapacity,
		"bindUnchecked":      bindUnchecked,
		"noRequeue":          noRequeue,
	}, map[string]string{
		"pool-ignores-gpu-capacity": "ignoresGPUCapacity",
		"pool-bind-unchecked":       "bindUnchecked",
		"pool-no-requeue":           "noRequeue",
	})
}

func TestIgnoresGPUCapacityMutantFit(t *testing.T) {
	pod := gpuPod("p")
	full := NodeInfos([]*v1.Node{makeNode("n", gpuNode)}, []*v1.Pod{gpuPod("a", onNode("n"))}, nil)[0]
	if got := Fit(pod, PodRequests(pod), full, testLabels); got != ReasonInsufficient(ResourceGPU) {
		t.Errorf("correct build: Fit = %q", got)
	}
	setMutant(t, "pool-ignores-gpu-capacity")
	if got := Fit(pod, PodRequests(pod), full, testLabels); got != "" {
		t.Errorf("pool-ignores-gpu-capacity: Fit = %q, want a fit", got)
	}
	cpuFull := NodeInfos([]*v1.Node{makeNode("n", gpuNode)}, []*v1.Pod{makePod("a", resources("cpu", "8"), onNode("n"))}, nil)[0]
	cpuPod := makePod("p", resources("cpu", "1"))
	if got := Fit(cpuPod, PodRequests(cpuPod), cpuFull, testLabels); got != ReasonInsufficient("cpu") {
		t.Errorf("pool-ignores-gpu-capacity still checks cpu: Fit = %q", got)
	}
}
