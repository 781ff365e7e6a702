package main

// Required pod affinity, judged by upstream's own InterPodAffinity plugin of the pin: its PreFilter and Filter
// run on a snapshot of the nodes and the other bound pods, as the scheduler's own cycle runs them. Only its
// affinity verdict is taken here (anti-affinity is the podAntiAffinity check's).

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
)

// affinityTerms lists the pod's required pod affinity terms.
func affinityTerms(p *v1.Pod) []v1.PodAffinityTerm {
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAffinity == nil {
		return nil
	}
	return p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

// affinityFilter is upstream's InterPodAffinity filter for pod on each of nodes, the pods others bound where
// they are: node name -> the plugin's affinity reason, "" where its affinity terms pass.
func affinityFilter(pod *v1.Pod, nodes []*v1.Node, others []*v1.Pod) (map[string]string, error) {
	return filterEach(pod, nodes, others, func(ctx context.Context, h fwk.Handle) (fwk.Plugin, error) {
		pl, err := interpodaffinity.New(ctx, &config.InterPodAffinityArgs{HardPodAffinityWeight: 1}, h, feature.Features{})
		if err != nil {
			return nil, fmt.Errorf("InterPodAffinity: %w", err)
		}
		return pl, nil
	}, func(s *fwk.Status) string {
		for _, r := range s.Reasons() {
			if r == interpodaffinity.ErrReasonAffinityRulesNotMatch {
				return r
			}
		}
		return "" // refused for anti-affinity only: the podAntiAffinity check's
	})
}

// selfAffine says whether p matches one of its own affinity terms: upstream then lets it be the first of its
// kind anywhere, which the end state cannot tell from a violation without the order of the binds.
func selfAffine(p *v1.Pod) bool {
	for _, t := range affinityTerms(p) {
		selector, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if err != nil || selector.Matches(labels.Set(p.Labels)) {
			return true
		}
	}
	return false
}

// judgeAffinity adds a podAffinity violation for each bound pod whose required affinity upstream's filter
// refuses where it is, the other bound pods where they are. The end state stands for the bind time where no
// pod a term matches was deleted after (as in a generated scenario: pods only get added near it) and the pod
// does not match its own term (else it is named in skipped).
func judgeAffinity(out *output, nodes []*v1.Node, bound []*v1.Pod) error {
	for _, p := range bound {
		if len(affinityTerms(p)) == 0 {
			continue
		}
		if selfAffine(p) {
			out.Skipped = append(out.Skipped, fmt.Sprintf("podAffinity: pod %s: not judged: it matches its own "+
				"affinity term, which lets it be the first of its kind at the time it was bound", key(p)))
			continue
		}
		verdicts, err := affinityFilter(p, nodes, without(bound, p))
		if err != nil {
			return err
		}
		if reason := verdicts[p.Spec.NodeName]; reason != "" {
			out.Violations = append(out.Violations, Violation{Rule: "podAffinity", Pod: key(p), Node: p.Spec.NodeName,
				Detail: "upstream's filter, the other pods where they are: " + reason})
		}
	}
	return nil
}
