//go:build !kubernetes1.35

package networkslots

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// PreBindPreFlight says whether PreBind has work for the pod (1.36 added the result;
// preflight_135.go is the 1.35 signature).
func (pl *Plugin) PreBindPreFlight(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	return nil, pl.preBindPreFlight(pod)
}
