//go:build !kubernetes1.35 && !kubernetes1.36

// Package wrappedaffinity is upstream's NodeAffinity (the pinned module's own plugin) registered under a name
// of its own, so that a mutant build can break it without touching upstream's: the mutant
// affinity-ignores-matchfields judges a pod as if its required terms had no matchFields (a term left empty
// is dropped, and with none left the pod has no required node affinity). The mutant's configuration enables
// it in NodeAffinity's place (clusters/mutants/affinity-ignores-matchfields.yaml); in the correct build it is
// upstream's plugin unchanged. Built on 1.37's framework API; an older pin's build refuses to make it.
package wrappedaffinity

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
)

type plugin struct {
	*nodeaffinity.NodeAffinity
}

func (p *plugin) Name() string { return Name }

// PreFilter is upstream's, for the pod as the mutant reads it.
func (p *plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return p.NodeAffinity.PreFilter(ctx, state, read(pod), nodes)
}

// Filter is upstream's, for the pod as the mutant reads it.
func (p *plugin) Filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	return p.NodeAffinity.Filter(ctx, state, read(pod), nodeInfo)
}

// read is the pod itself, or in the mutant a copy whose required terms have lost their matchFields.
func read(pod *v1.Pod) *v1.Pod {
	a := pod.Spec.Affinity
	if !IgnoresMatchFields.On() || a == nil || a.NodeAffinity == nil ||
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return pod
	}
	out := pod.DeepCopy()
	req := out.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	var terms []v1.NodeSelectorTerm
	for _, t := range req.NodeSelectorTerms {
		t.MatchFields = nil
		if len(t.MatchExpressions) > 0 {
			terms = append(terms, t)
		}
	}
	if len(terms) == 0 {
		out.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
	} else {
		req.NodeSelectorTerms = terms
	}
	return out
}

// New is upstream's NodeAffinity with its default arguments.
func New(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	inner, err := nodeaffinity.New(ctx, &config.NodeAffinityArgs{}, h,
		feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	if err != nil {
		return nil, err
	}
	return &plugin{NodeAffinity: inner.(*nodeaffinity.NodeAffinity)}, nil
}
