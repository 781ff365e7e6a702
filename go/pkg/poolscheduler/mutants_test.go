package poolscheduler

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"schedgate/pkg/mutant"
)

func TestEachMutantNameTurnsOnExactlyItsSwitch(t *testing.T) {
	switches := map[string]mutant.Switch{
		"ignoresGPUCapacity": ignoresGPUCapacity,
		"bindUnchecked":      bindUnchecked,
		"noRequeue":          noRequeue,
	}
	for _, tc := range []struct {
		mutant string
		on     string // the switch that must be on; "" for none
	}{
		{"", ""},
		{"pool-ignores-gpu-capacity", "ignoresGPUCapacity"},
		{"pool-bind-unchecked", "bindUnchecked"},
		{"pool-no-requeue", "noRequeue"},
	} {
		t.Run("mutant="+tc.mutant, func(t *testing.T) {
			setMutant(t, tc.mutant)
			for name, m := range switches {
				if got, want := m.On(), name == tc.on; got != want {
					t.Errorf("%s.On() = %v, want %v", name, got, want)
				}
			}
			if err := mutant.Check(); err != nil {
				t.Errorf("Check with %q = %v", tc.mutant, err)
			}
			banner := mutant.Banner()
			if (banner == "") != (tc.mutant == "") || !strings.Contains(banner, tc.mutant) {
				t.Errorf("Banner = %q", banner)
			}
		})
	}
	if got := len(mutant.Known(Plugin)); got != len(switches) {
		t.Errorf("%d mutants defined for %s, want %d", got, Plugin, len(switches))
	}
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
