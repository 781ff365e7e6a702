// Package networkslots is the NetworkSlots scheduling-framework plugin.
//
// Nodes advertise a number of "network slots" with the annotation
// schedgate.io/network-slots; pods request slots with the same annotation.
// The plugin keeps an in-memory ledger of which pods hold slots on which
// node, filters out nodes without enough free slots (counting the pods the
// scheduler's snapshot places there plus ledger reservations the snapshot
// does not show), scores fitting nodes so that pods are packed, and (optionally) injects faults into the permit,
// pre-bind and bind phases for testing the scheduler's failure paths.
//
// Pods without the annotation (or with 0) are not managed: PreFilter and
// PreScore return Skip so Filter and Score are not run for them, and the
// other extension points do nothing.
package networkslots

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"schedgate/pkg/mutant"
)

const (
	// Name is the plugin name used in the registry and in configurations.
	Name = "NetworkSlots"

	// Annotation holds an integer: on a Node its slot capacity (missing =
	// 0), on a Pod the slots it needs (missing or 0 = not managed).
	Annotation = "schedgate.io/network-slots"

	// FaultAnnotation on a Pod selects an injected fault; it is honoured only
	// when the plugin args set faultInjection: true.
	FaultAnnotation = "schedgate.io/fault"

	// Values of FaultAnnotation.
	FaultPermitTimeout = "permit-timeout" // once per pod; then rejected at once while it stays
	FaultPermitReject  = "permit-reject"
	FaultPreBindFail   = "prebind-fail"
	FaultBindFail      = "bind-fail"

	// Stable messages, relied upon by tests and users.
	msgNoFreeSlot   = "node(s) had no free network slot"
	msgPermitReject = "rejected by NetworkSlots fault injection"
	msgPreBindFault = "NetworkSlots PreBind fault injected"
	msgBindFault    = "NetworkSlots Bind fault injected"
	msgNodeGone     = "NetworkSlots PreBind: node %s no longer exists"

	defaultPermitTimeoutSeconds = 2
)

// Args are the plugin arguments (pluginConfig[].args).
type Args struct {
	// FaultInjection enables the schedgate.io/fault pod annotation.
	FaultInjection bool `json:"faultInjection"`
	// PermitTimeoutSeconds is how long Permit waits for a pod annotated
	// with the permit-timeout fault. Default 2.
	PermitTimeoutSeconds int `json:"permitTimeoutSeconds"`
	// HoldTimeoutSeconds is how long Permit waits for a pod annotated with
	// the permit-hold fault before rejecting it (see hold.go). Default 30.
	HoldTimeoutSeconds int `json:"holdTimeoutSeconds"`
	// SharedPool, when set, makes PreBind claim the slots in a ConfigMap
	// shared with other scheduler processes (see claim.go).
	SharedPool *SharedPool `json:"sharedPool,omitempty"`
}

// Plugin implements NetworkSlots.
//
// It deliberately does not implement fwk.SignPlugin: Filter/Score depend on
// the ledger, which changes on every Reserve, so results must not be reused
// across pods. The scheduler therefore disables pod signatures (batching)
// for any profile enabling this plugin and logs that at start-up.
type Plugin struct {
	args       Args
	ledger     *ledger
	nodeLister corelisters.NodeLister
	// timedOut holds the UIDs of pods whose injected Permit timeout has
	// happened once; their later attempts are rejected at once instead.
	timedOut sync.Map
	// holds are the pods parked at Permit by the permit-hold fault.
	holds *holds
	// shared does PreBind's holds and shared-pool claims (claim.go).
	shared *shared
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.PreScorePlugin    = &Plugin{}
	_ fwk.ScorePlugin       = &Plugin{}
	_ fwk.ScoreExtensions   = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PermitPlugin      = &Plugin{}
	_ fwk.PreBindPlugin     = &Plugin{}
	_ fwk.BindPlugin        = &Plugin{}
	_ fwk.PostBindPlugin    = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}

	// New must fit the registry's factory type.
	_ frameworkruntime.PluginFactory = New
)

// decodeArgs turns the configuration object into Args, applying defaults.
// nil means "all defaults".
func decodeArgs(obj runtime.Object) (Args, error) {
	args := Args{PermitTimeoutSeconds: defaultPermitTimeoutSeconds, HoldTimeoutSeconds: defaultHoldTimeoutSeconds}
	if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
		return Args{}, fmt.Errorf("decoding %s args: %w", Name, err)
	}
	if args.PermitTimeoutSeconds <= 0 {
		return Args{}, fmt.Errorf("%s args: permitTimeoutSeconds must be > 0, got %d", Name, args.PermitTimeoutSeconds)
	}
	if err := validateHoldTimeout(args.HoldTimeoutSeconds); err != nil {
		return Args{}, err
	}
	if err := args.SharedPool.validate(); err != nil {
		return Args{}, err
	}
	return args, nil
}

