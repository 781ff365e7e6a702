// Package gang is the Gang scheduling-framework plugin: a group of pods is
// admitted whole or not at all, through Permit.
//
// A pod joins a group with the label schedgate.io/gang (the group's name, in
// the pod's namespace) and says how many members the group needs with the
// label schedgate.io/gang-min. The plugin
//
//   - refuses a member at PreFilter while fewer than min members of its group
//     exist (UnschedulableAndUnresolvable: no node can change that);
//   - holds each member that passed Filter and Reserve at Permit (Wait) until
//     min members are waiting or bound, then lets them all go at once;
//   - rejects every waiting member of the group when one of them is rejected
//     (the Permit timeout, permitTimeoutSeconds, default 30; a member deleted
//     while waiting; a later failure) — Unreserve of one is the group's
//     rollback, so no member keeps a reservation the group cannot use;
//   - at PostFilter (a member that fits nowhere) rejects the members already
//     waiting, so two groups each holding part of the same nodes do not
//     deadlock: the one that still fits completes.
//
// A member rejected after it waited keeps the status.nominatedNodeName the
// scheduler gave it while it waited, at times (the scheduler's own clearing
// of it can be lost), and a nominated pod keeps its room on that node for
// pods of its priority or lower: the group's nodes would stay taken by pods
// that wait for nothing. The rollback therefore clears the nomination of
// every member it rejected, when the stale one lands.
//
// A member that starts waiting activates its unscheduled siblings, so a
// group does not wait on the queue's backoff to complete. A member refused
// or rejected by this plugin is tried again when a member joins its group
// (a member that fit nowhere, when room opens, as any pod).
package gang

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"schedgate/pkg/mutant"
)

const (
	// Name is the plugin name used in the registry and in configurations.
	Name = "Gang"
	// GroupLabel on a pod names its group (in the pod's namespace).
	GroupLabel = "schedgate.io/gang"
	// MinLabel on a pod is how many members its group needs to be admitted.
	MinLabel = "schedgate.io/gang-min"

	defaultPermitTimeout = 30
	maxPermitTimeout     = 15 * 60 // the framework's own ceiling for a Permit wait
)

// The mutants of this plugin (see schedgate/pkg/mutant). THESE ARE
// DELIBERATELY BROKEN BUILDS for mutation testing.
var (
	// earlyPermit lets every member through Permit at once: members bind
	// before the group is complete, and a group that never completes holds
	// the nodes of the members that did bind.
	earlyPermit = mutant.Define(Name, "gang-early-permit",
		"Permit lets each member bind at once, before the group is complete")
	// noTimeout waits at Permit for the framework's ceiling (15 minutes)
	// instead of permitTimeoutSeconds: an incomplete group keeps its
	// reservations, starving pods that would fit.
	noTimeout = mutant.Define(Name, "gang-permit-never-times-out",
		"Permit waits 15 minutes instead of permitTimeoutSeconds")
	// noRollback leaves the rest of the group waiting when one member is
	// rejected (deleted while waiting, timed out, failed later): each keeps
	// its reservation until its own timeout.
	noRollback = mutant.Define(Name, "gang-no-rollback",
		"a rejected member leaves the rest of its group waiting at Permit")
)

// Args are the plugin arguments (pluginConfig[].args).
type Args struct {
	// PermitTimeoutSeconds is how long a member waits at Permit for its group.
	PermitTimeoutSeconds int `json:"permitTimeoutSeconds"`
}

// Plugin implements Gang.
type Plugin struct {
	handle  fwk.Handle
	pods    corelisters.PodLister
	timeout time.Duration

	mu       sync.Mutex
	rejected map[types.UID]bool // members rejected after Reserve, whose nomination is cleared if it lands
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.PermitPlugin      = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}

	_ frameworkruntime.PluginFactory = New

	waitingGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "schedgate_gang_waiting_pods",
		Help:           "Members of a group waiting at Permit for the rest of it, by namespace and group.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "group"})
	admittedCounter = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "schedgate_gang_admitted_total",
		Help:           "Groups let through Permit whole, by namespace and group.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "group"})
	registerOnce sync.Once
)

