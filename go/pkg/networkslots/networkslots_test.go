package networkslots

import (
	"context"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func init() { registerMetrics() }

// gauge reads schedgate_network_slots{node,state}.
func gauge(t *testing.T, node string, state holdState) int64 {
	t.Helper()
	v, err := testutil.GetGaugeMetricValue(slotsGauge.WithLabelValues(node, string(state)))
	if err != nil {
		t.Fatal(err)
	}
	return int64(v)
}

// expectUsage checks the ledger totals and the gauges for node.
func expectUsage(t *testing.T, l *ledger, node string, reserved, bound int64) {
	t.Helper()
	if got := l.usageOf(node); got != (usage{reserved: reserved, bound: bound}) {
		t.Errorf("ledger usage of %s = %+v, want reserved=%d bound=%d", node, got, reserved, bound)
	}
	if r, b := gauge(t, node, stateReserved), gauge(t, node, stateBound); r != reserved || b != bound {
		t.Errorf("gauges of %s = reserved %d bound %d, want %d %d", node, r, b, reserved, bound)
	}
}

func TestLedger(t *testing.T) {
	l := newLedger()
	const n1, n2 = "ledger-n1", "ledger-n2"

	l.reserve("a", n1, 2)
	l.reserve("b", n1, 1)
	expectUsage(t, l, n1, 3, 0)
	none := map[types.UID]int64{}
	if got := l.freeWith(n1, 4, "c", none); got != 1 {
		t.Errorf("free for other pod = %d, want 1", got)
	}
	if got := l.freeWith(n1, 4, "a", none); got != 3 {
		t.Errorf("free excluding own holding = %d, want 3", got)
	}
	if got := l.freeWith(n2, 4, "a", none); got != 4 {
		t.Errorf("free on other node = %d, want 4", got)
	}
	if got := l.freeWith(n1, 2, "c", none); got != -1 {
		t.Errorf("free after capacity shrank = %d, want -1", got)
	}
	// A reservation the snapshot already shows counts once; a bound pod the
	// snapshot no longer shows (deleted) does not count at all.
	if got := l.freeWith(n1, 4, "c", map[types.UID]int64{"a": 2}); got != 1 {
		t.Errorf("free with a reserved pod also in the snapshot = %d, want 1", got)
	}
	l.markBound("gone", n1, 1)
	if got := l.freeWith(n1, 4, "c", none); got != 1 {
		t.Errorf("free with a bound holding the snapshot dropped = %d, want 1", got)
	}
	l.release("gone")

	// PostBind path.
	if !l.markBoundIfHeld("a", n1, 2) {
		t.Error("markBoundIfHeld(a) = false")
	}
	expectUsage(t, l, n1, 1, 2)
	if l.markBoundIfHeld("zzz", n1, 5) {
		t.Error("markBoundIfHeld of an unknown pod created a holding")
	}

	// Unreserve path releases only reserved holdings.
	l.releaseReserved("a")
	expectUsage(t, l, n1, 1, 2)
	l.releaseReserved("b")
	l.releaseReserved("b") // idempotent
	expectUsage(t, l, n1, 0, 2)

	// Re-recording moves a holding between nodes.
	l.markBound("a", n2, 3)
	expectUsage(t, l, n1, 0, 0)
	expectUsage(t, l, n2, 0, 3)
	if got := l.held(n2); got != 3 {
		t.Errorf("held(n2) = %d, want 3", got)
	}

	l.release("a")
	l.release("a")
	expectUsage(t, l, n2, 0, 0)
	if len(l.holders) != 0 || len(l.perNode) != 0 {
		t.Errorf("ledger not empty: %+v %+v", l.holders, l.perNode)
	}
}

func mkNode(name string, slots int) *framework.NodeInfo {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
	if slots >= 0 {
		node.Annotations[Annotation] = strconv.Itoa(slots)
	}
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	return ni
}

func mkPod(uid string, slots string, fault string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid), Annotations: map[string]string{}}}
	if slots != "" {
		pod.Annotations[Annotation] = slots
	}
	if fault != "" {
		pod.Annotations[FaultAnnotation] = fault
	}
	return pod
}

