package networkslots

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// fakeWaiting stands in for the framework's waiting-pods map.
type fakeWaiting struct {
	mu      sync.Mutex
	pods    map[types.UID]*fakeWaitingPod
	allowed chan types.UID
}

func newFakeWaiting() *fakeWaiting {
	return &fakeWaiting{pods: map[types.UID]*fakeWaitingPod{}, allowed: make(chan types.UID, 8)}
}

func (f *fakeWaiting) park(pod *v1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods[pod.UID] = &fakeWaitingPod{pod: pod, owner: f}
}

func (f *fakeWaiting) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pods[uid]; ok {
		return p
	}
	return nil
}

type fakeWaitingPod struct {
	pod   *v1.Pod
	owner *fakeWaiting
}

func (p *fakeWaitingPod) GetPod() *v1.Pod             { return p.pod }
func (p *fakeWaitingPod) GetPendingPlugins() []string { return []string{Name} }
func (p *fakeWaitingPod) Allow(plugin string) {
	if plugin == Name {
		p.owner.allowed <- p.pod.UID
	}
}

func holdPlugin(w waitingPods, nodes ...*v1.Node) *Plugin {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range nodes {
		if err := indexer.Add(n); err != nil {
			panic(err)
		}
	}
	return &Plugin{
		args:       Args{FaultInjection: true, PermitTimeoutSeconds: 2, HoldTimeoutSeconds: 30},
		ledger:     newLedger(),
		nodeLister: corelisters.NewNodeLister(indexer),
		holds:      newHolds(w, nil),
	}
}

func expectAllowed(t *testing.T, w *fakeWaiting, uid types.UID) {
	t.Helper()
	select {
	case got := <-w.allowed:
		if got != uid {
			t.Errorf("allowed %s, want %s", got, uid)
		}
	case <-time.After(time.Second):
		t.Errorf("pod %s was not allowed within 1s of its hold being lifted", uid)
	}
}

func expectNoneAllowed(t *testing.T, w *fakeWaiting) {
	t.Helper()
	select {
	case got := <-w.allowed:
		t.Errorf("pod %s was allowed although its hold was not lifted", got)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestPermitHoldWaitsForTheHoldTimeout(t *testing.T) {
	pl := holdPlugin(newFakeWaiting())
	s, d := pl.Permit(context.Background(), nil, mkPod("h", "1", FaultPermitHold), "n")
	if !s.IsWait() || d != 30*time.Second {
		t.Errorf("permit-hold = %v %v, want Wait 30s", s, d)
	}
	// The hold is a fault like the others: ignored without fault injection
	// and for pods that ask for no slots.
	pl.args.FaultInjection = false
	if s, _ := pl.Permit(context.Background(), nil, mkPod("h", "1", FaultPermitHold), "n"); !s.IsSuccess() {
		t.Errorf("permit-hold with injection off = %v, want Success", s)
	}
	pl.args.FaultInjection = true
	if s, _ := pl.Permit(context.Background(), nil, mkPod("u", "", FaultPermitHold), "n"); !s.IsSuccess() {
		t.Errorf("permit-hold on an unmanaged pod = %v, want Success", s)
	}
}

func TestLiftingTheHoldAllowsTheWaitingPod(t *testing.T) {
	w := newFakeWaiting()
	pl := holdPlugin(w)
	logger := klog.Background()
	held := mkPod("held", "1", FaultPermitHold)
	pl.Permit(context.Background(), nil, held, "n")
	w.park(held)

	// An update that keeps the hold (another annotation changed) allows nothing.
	same := held.DeepCopy()
	same.Annotations["x"] = "y"
	pl.onHoldUpdate(logger, same)
	expectNoneAllowed(t, w)

	// The fault annotation removed: the waiting pod is allowed, once.
	lifted := mkPod("held", "1", "")
	pl.onHoldUpdate(logger, lifted)
	expectAllowed(t, w, held.UID)
	pl.onHoldUpdate(logger, lifted)
	expectNoneAllowed(t, w)

	// A fault changed to another one also lifts the hold.
	other := mkPod("other", "1", FaultPermitHold)
	pl.Permit(context.Background(), nil, other, "n")
	w.park(other)
	pl.onHoldUpdate(logger, mkPod("other", "1", FaultPermitReject))
	expectAllowed(t, w, other.UID)
}

func TestALiftedHoldWaitsForTheFrameworkToParkThePod(t *testing.T) {
	w := newFakeWaiting()
	pl := holdPlugin(w)
	pod := mkPod("late", "1", FaultPermitHold)
	pl.Permit(context.Background(), nil, pod, "n")
	// Lifted before the framework registered the waiting pod.
	pl.onHoldUpdate(klog.Background(), mkPod("late", "1", ""))
	time.Sleep(30 * time.Millisecond)
	w.park(pod)
	expectAllowed(t, w, pod.UID)
}

func TestUpdatesOfPodsNotHeldAllowNothing(t *testing.T) {
	w := newFakeWaiting()
	pl := holdPlugin(w)
	// A pod waiting for the permit-timeout fault is not this hold's to allow.
	timing := mkPod("timing", "1", FaultPermitTimeout)
	pl.Permit(context.Background(), nil, timing, "n")
	w.park(timing)
	pl.onHoldUpdate(klog.Background(), mkPod("timing", "1", ""))
	expectNoneAllowed(t, w)
}

func TestADeletedHeldPodIsForgotten(t *testing.T) {
	w := newFakeWaiting()
	pl := holdPlugin(w)
	pod := mkPod("gone", "1", FaultPermitHold)
	pl.Reserve(context.Background(), nil, pod, "hold-n")
	pl.Permit(context.Background(), nil, pod, "hold-n")
	w.park(pod)
	pl.onPodDelete(klog.Background(), pod)
	expectUsage(t, pl.ledger, "hold-n", 0, 0)
	if pl.holds.forget(pod.UID) {
		t.Error("a deleted pod's hold is still recorded")
	}
	pl.onHoldUpdate(klog.Background(), mkPod("gone", "1", ""))
	expectNoneAllowed(t, w)
}

func TestPreBindFailsForADeletedNode(t *testing.T) {
	there := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "prebind-there", Annotations: map[string]string{Annotation: "1"}}}
	pl := holdPlugin(newFakeWaiting(), there)
	pod := mkPod("p", "1", "")
	pl.Reserve(context.Background(), nil, pod, "prebind-there")
	if s := pl.PreBind(context.Background(), nil, pod, "prebind-there"); !s.IsSuccess() {
		t.Errorf("PreBind on an existing node with room = %v", s)
	}
	s := pl.PreBind(context.Background(), nil, pod, "prebind-gone")
	want := "NetworkSlots PreBind: node prebind-gone no longer exists"
	if prebindNoRecheck.On() {
		if !s.IsSuccess() {
			t.Errorf("mutant PreBind on a deleted node = %v, want Success (no re-check)", s)
		}
		return
	}
	if s.Code() != fwk.Error || s.Message() != want {
		t.Errorf("PreBind on a deleted node = %v, want Error %q", s, want)
	}
}

