//go:build !kubernetes1.35 && !kubernetes1.36

// Package wrappedpreemption is upstream's DefaultPreemption (the pinned module's own plugin) registered
// under a name of its own, so that a mutant build can break it without touching upstream's: the mutant
// preempts-equal-priority chooses victims as if its preemptor's priority were one higher, so it evicts pods
// of the preemptor's own priority, priority 0 among them. The mutant's configuration enables it in
// DefaultPreemption's place (clusters/mutants/preempts-equal-priority.yaml); in the correct build it is
// upstream's plugin unchanged. Built on the pinned minor's preemption API (1.37's); an older pin's build
// refuses to make it (wrappedpreemption_before137.go).
package wrappedpreemption

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
)

type plugin struct {
	*defaultpreemption.DefaultPreemption
	handle fwk.Handle
}

func (p *plugin) Name() string { return Name }

// SelectVictimsOnNode is upstream's; in the mutant, for a copy of the preemptor one priority higher.
func (p *plugin) SelectVictimsOnNode(ctx context.Context, state fwk.CycleState, preemptor *v1.Pod, nodeInfo fwk.NodeInfo,
	victims []*preemption.DomainVictim, pdbs []*policy.PodDisruptionBudget) ([]*v1.Pod, int, *fwk.Status) {
	if !Mutant.On() {
		return p.DefaultPreemption.SelectVictimsOnNode(ctx, state, preemptor, nodeInfo, victims, pdbs)
	}
	higher := preemptor.DeepCopy()
	priority := corev1helpers.PodPriority(preemptor) + 1
	higher.Spec.Priority = &priority
	return p.DefaultPreemption.SelectVictimsOnNode(ctx, state, higher, nodeInfo, victims, pdbs)
}

// New is upstream's DefaultPreemption with its default arguments, whose evaluator asks this plugin for
// victims.
func New(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	inner, err := defaultpreemption.New(ctx, &config.DefaultPreemptionArgs{MinCandidateNodesPercentage: 10,
		MinCandidateNodesAbsolute: 100}, h, feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	if err != nil {
		return nil, err
	}
	p := &plugin{DefaultPreemption: inner, handle: h}
	if UnmarkedVictims.On() {
		inner.Executor.PreemptPod = p.deleteUnmarked
	}
	inner.Evaluator = preemption.NewEvaluator(Name, h, p, inner.Executor)
	return p, nil
}

// deleteUnmarked is the preemption-unmarked-victims mutant's PreemptPod: upstream's delete and event, without
// the DisruptionTarget condition before them (and without preempting a waiting pod in memory).
func (p *plugin) deleteUnmarked(ctx context.Context, c preemption.Candidate, preemptor preemption.ExecutorPreemptor,
	victim *v1.Pod, _ string) (bool, error) {
	err := p.handle.ClientSet().CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	p.handle.EventRecorder().Eventf(victim, preemptor.Obj(), v1.EventTypeNormal, "Preempted", "Preempting",
		"Preempted by %s %v on node %v", preemptor.Type(), preemptor.UID(), c.Name())
	return false, nil
}

// PostFilter is upstream's; the crash-after-unschedulable mutant then waits, beside the scheduling cycle,
// for the pod's Unschedulable status and panics.
func (p *plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	result, status := p.DefaultPreemption.PostFilter(ctx, state, pod, m)
	if CrashAfterUnschedulable.On() && !status.IsSuccess() && asksForGPUs(pod) {
		go p.crashOnceUnschedulable(pod.Namespace, pod.Name)
	}
	if SilentPreemption.On() && !status.IsSuccess() {
		p.deleteUnreported(ctx, pod, m)
	}
	return result, status
}

// deleteUnreported is the silent-preemption mutant's removal: the first pod of lower priority than pod on a
// node its filters ruled out for good, deleted with no event and no condition.
func (p *plugin) deleteUnreported(ctx context.Context, pod *v1.Pod, m fwk.NodeToStatusReader) {
	nodes, err := p.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return
	}
	for _, n := range nodes {
		if n.Node() == nil || m.Get(n.Node().Name).Code() != fwk.UnschedulableAndUnresolvable {
			continue
		}
		for _, pi := range n.GetPods() {
			victim := pi.GetPod()
			if corev1helpers.PodPriority(victim) >= corev1helpers.PodPriority(pod) {
				continue
			}
			_ = p.handle.ClientSet().CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{})
			return
		}
	}
}

// asksForGPUs: the pods the crash follows (a GPU pod's path is where the defect is).
func asksForGPUs(pod *v1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if _, ok := c.Resources.Requests["nvidia.com/gpu"]; ok {
			return true
		}
	}
	return false
}

func (p *plugin) crashOnceUnschedulable(namespace, name string) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		live, err := p.handle.ClientSet().CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return
		}
		for _, c := range live.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				panic(fmt.Sprintf("%s: pod %s/%s is Unschedulable", CrashAfterUnschedulable.Name(), namespace, name))
			}
		}
	}
}