func TestPluginFlow(t *testing.T) {
	ctx := context.Background()
	pl := &Plugin{args: Args{PermitTimeoutSeconds: 2}, ledger: newLedger()}
	small, big, none := mkNode("flow-small", 2), mkNode("flow-big", 5), mkNode("flow-none", -1)

	if _, s := pl.PreFilter(ctx, nil, mkPod("u", "", ""), nil); !s.IsSkip() {
		t.Errorf("PreFilter(unmanaged) = %v, want Skip", s)
	}
	if _, s := pl.PreFilter(ctx, nil, mkPod("u", "0", ""), nil); !s.IsSkip() {
		t.Errorf("PreFilter(0 slots) = %v, want Skip", s)
	}
	if _, s := pl.PreFilter(ctx, nil, mkPod("u", "x", ""), nil); s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("PreFilter(malformed) = %v", s)
	}
	if s := pl.PreScore(ctx, nil, mkPod("u", "", ""), nil); !s.IsSkip() {
		t.Errorf("PreScore(unmanaged) = %v, want Skip", s)
	}

	p1 := mkPod("p1", "2", "")
	if _, s := pl.PreFilter(ctx, nil, p1, nil); !s.IsSuccess() {
		t.Fatalf("PreFilter = %v", s)
	}
	for _, ni := range []*framework.NodeInfo{small, big} {
		if s := pl.Filter(ctx, nil, p1, ni); !s.IsSuccess() {
			t.Errorf("Filter(%s) = %v", ni.Node().Name, s)
		}
	}
	if s := pl.Filter(ctx, nil, p1, none); s.Code() != fwk.Unschedulable || s.Message() != msgNoFreeSlot {
		t.Errorf("Filter(no annotation) = %v", s)
	}
	if v, _ := testutil.GetGaugeMetricValue(capacityGauge.WithLabelValues("flow-big")); v != 5 {
		t.Errorf("capacity gauge = %v, want 5", v)
	}

	// Packing: the small node (0 left) beats the big one (3 left).
	scores := fwk.NodeScoreList{}
	for _, ni := range []*framework.NodeInfo{small, big} {
		sc, s := pl.Score(ctx, nil, p1, ni)
		if !s.IsSuccess() {
			t.Fatal(s)
		}
		scores = append(scores, fwk.NodeScore{Name: ni.Node().Name, Score: sc})
	}
	pl.NormalizeScore(ctx, nil, p1, scores)
	if scores[0].Score != fwk.MaxNodeScore || scores[1].Score != 0 {
		t.Errorf("normalized scores = %+v", scores)
	}

	// Reserve on small; now it is full for others but not for p1 itself.
	pl.Reserve(ctx, nil, p1, "flow-small")
	if s := pl.Filter(ctx, nil, p1, small); !s.IsSuccess() {
		t.Errorf("Filter(own holding) = %v", s)
	}
	p2 := mkPod("p2", "1", "")
	if s := pl.Filter(ctx, nil, p2, small); s.Code() != fwk.Unschedulable {
		t.Errorf("Filter(full node) = %v", s)
	}

	// Unreserve releases (normal build) or leaks (mutant build).
	pl.Unreserve(ctx, nil, p1, "flow-small")
	wantReserved := int64(0)
	if leakyUnreserve.On() {
		wantReserved = 2
	}
	expectUsage(t, pl.ledger, "flow-small", wantReserved, 0)

	// Reserve + PostBind -> bound.
	pl.Reserve(ctx, nil, p2, "flow-big")
	pl.PostBind(ctx, nil, p2, "flow-big")
	expectUsage(t, pl.ledger, "flow-big", 0, 1)
	// Unreserve must not drop a bound holding.
	pl.Unreserve(ctx, nil, p2, "flow-big")
	expectUsage(t, pl.ledger, "flow-big", 0, 1)

	// Unmanaged pods never touch the ledger.
	u := mkPod("u", "", "")
	pl.Reserve(ctx, nil, u, "flow-big")
	if _, ok := pl.ledger.get("u"); ok {
		t.Error("unmanaged pod reserved")
	}
	if s := pl.preBindPreFlight(u); !s.IsSkip() {
		t.Errorf("PreBindPreFlight(unmanaged) = %v", s)
	}
	if s := pl.preBindPreFlight(p2); !s.IsSuccess() {
		t.Errorf("PreBindPreFlight(managed) = %v", s)
	}
}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	on := &Plugin{args: Args{FaultInjection: true, PermitTimeoutSeconds: 3}, ledger: newLedger()}
	off := &Plugin{args: Args{PermitTimeoutSeconds: 3}, ledger: newLedger()}

	s, d := on.Permit(ctx, nil, mkPod("a", "1", FaultPermitTimeout), "n")
	if !s.IsWait() || d.Seconds() != 3 {
		t.Errorf("permit-timeout: %v %v", s, d)
	}
	// The timeout happens once per pod; later attempts are rejected at once.
	if s, d := on.Permit(ctx, nil, mkPod("a", "1", FaultPermitTimeout), "n"); s.Code() != fwk.Unschedulable || d != 0 {
		t.Errorf("permit-timeout, second attempt: %v %v", s, d)
	}
	on.onPodDelete(klog.Background(), mkPod("a", "1", FaultPermitTimeout))
	if s, _ := on.Permit(ctx, nil, mkPod("a", "1", FaultPermitTimeout), "n"); !s.IsWait() {
		t.Errorf("permit-timeout after the pod was deleted and recreated with its UID: %v", s)
	}
	if s, _ := on.Permit(ctx, nil, mkPod("a", "1", FaultPermitReject), "n"); s.Code() != fwk.Unschedulable || s.Message() != msgPermitReject {
		t.Errorf("permit-reject: %v", s)
	}
	if s := on.PreBind(ctx, nil, mkPod("a", "1", FaultPreBindFail), "n"); s.Code() != fwk.Error || s.Message() != msgPreBindFault {
		t.Errorf("prebind-fail: %v", s)
	}
	if s := on.Bind(ctx, nil, mkPod("a", "1", FaultBindFail), "n"); s.Code() != fwk.Error || s.Message() != msgBindFault {
		t.Errorf("bind-fail: %v", s)
	}
	if s := on.Bind(ctx, nil, mkPod("a", "1", ""), "n"); !s.IsSkip() {
		t.Errorf("Bind without fault = %v, want Skip", s)
	}
	// Faults are ignored when injection is off, and for unmanaged pods.
	for _, f := range []string{FaultPermitTimeout, FaultPermitReject} {
		if s, _ := off.Permit(ctx, nil, mkPod("a", "1", f), "n"); !s.IsSuccess() {
			t.Errorf("%s with injection off: %v", f, s)
		}
	}
	if s := off.Bind(ctx, nil, mkPod("a", "1", FaultBindFail), "n"); !s.IsSkip() {
		t.Errorf("bind-fail with injection off: %v", s)
	}
	if s := on.Bind(ctx, nil, mkPod("a", "", FaultBindFail), "n"); !s.IsSkip() {
		t.Errorf("bind-fail on unmanaged pod: %v", s)
	}
}