func TestHoldTimeoutArgument(t *testing.T) {
	for _, bad := range []string{`{"holdTimeoutSeconds":0}`, `{"holdTimeoutSeconds":901}`} {
		if _, err := decodeArgs(rawArgs(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	a, err := decodeArgs(rawArgs(`{"holdTimeoutSeconds":120}`))
	if err != nil || a.HoldTimeoutSeconds != 120 {
		t.Errorf("holdTimeoutSeconds 120 = %+v, %v", a, err)
	}
}

func rawArgs(js string) *runtime.Unknown {
	return &runtime.Unknown{Raw: []byte(js), ContentType: runtime.ContentTypeJSON}
}

func TestAFreshPluginCountsPodsBoundBeforeItStarted(t *testing.T) {
	if memoryOnlyLedger.On() {
		t.Skip("the memory-only-ledger mutant build forgets pods bound before it started")
	}
	// A restarted scheduler: its ledger is empty until the informer lists the
	// bound pods, but its snapshot already shows them. A 2-slot node with a
	// bound holder and a reservation of the new process is full.
	pl := holdPlugin(newFakeWaiting())
	node := mkNode("restart-n", 2)
	bound := mkPod("bound-before", "1", "")
	bound.Spec.NodeName = "restart-n"
	node.AddPod(bound)
	held := mkPod("held-again", "1", FaultPermitHold)
	pl.Reserve(context.Background(), nil, held, "restart-n")
	if s := pl.Filter(context.Background(), nil, mkPod("third", "1", ""), node); s.Code() != fwk.Unschedulable {
		t.Errorf("Filter of a full node before the ledger is rebuilt = %v, want Unschedulable", s)
	}
	// The informer's initial list then rebuilds the bound holding.
	pl.onPodAddOrUpdate(klog.Background(), bound)
	expectUsage(t, pl.ledger, "restart-n", 1, 1)
	if s := pl.Filter(context.Background(), nil, mkPod("third", "1", ""), node); s.Code() != fwk.Unschedulable {
		t.Errorf("Filter of a full node after the ledger is rebuilt = %v, want Unschedulable", s)
	}
}