// New is the plugin factory (frameworkruntime.PluginFactory).
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	if err := mutant.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	args, err := decodeArgs(obj)
	if err != nil {
		return nil, err
	}
	factory := h.SharedInformerFactory()
	if factory == nil {
		return nil, fmt.Errorf("%s needs a shared informer factory", Name)
	}
	registerMetrics()

	pl := &Plugin{
		args:   args,
		ledger: newLedger(),
		// Asking for the lister registers the node informer with the
		// factory (the scheduler starts it after building the plugins).
		nodeLister: factory.Core().V1().Nodes().Lister(),
		holds:      newHolds(h, factory.Core().V1().Pods().Lister()),
	}
	pl.shared = newShared(args.SharedPool, h.ClientSet(), factory.Core().V1().Pods().Lister())

	// The pod informer's initial list rebuilds the ledger from bound pods;
	// later events keep it in step with the cluster. The scheduler's pod
	// informer excludes Succeeded/Failed pods, so finishing pods arrive
	// here as deletes.
	logger := klog.FromContext(ctx)
	_, err = factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { pl.onPodAddOrUpdate(logger, obj) },
		UpdateFunc: func(_, obj interface{}) { pl.onPodAddOrUpdate(logger, obj); pl.onHoldUpdate(logger, obj) },
		DeleteFunc: func(obj interface{}) { pl.onPodDelete(logger, obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("%s: adding pod event handler: %w", Name, err)
	}
	logger.V(2).Info("NetworkSlots plugin built", "mutant", mutant.Active(), "faultInjection", args.FaultInjection, "permitTimeoutSeconds", args.PermitTimeoutSeconds)
	return pl, nil
}

// Name returns the plugin name.
func (pl *Plugin) Name() string { return Name }

// ---------------------------------------------------------------------------
// Annotation parsing.

// parseSlots reads an integer annotation; missing means 0.
func parseSlots(annotations map[string]string) (int64, error) {
	s, ok := annotations[Annotation]
	if !ok || s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("annotation %s=%q is not an integer", Annotation, s)
	}
	if n < 0 {
		return 0, fmt.Errorf("annotation %s=%q is negative", Annotation, s)
	}
	return n, nil
}

// podRequest returns the slots pod asks for; 0 (also for a malformed value,
// which PreFilter reports) means the pod is not managed.
func podRequest(pod *v1.Pod) int64 {
	n, err := parseSlots(pod.Annotations)
	if err != nil {
		return 0
	}
	return n
}

// nodeCapacity returns a node's slot capacity; a malformed value counts as 0.
func nodeCapacity(node *v1.Node) int64 {
	n, err := parseSlots(node.Annotations)
	if err != nil {
		return 0
	}
	return n
}

// fault returns the injected fault for pod, or "" if fault injection is off.
func (pl *Plugin) fault(pod *v1.Pod) string {
	if !pl.args.FaultInjection {
		return ""
	}
	return pod.Annotations[FaultAnnotation]
}

// ---------------------------------------------------------------------------
// Scheduling cycle.

// PreFilter skips unmanaged pods and rejects pods with a malformed request.
func (pl *Plugin) PreFilter(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if busyPreFilter.On() {
		burnFifth()
	}
	n, err := parseSlots(pod.Annotations)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if n == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if preloadInPreFilter.On() {
		askRemote(ctx)
	}
	return nil, nil
}

// PreFilterExtensions returns nil: the ledger is not affected by the
// framework's what-if pod additions/removals.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter rejects a node whose free slots are fewer than the pod's request.
func (pl *Plugin) Filter(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeInfo.Node()
	if node == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	capacity := nodeCapacity(node)
	capacityGauge.WithLabelValues(node.Name).Set(float64(capacity))

	request := podRequest(pod)
	if slowFilter.On() && request > 0 {
		askRemote(ctx)
	}
	free := pl.freeOn(nodeInfo, pod)
	if free < request {
		klog.FromContext(ctx).V(5).Info("NetworkSlots: node lacks slots", "pod", klog.KObj(pod), "node", node.Name, "request", request, "free", free, "capacity", capacity)
		return fwk.NewStatus(fwk.Unschedulable, msgNoFreeSlot)
	}
	return nil
}