// New is the plugin factory.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	if err := mutant.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	args := Args{PermitTimeoutSeconds: defaultPermitTimeout}
	if obj != nil {
		if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
			return nil, fmt.Errorf("decoding %s args: %w", Name, err)
		}
	}
	if args.PermitTimeoutSeconds <= 0 || args.PermitTimeoutSeconds > maxPermitTimeout {
		return nil, fmt.Errorf("%s args: permitTimeoutSeconds must be 1..%d, got %d", Name, maxPermitTimeout,
			args.PermitTimeoutSeconds)
	}
	if h == nil || h.SharedInformerFactory() == nil {
		return nil, fmt.Errorf("%s needs a shared informer factory", Name)
	}
	registerOnce.Do(func() { legacyregistry.MustRegister(waitingGauge, admittedCounter) })
	timeout := time.Duration(args.PermitTimeoutSeconds) * time.Second
	if noTimeout.On() {
		timeout = maxPermitTimeout * time.Second
	}
	klog.FromContext(ctx).V(2).Info("Gang plugin built", "mutant", mutant.Active(), "permitTimeout", timeout)
	pl := &Plugin{handle: h, pods: h.SharedInformerFactory().Core().V1().Pods().Lister(), timeout: timeout,
		rejected: map[types.UID]bool{}}
	logger := klog.FromContext(ctx)
	_, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) {
			if pod, ok := obj.(*v1.Pod); ok {
				pl.clearStaleNomination(logger, pod)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if pod, ok := obj.(*v1.Pod); ok {
				pl.mu.Lock()
				delete(pl.rejected, pod.UID)
				pl.mu.Unlock()
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%s: adding pod event handler: %w", Name, err)
	}
	return pl, nil
}

// Name returns the plugin name.
func (pl *Plugin) Name() string { return Name }

// group is the pod's group and the members it needs; ok is false for a pod of no group.
func group(pod *v1.Pod) (name string, min int, ok bool, err error) {
	name = pod.Labels[GroupLabel]
	if name == "" {
		return "", 0, false, nil
	}
	min, err = strconv.Atoi(pod.Labels[MinLabel])
	if err != nil || min < 1 {
		return name, 0, true, fmt.Errorf("pod %s/%s of gang %s: label %s must be a whole number >= 1, got %q",
			pod.Namespace, pod.Name, name, MinLabel, pod.Labels[MinLabel])
	}
	return name, min, true, nil
}

func sameGroup(a *v1.Pod, ns, name string) bool {
	return a.Namespace == ns && a.Labels[GroupLabel] == name
}

// members lists the group's pods that exist and are not being deleted.
func (pl *Plugin) members(ns, name string) ([]*v1.Pod, error) {
	pods, err := pl.pods.Pods(ns).List(labels.SelectorFromSet(labels.Set{GroupLabel: name}))
	if err != nil {
		return nil, err
	}
	out := pods[:0:0]
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			out = append(out, p)
		}
	}
	return out, nil
}

// PreFilter refuses a member while its group has fewer than min members.
func (pl *Plugin) PreFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	name, min, ok, err := group(pod)
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	members, err := pl.members(pod.Namespace, name)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	if len(members) < min {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("gang %s has %d of the %d members it needs", name, len(members), min))
	}
	return nil, nil
}

// PreFilterExtensions: none.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// PostFilter: a member that fits nowhere releases the members already waiting.
func (pl *Plugin) PostFilter(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	name, _, ok, _ := group(pod)
	if !ok {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	n := pl.rejectWaiting(ctx, pod, name, fmt.Sprintf("gang %s: member %s fits on no node", name, pod.Name))
	if n == 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gang %s: released %d waiting member(s)", name, n))
}

// Reserve: nothing to hold; the group's state is the framework's waiting pods.
func (pl *Plugin) Reserve(context.Context, fwk.CycleState, *v1.Pod, string) *fwk.Status { return nil }

// Unreserve rejects the rest of the group: one member's failure is the group's.
func (pl *Plugin) Unreserve(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	name, _, ok, _ := group(pod)
	if !ok {
		return
	}
	if noRollback.On() {
		return
	}
	pl.mu.Lock()
	pl.rejected[pod.UID] = true
	pl.mu.Unlock()
	if live, err := pl.pods.Pods(pod.Namespace).Get(pod.Name); err == nil && live.UID == pod.UID {
		pl.clearStaleNomination(klog.FromContext(ctx), live)
	}
	pl.rejectWaiting(ctx, pod, name, fmt.Sprintf("gang %s: member %s was rejected", name, pod.Name))
}

// waitingSiblings are the members of pod's group, pod itself aside, waiting at Permit.
func (pl *Plugin) waitingSiblings(pod *v1.Pod, name string) []fwk.WaitingPod {
	var waiting []fwk.WaitingPod
	pl.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if p := wp.GetPod(); sameGroup(p, pod.Namespace, name) && p.UID != pod.UID {
			waiting = append(waiting, wp)
		}
	})
	return waiting
}