func TestPodEvents(t *testing.T) {
	pl := &Plugin{ledger: newLedger()}
	logger := klog.Background()
	pod := mkPod("ev", "3", "")

	pl.onPodAddOrUpdate(logger, pod) // not yet on a node: ignored
	expectUsage(t, pl.ledger, "ev-node", 0, 0)

	pl.ledger.reserve(pod.UID, "ev-node", 3)
	bound := pod.DeepCopy()
	bound.Spec.NodeName = "ev-node"
	pl.onPodAddOrUpdate(logger, bound)
	expectUsage(t, pl.ledger, "ev-node", 0, 3)

	pl.onPodDelete(logger, cache.DeletedFinalStateUnknown{Key: "ns/ev", Obj: bound})
	expectUsage(t, pl.ledger, "ev-node", 0, 0)

	// A bound pod seen at start-up rebuilds the ledger; finishing releases it.
	pl.onPodAddOrUpdate(logger, bound)
	expectUsage(t, pl.ledger, "ev-node", 0, 3)
	done := bound.DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	pl.onPodAddOrUpdate(logger, done)
	expectUsage(t, pl.ledger, "ev-node", 0, 0)
}

func TestDecodeArgs(t *testing.T) {
	a, err := decodeArgs(nil)
	if err != nil || a != (Args{PermitTimeoutSeconds: 2, HoldTimeoutSeconds: 30}) {
		t.Errorf("nil args = %+v, %v", a, err)
	}
	a, err = decodeArgs(&runtime.Unknown{Raw: []byte(`{"faultInjection":true}`), ContentType: runtime.ContentTypeJSON})
	if err != nil || a != (Args{FaultInjection: true, PermitTimeoutSeconds: 2, HoldTimeoutSeconds: 30}) {
		t.Errorf("partial args = %+v, %v", a, err)
	}
	a, err = decodeArgs(&runtime.Unknown{Raw: []byte(`{"faultInjection":true,"permitTimeoutSeconds":7}`)})
	if err != nil || a != (Args{FaultInjection: true, PermitTimeoutSeconds: 7, HoldTimeoutSeconds: 30}) {
		t.Errorf("full args = %+v, %v", a, err)
	}
	if _, err := decodeArgs(&runtime.Unknown{Raw: []byte(`{"permitTimeoutSeconds":0}`)}); err == nil {
		t.Error("permitTimeoutSeconds 0 accepted")
	}
}