// freeOn is the node's free slot count for pod, from the scheduler's
// snapshot of the node plus this plugin's outstanding reservations.
func (pl *Plugin) freeOn(nodeInfo fwk.NodeInfo, pod *v1.Pod) int64 {
	if memoryOnlyLedger.On() {
		return pl.freeFromLedgerOnly(nodeInfo, pod)
	}
	scheduled := map[types.UID]int64{}
	for _, pi := range nodeInfo.GetPods() {
		p := pi.GetPod()
		if p.UID == pod.UID {
			continue
		}
		if n := podRequest(p); n > 0 {
			scheduled[p.UID] = n
		}
	}
	return pl.ledger.freeWith(nodeInfo.Node().Name, nodeCapacity(nodeInfo.Node()), pod.UID, scheduled)
}

// PreScore skips scoring for unmanaged pods (PreFilter's Skip only skips
// Filter).
func (pl *Plugin) PreScore(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if podRequest(pod) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// Score returns the raw number of slots that would be left free on the node
// after placing the pod; NormalizeScore turns it into 0..100 with the fewest
// left-over slots scoring highest (packing).
func (pl *Plugin) Score(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, fwk.NewStatus(fwk.Error, "node not found")
	}
	left := pl.freeOn(nodeInfo, pod) - podRequest(pod)
	if left < 0 {
		left = 0 // cannot happen for nodes that passed Filter
	}
	return left, nil
}

// ScoreExtensions returns the plugin itself for NormalizeScore.
func (pl *Plugin) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore maps left-over slots to 0..MaxNodeScore: the node(s) with
// the fewest left over get MaxNodeScore, the most get 0, linearly between.
// If all nodes tie, all get MaxNodeScore.
func (pl *Plugin) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	if len(scores) == 0 {
		return nil
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores {
		lo = min(lo, s.Score)
		hi = max(hi, s.Score)
	}
	for i := range scores {
		if hi == lo {
			scores[i].Score = fwk.MaxNodeScore
			continue
		}
		scores[i].Score = fwk.MaxNodeScore * (hi - scores[i].Score) / (hi - lo)
	}
	return nil
}

// Reserve records a reserved holding for the pod on nodeName.
func (pl *Plugin) Reserve(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if n := podRequest(pod); n > 0 {
		pl.ledger.reserve(pod.UID, nodeName, n)
		klog.FromContext(ctx).V(4).Info("NetworkSlots: reserved", "pod", klog.KObj(pod), "node", nodeName, "slots", n)
	}
	return nil
}

// Unreserve releases the pod's reserved holding. It is idempotent. In the
// leaky-unreserve mutant build (see mutant.go) it deliberately keeps the
// holding.
func (pl *Plugin) Unreserve(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodeName string) {
	if podRequest(pod) == 0 {
		return
	}
	unlockBinding(pod)
	if leakyUnreserve.On() {
		klog.FromContext(ctx).V(4).Info("NetworkSlots: mutant build, NOT releasing", "pod", klog.KObj(pod), "node", nodeName)
		return
	}
	pl.shared.unreserve(ctx, pod)
	pl.ledger.releaseReserved(pod.UID)
	klog.FromContext(ctx).V(4).Info("NetworkSlots: unreserved", "pod", klog.KObj(pod), "node", nodeName)
}

// Permit injects the permit-timeout, permit-reject and permit-hold faults.
func (pl *Plugin) Permit(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) (*fwk.Status, time.Duration) {
	if podRequest(pod) == 0 {
		return nil, 0
	}
	switch pl.fault(pod) {
	case FaultPermitTimeout:
		// The first attempt waits and nobody allows it, so it is rejected
		// after the timeout. Later attempts, while the fault stays, are
		// rejected at once: a pod timing out again and again would hold the
		// slot during every wait and starve other pods at random (seen: 5 to
		// 25 s), which no test can make a deterministic claim about.
		if _, done := pl.timedOut.LoadOrStore(pod.UID, true); done {
			return fwk.NewStatus(fwk.Unschedulable, msgPermitReject), 0
		}
		return fwk.NewStatus(fwk.Wait), time.Duration(pl.args.PermitTimeoutSeconds) * time.Second
	case FaultPermitReject:
		return fwk.NewStatus(fwk.Unschedulable, msgPermitReject), 0
	case FaultPermitHold:
		return pl.permitHold(ctx, pod)
	}
	return nil, 0
}

// ---------------------------------------------------------------------------
// Binding cycle.

