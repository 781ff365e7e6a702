package main

// Hard topology spread (whenUnsatisfiable: DoNotSchedule), judged by upstream's own PodTopologySpread plugin
// of the pin: its PreFilter and Filter run on a snapshot of the nodes and the bound pods, as the scheduler's
// own cycle runs them.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
)

// The plugin's parallel loop reports to the scheduler's metrics, which must exist first.
var registerMetrics sync.Once

// hardSpread lists the pod's DoNotSchedule constraints.
func hardSpread(p *v1.Pod) []v1.TopologySpreadConstraint {
	var out []v1.TopologySpreadConstraint
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == v1.DoNotSchedule {
			out = append(out, c)
		}
	}
	return out
}

// spreadFilter is upstream's PodTopologySpread filter for pod on each of nodes, the pods others bound
// where they are: node name -> the plugin's reason, "" where it passes.
func spreadFilter(pod *v1.Pod, nodes []*v1.Node, others []*v1.Pod) (map[string]string, error) {
	return filterEach(pod, nodes, others, func(ctx context.Context, h fwk.Handle) (fwk.Plugin, error) {
		pl, err := podtopologyspread.New(ctx, &config.PodTopologySpreadArgs{DefaultingType: config.ListDefaulting},
			h, feature.Features{EnableNodeInclusionPolicyInPodTopologySpread: true,
				EnableMatchLabelKeysInPodTopologySpread: true})
		if err != nil {
			return nil, fmt.Errorf("PodTopologySpread: %w", err)
		}
		return pl, nil
	}, func(s *fwk.Status) string { return strings.Join(s.Reasons(), "; ") })
}

// uncounted says why the end state cannot stand for p's constraints at its bind time ("" when it can): a
// bound pod they count that does not carry the same constraint (or, unless the constraint ignores node
// affinity, the same node selection; unless it ignores taints, the same tolerations) moves the domains' counts
// or the domains themselves outside the rule. Then every placement kept the skew within maxSkew, and the
// end state does too, provided no counted pod was deleted and no domain added after the pods came.
func uncounted(p *v1.Pod, bound []*v1.Pod) string {
	for _, c := range hardSpread(p) {
		if len(c.MatchLabelKeys) > 0 {
			return "a constraint with matchLabelKeys"
		}
		selector, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return "its label selector: " + err.Error()
		}
		for _, q := range bound {
			if q == p || q.Namespace != p.Namespace || !selector.Matches(labels.Set(q.Labels)) {
				continue
			}
			if !carries(q, c) {
				return fmt.Sprintf("pod %s, which its constraint on %s counts, does not carry it", key(q), c.TopologyKey)
			}
			honor := v1.NodeInclusionPolicyHonor
			if (c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == honor) && !equality.Semantic.DeepEqual(
				nodeSelection(p), nodeSelection(q)) {
				return fmt.Sprintf("pod %s, which its constraint on %s counts, selects other nodes", key(q), c.TopologyKey)
			}
			if c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == honor &&
				!equality.Semantic.DeepEqual(p.Spec.Tolerations, q.Spec.Tolerations) {
				return fmt.Sprintf("pod %s, which its constraint on %s counts, tolerates other taints", key(q), c.TopologyKey)
			}
		}
	}
	return ""
}

func carries(q *v1.Pod, c v1.TopologySpreadConstraint) bool {
	for _, d := range q.Spec.TopologySpreadConstraints {
		if equality.Semantic.DeepEqual(c, d) {
			return true
		}
	}
	return false
}

func nodeSelection(p *v1.Pod) []any {
	var required *v1.NodeSelector
	if p.Spec.Affinity != nil && p.Spec.Affinity.NodeAffinity != nil {
		required = p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return []any{p.Spec.NodeSelector, required}
}

// spreadCounts describes, for the reader of a violation, how many pods each domain of p's constraints holds
// that the constraint's selector matches (p's own namespace): "kubernetes.io/hostname: a=2 b=0".
func spreadCounts(p *v1.Pod, nodes []*v1.Node, bound []*v1.Pod) string {
	var parts []string
	for _, c := range hardSpread(p) {
		selector, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			continue
		}
		count := map[string]int{}
		where := map[string]string{}
		for _, n := range nodes {
			if v, ok := n.Labels[c.TopologyKey]; ok {
				count[v] += 0
				where[n.Name] = v
			}
		}
		for _, q := range bound {
			if v, ok := where[q.Spec.NodeName]; ok && q.Namespace == p.Namespace && selector.Matches(labels.Set(q.Labels)) {
				count[v]++
			}
		}
		values := make([]string, 0, len(count))
		for v := range count {
			values = append(values, v)
		}
		sort.Strings(values)
		var each []string
		for _, v := range values {
			each = append(each, fmt.Sprintf("%s=%d", v, count[v]))
		}
		if len(each) == 0 {
			each = []string{"no node has the key"}
		}
		parts = append(parts, fmt.Sprintf("%s (maxSkew %d): %s", c.TopologyKey, c.MaxSkew, strings.Join(each, " ")))
	}
	return strings.Join(parts, "; ")
}
