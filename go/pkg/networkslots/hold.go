package networkslots

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// The permit-hold fault (test-only, honoured only with faultInjection: true)
// parks a pod at Permit: Permit returns Wait for holdTimeoutSeconds, and the
// plugin allows the waiting pod as soon as the pod's fault annotation no
// longer says permit-hold. Tests use it for a deterministic "reserved and
// waiting at Permit" state, then delete the pod, delete its node or restart
// the scheduler while it waits.
const (
	FaultPermitHold = "permit-hold"

	defaultHoldTimeoutSeconds = 30

	// allowRetryFor bounds how long a lifted hold keeps looking for its
	// waiting pod: Permit has returned Wait but the framework has not yet
	// registered the waiting pod (a window of microseconds).
	allowRetryFor = 2 * time.Second
)

// waitingPods is the part of the framework handle the hold needs.
type waitingPods interface {
	GetWaitingPod(uid types.UID) fwk.WaitingPod
}

// holds remembers the pods parked by the permit-hold fault.
type holds struct {
	waiting waitingPods
	// pods is read only by the blocking-permit mutant build.
	pods corelisters.PodLister
	mu   sync.Mutex
	uids map[types.UID]bool
}

func newHolds(w waitingPods, pods corelisters.PodLister) *holds {
	return &holds{waiting: w, pods: pods, uids: map[types.UID]bool{}}
}

// permitHold is Permit for a pod with the permit-hold fault: Wait for the
// hold timeout. The blocking-permit mutant build instead blocks here.
func (pl *Plugin) permitHold(ctx context.Context, pod *v1.Pod) (*fwk.Status, time.Duration) {
	timeout := time.Duration(pl.args.HoldTimeoutSeconds) * time.Second
	if blockingPermit.On() {
		return pl.holdByBlocking(ctx, pod, timeout)
	}
	pl.holds.mu.Lock()
	pl.holds.uids[pod.UID] = true
	pl.holds.mu.Unlock()
	return fwk.NewStatus(fwk.Wait), timeout
}

// onHoldUpdate allows a held pod once its fault annotation stops saying
// permit-hold (removed or changed). Called from the pod update handler.
func (pl *Plugin) onHoldUpdate(logger klog.Logger, obj interface{}) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pl.holds == nil || pl.fault(pod) == FaultPermitHold {
		return
	}
	if !pl.holds.forget(pod.UID) {
		return
	}
	go pl.holds.allow(logger, pod)
}

// forgetHold drops a deleted pod's hold. The scheduler itself rejects a
// deleted pod that waits at Permit, which runs Unreserve.
func (pl *Plugin) forgetHold(uid types.UID) {
	if pl.holds != nil {
		pl.holds.forget(uid)
	}
}

// forget removes uid and says whether it was held.
func (h *holds) forget(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	held := h.uids[uid]
	delete(h.uids, uid)
	return held
}

// allow lets the pod's wait at Permit end with success.
func (h *holds) allow(logger klog.Logger, pod *v1.Pod) {
	deadline := time.Now().Add(allowRetryFor)
	for {
		if wp := h.waiting.GetWaitingPod(pod.UID); wp != nil {
			wp.Allow(Name)
			logger.V(4).Info("NetworkSlots: permit hold lifted, allowed", "pod", klog.KObj(pod))
			return
		}
		if time.Now().After(deadline) {
			// The wait ended already (timeout, deletion) or never began.
			logger.V(4).Info("NetworkSlots: permit hold lifted, pod no longer waiting", "pod", klog.KObj(pod))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// validateHoldTimeout checks the holdTimeoutSeconds argument: Permit waits
// are capped at 15 minutes by the framework.
func validateHoldTimeout(seconds int) error {
	if seconds <= 0 || seconds > 15*60 {
		return fmt.Errorf("%s args: holdTimeoutSeconds must be in 1..900, got %d", Name, seconds)
	}
	return nil
}
