package networkslots

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// Behaviours of the deliberately broken mutant builds (each switched on by
// its name in the link-time variable mutant; see mutant.go). Normal builds
// never run this code.

// holdByBlocking is the blocking-permit mutant's permit-hold: instead of
// returning Wait, Permit polls the pod until its hold is lifted or the
// timeout passes, holding the scheduling cycle (no other pod is scheduled
// meanwhile). A pod that vanished reads as "not lifted yet", so a deleted
// pod keeps the cycle until the timeout.
func (pl *Plugin) holdByBlocking(ctx context.Context, pod *v1.Pod, timeout time.Duration) (*fwk.Status, time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if live, err := pl.holds.pods.Pods(pod.Namespace).Get(pod.Name); err == nil && live.UID == pod.UID && pl.fault(live) != FaultPermitHold {
			return nil, 0
		}
		select {
		case <-ctx.Done():
			return fwk.AsStatus(ctx.Err()), 0
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fwk.NewStatus(fwk.Unschedulable, msgPermitReject), 0
}

// freeFromLedgerOnly is the memory-only-ledger mutant's Filter arithmetic:
// capacity minus everything this process's ledger holds on the node (the
// pod's own holding excluded), ignoring the scheduler's snapshot. Together
// with ignoring informer adds and updates (onPodAddOrUpdate), a restarted
// scheduler forgets every pod bound before it started.
func (pl *Plugin) freeFromLedgerOnly(nodeInfo fwk.NodeInfo, pod *v1.Pod) int64 {
	node := nodeInfo.Node().Name
	held := pl.ledger.held(node)
	if h, ok := pl.ledger.get(pod.UID); ok && h.node == node {
		held -= h.slots
	}
	return nodeCapacity(nodeInfo.Node()) - held
}

// remoteQuery is what one call to the "remote" slot service of the
// performance mutants costs (slow-filter per node, prefilter-preload per
// pod, serial-bind per pod under its lock).
const remoteQuery = 1 * time.Millisecond

// askRemote is that call: it waits remoteQuery (or until ctx ends).
func askRemote(ctx context.Context) {
	t := time.NewTimer(remoteQuery)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// bindLock is serial-bind's process-wide lock, and held the pods holding it
// (PreBind takes it; PostBind or Unreserve of the same pod gives it back).
var (
	bindLock sync.Mutex
	held     sync.Map
)

func lockBinding(ctx context.Context, pod *v1.Pod) {
	bindLock.Lock()
	held.Store(pod.UID, true)
	askRemote(ctx)
}

func unlockBinding(pod *v1.Pod) {
	if _, ok := held.LoadAndDelete(pod.UID); ok {
		bindLock.Unlock()
	}
}

// The busy-prefilter mutant's accounts: the process's CPU time at the
// first PreFilter call (-1 before it) and the CPU time burned on purpose
// since, both in nanoseconds.
var (
	cpuAtFirst atomic.Int64
	burnedCPU  atomic.Int64
	firstOnce  sync.Once
	spinSink   atomic.Uint64 // keeps the spin's arithmetic from being optimised away
)

// burnFifth spins on this goroutine's thread until the CPU burned on
// purpose reaches a fifth of what the process spent otherwise since the
// first call: its CPU per pod is then 1.2 times the correct build's and
// more (the runtime's cost of the spinning thread), whatever the machine's
// speed.
func burnFifth() {
	firstOnce.Do(func() { cpuAtFirst.Store(cpuNow(unix.CLOCK_PROCESS_CPUTIME_ID)) })
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	spent := cpuNow(unix.CLOCK_PROCESS_CPUTIME_ID) - cpuAtFirst.Load()
	burned := burnedCPU.Load()
	owe := (spent-burned)/5 - burned
	if owe <= 0 {
		return
	}
	start := cpuNow(unix.CLOCK_THREAD_CPUTIME_ID)
	x := uint64(owe)
	for cpuNow(unix.CLOCK_THREAD_CPUTIME_ID)-start < owe {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	spinSink.Store(x)
	burnedCPU.Add(cpuNow(unix.CLOCK_THREAD_CPUTIME_ID) - start)
}

func cpuNow(clock int32) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