func TestEventsToRegister(t *testing.T) {
	evs, err := (&Plugin{}).EventsToRegister(context.Background())
	if err != nil || len(evs) != 3 {
		t.Fatalf("EventsToRegister = %v, %v", evs, err)
	}
	if e := evs[0].Event; e.Resource != fwk.Node || e.ActionType&fwk.UpdateNodeAnnotation == 0 || e.ActionType&fwk.Add == 0 {
		t.Errorf("node event = %+v", e)
	}
	if e := evs[1].Event; e.Resource != fwk.Pod || e.ActionType != fwk.Delete {
		t.Errorf("pod event = %+v", e)
	}
	if e := evs[2].Event; e.Resource != fwk.Pod || e.ActionType != fwk.Update || evs[2].QueueingHintFn == nil {
		t.Errorf("pod update event = %+v", evs[2])
	}
}

func TestOwnAnnotationChangeRequeuesOnlyThatPod(t *testing.T) {
	mk := func(uid string, ann map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Annotations: ann}}
	}
	target := mk("a", map[string]string{Annotation: "1", FaultAnnotation: FaultPermitReject})
	cases := []struct {
		name     string
		old, new *v1.Pod
		want     fwk.QueueingHint
	}{
		{"fault lifted", target, mk("a", map[string]string{Annotation: "1"}), fwk.Queue},
		{"request lowered", target, mk("a", map[string]string{Annotation: "0", FaultAnnotation: FaultPermitReject}), fwk.Queue},
		{"unrelated annotation", target, mk("a", map[string]string{Annotation: "1", FaultAnnotation: FaultPermitReject, "x": "y"}), fwk.QueueSkip},
		{"another pod", mk("b", nil), mk("b", map[string]string{Annotation: "1"}), fwk.QueueSkip},
	}
	for _, c := range cases {
		got, err := isOwnAnnotationChange(klog.Background(), target, c.old, c.new)
		if err != nil || got != c.want {
			t.Errorf("%s: hint = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}