// PreBind injects the prebind-fail fault and re-checks that the node still
// has capacity for everything held on it (its annotation may have shrunk
// since Filter). It reads the node from the informer, not the snapshot,
// because the snapshot must not be used in the binding cycle.
func (pl *Plugin) PreBind(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if podRequest(pod) == 0 {
		return nil
	}
	if pl.fault(pod) == FaultPreBindFail {
		return fwk.NewStatus(fwk.Error, msgPreBindFault)
	}
	if serialBind.On() {
		lockBinding(ctx, pod)
	}
	if prebindNoRecheck.On() {
		return nil
	}
	node, err := pl.nodeLister.Get(nodeName)
	if apierrors.IsNotFound(err) {
		return fwk.NewStatus(fwk.Error, fmt.Sprintf(msgNodeGone, nodeName))
	}
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("NetworkSlots PreBind: getting node %s: %w", nodeName, err))
	}
	if capacity, held := nodeCapacity(node), pl.ledger.held(nodeName); capacity < held {
		return fwk.NewStatus(fwk.Error, fmt.Sprintf("NetworkSlots PreBind: node %s has %d network slots but %d are held", nodeName, capacity, held))
	}
	if s := pl.shared.prebind(ctx, pl, pod, node); !s.IsSuccess() {
		return s
	}
	return nil
}

// Bind injects the bind-fail fault; otherwise it returns Skip so the next
// bind plugin (DefaultBinder) binds the pod.
func (pl *Plugin) Bind(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	if podRequest(pod) > 0 && pl.fault(pod) == FaultBindFail {
		return fwk.NewStatus(fwk.Error, msgBindFault)
	}
	return fwk.NewStatus(fwk.Skip)
}

// PostBind marks the pod's holding bound.
func (pl *Plugin) PostBind(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodeName string) {
	unlockBinding(pod)
	if n := podRequest(pod); n > 0 && pl.ledger.markBoundIfHeld(pod.UID, nodeName, n) {
		klog.FromContext(ctx).V(4).Info("NetworkSlots: bound", "pod", klog.KObj(pod), "node", nodeName, "slots", n)
	}
}

// ---------------------------------------------------------------------------
// Requeueing and informer events.

// EventsToRegister: a pod rejected for lack of slots may fit after a node
// appears or changes its annotation, or after a pod is deleted (which also
// covers an assumed pod that failed binding and released its slots). Nil
// hints mean "always requeue". A pod rejected by this plugin may also fit
// after its own NetworkSlots annotations change (fewer slots asked, or an
// injected fault lifted): in 1.37 an annotation-only update arrives as the
// general Pod/Update event, which wakes only plugins registered for it.
func (pl *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAnnotation}},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Update}, QueueingHintFn: isOwnAnnotationChange},
	}, nil
}

// isOwnAnnotationChange requeues a pod when an update to that same pod
// changed the annotations this plugin reads.
func isOwnAnnotationChange(_ klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldPod, okOld := oldObj.(*v1.Pod)
	newPod, okNew := newObj.(*v1.Pod)
	if !okOld || !okNew || newPod.UID != pod.UID {
		return fwk.QueueSkip, nil
	}
	for _, key := range []string{Annotation, FaultAnnotation} {
		if oldPod.Annotations[key] != newPod.Annotations[key] {
			return fwk.Queue, nil
		}
	}
	return fwk.QueueSkip, nil
}

// onPodAddOrUpdate marks a bound holding for a pod that has a node and asks
// for slots; a pod that is finished or no longer asks for slots is released.
// Pods without a node yet are left alone (their reservation, if any, belongs
// to the scheduling/binding cycle).
func (pl *Plugin) onPodAddOrUpdate(logger klog.Logger, obj interface{}) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Spec.NodeName == "" || memoryOnlyLedger.On() {
		return
	}
	n := podRequest(pod)
	if n == 0 || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		pl.ledger.release(pod.UID)
		return
	}
	if h, ok := pl.ledger.get(pod.UID); ok && h == (holding{node: pod.Spec.NodeName, slots: n, state: stateBound}) {
		return // nothing changed
	}
	pl.ledger.markBound(pod.UID, pod.Spec.NodeName, n)
	logger.V(4).Info("NetworkSlots: pod seen bound", "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "slots", n)
}

// onPodDelete releases a deleted pod's holding.
func (pl *Plugin) onPodDelete(logger klog.Logger, obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		logger.Info("NetworkSlots: unexpected object in pod delete event", "type", fmt.Sprintf("%T", obj))
		return
	}
	pl.timedOut.Delete(pod.UID)
	pl.forgetHold(pod.UID)
	pl.shared.podGone(logger, pod)
	if _, held := pl.ledger.get(pod.UID); held {
		pl.ledger.release(pod.UID)
		logger.V(4).Info("NetworkSlots: pod deleted, released", "pod", klog.KObj(pod))
	}
}

// preBindPreFlight is PreBindPreFlight's answer in every version: Skip when the pod holds no slots.
func (pl *Plugin) preBindPreFlight(pod *v1.Pod) *fwk.Status {
	if podRequest(pod) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}