// rejectWaiting rejects every waiting member of the group but pod; returns how many.
func (pl *Plugin) rejectWaiting(ctx context.Context, pod *v1.Pod, name, msg string) int {
	waiting := pl.waitingSiblings(pod, name)
	for _, wp := range waiting {
		wp.Reject(Name, msg)
	}
	if len(waiting) > 0 {
		klog.FromContext(ctx).V(3).Info("Gang: rejected the waiting members", "gang", name, "count", len(waiting), "why", msg)
	}
	waitingGauge.WithLabelValues(pod.Namespace, name).Set(0)
	return len(waiting)
}

// Permit lets the group through once min members are waiting or bound; until then the member waits.
func (pl *Plugin) Permit(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ string) (*fwk.Status, time.Duration) {
	name, min, ok, err := group(pod)
	if !ok {
		return nil, 0
	}
	if err != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error()), 0
	}
	if earlyPermit.On() {
		return nil, 0
	}
	pl.mu.Lock()
	delete(pl.rejected, pod.UID) // waiting again: the nomination it gets now is current
	pl.mu.Unlock()
	waiting := pl.waitingSiblings(pod, name)
	members, err := pl.members(pod.Namespace, name)
	if err != nil {
		return fwk.AsStatus(err), 0
	}
	bound := 0
	for _, m := range members {
		if m.Spec.NodeName != "" && m.UID != pod.UID {
			bound++
		}
	}
	ready := 1 + len(waiting) + bound
	if ready >= min {
		for _, wp := range waiting {
			wp.Allow(Name)
		}
		waitingGauge.WithLabelValues(pod.Namespace, name).Set(0)
		admittedCounter.WithLabelValues(pod.Namespace, name).Inc()
		klog.FromContext(ctx).V(3).Info("Gang: group complete", "gang", name, "ready", ready, "min", min)
		return nil, 0
	}
	pl.activateSiblings(state, pod, members, waiting)
	waitingGauge.WithLabelValues(pod.Namespace, name).Set(float64(1 + len(waiting)))
	return fwk.NewStatus(fwk.Wait, fmt.Sprintf("gang %s: %d of %d members ready", name, ready, min)), pl.timeout
}

// clearStaleNomination removes the nomination of a member this plugin rejected that is neither bound
// nor waiting again (see the package comment).
func (pl *Plugin) clearStaleNomination(logger klog.Logger, pod *v1.Pod) {
	if pod.Status.NominatedNodeName == "" || pod.Spec.NodeName != "" {
		return
	}
	pl.mu.Lock()
	stale := pl.rejected[pod.UID]
	delete(pl.rejected, pod.UID)
	pl.mu.Unlock()
	if !stale || pl.handle.GetWaitingPod(pod.UID) != nil {
		return
	}
	go func() {
		patch := []byte(`{"status":{"nominatedNodeName":null}}`)
		_, err := pl.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(context.Background(), pod.Name,
			types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		logger.V(3).Info("Gang: cleared the nomination of a rejected member", "pod", klog.KObj(pod),
			"node", pod.Status.NominatedNodeName, "err", err)
	}()
}

// activateSiblings asks the queue to retry the group's unscheduled members now, not after their backoff.
func (pl *Plugin) activateSiblings(state fwk.CycleState, pod *v1.Pod, members []*v1.Pod, waiting []fwk.WaitingPod) {
	c, err := state.Read(framework.PodsToActivateKey)
	if err != nil {
		return
	}
	s, ok := c.(*framework.PodsToActivate)
	if !ok {
		return
	}
	isWaiting := map[string]bool{}
	for _, wp := range waiting {
		isWaiting[string(wp.GetPod().UID)] = true
	}
	s.Lock()
	defer s.Unlock()
	for _, m := range members {
		if m.UID != pod.UID && m.Spec.NodeName == "" && !isWaiting[string(m.UID)] {
			s.Map[m.Namespace+"/"+m.Name] = m
		}
	}
}

// EventsToRegister: a member refused because its group was short, or rejected with it, may go on when
// another member of its group is added. (Not on a pod deleted: the scheduler itself sends that when it
// forgets the pods this plugin rejected, and a group that cannot complete would take its nodes again.)
func (pl *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add}, QueueingHintFn: isGroupMemberAdded},
	}, nil
}

func isGroupMemberAdded(_ klog.Logger, pod *v1.Pod, _, newObj interface{}) (fwk.QueueingHint, error) {
	added, ok := newObj.(*v1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	if name := pod.Labels[GroupLabel]; name != "" && sameGroup(added, pod.Namespace, name) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
