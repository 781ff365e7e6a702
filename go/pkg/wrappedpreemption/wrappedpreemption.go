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

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
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
	p := &plugin{inner}
	inner.Evaluator = preemption.NewEvaluator(Name, h, p, inner.Executor)
	return p, nil
}
