package poolscheduler

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// msgNoNodes is the message when the cluster has no nodes at all.
const msgNoNodes = "no nodes available to schedule pods"

// Choice is the outcome of one scheduling attempt: the chosen node, or the
// message saying why no node fits.
type Choice struct {
	// Node is the chosen node ("" when none fits).
	Node *v1.Node
	// Message says why no node fits ("" when one does).
	Message string
}

// Choose picks the least-loaded node the pod fits: the one whose highest
// share used, after adding the pod, is lowest; ties go to the first node
// name. When no node fits, the choice carries the message instead.
func Choose(pod *v1.Pod, podReq v1.ResourceList, nodes []NodeInfo, l Labels) Choice {
	if len(nodes) == 0 {
		return Choice{Message: msgNoNodes}
	}
	reasons := map[string]int{}
	var best *NodeInfo
	bestShare := 0.0
	for i := range nodes {
		ni := &nodes[i]
		if reason := Fit(pod, podReq, *ni, l); reason != "" {
			reasons[reason]++
			continue
		}
		share := Share(podReq, *ni)
		if best == nil || share < bestShare || (share == bestShare && ni.Node.Name < best.Node.Name) {
			best, bestShare = ni, share
		}
	}
	if best == nil {
		return Choice{Message: Message(len(nodes), reasons)}
	}
	return Choice{Node: best.Node}
}

// Share is the highest share of the node used, once the pod is added, over
// the resources the pod requests that the node has. A pod that requests
// nothing counts its share of the node's pod count (0 when that is unset).
func Share(podReq v1.ResourceList, ni NodeInfo) float64 {
	alloc := ni.Node.Status.Allocatable
	highest, counted := 0.0, false
	for r, want := range podReq {
		capacity, ok := alloc[r]
		if want.IsZero() || !ok || capacity.IsZero() {
			continue
		}
		used := ni.Requested[r].DeepCopy()
		used.Add(want)
		share := used.AsApproximateFloat64() / capacity.AsApproximateFloat64()
		if !counted || share > highest {
			highest, counted = share, true
		}
	}
	if counted {
		return highest
	}
	if pods, ok := alloc[v1.ResourcePods]; ok && !pods.IsZero() {
		return float64(ni.Pods+1) / float64(pods.Value())
	}
	return 0
}

// Message is the message for a pod no node fits: how many nodes gave each
// reason, sorted as text (count included, as kube-scheduler sorts them),
// e.g. "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu."
func Message(nodes int, reasons map[string]int) string {
	texts := make([]string, 0, len(reasons))
	for r, n := range reasons {
		texts = append(texts, fmt.Sprintf("%d %s", n, r))
	}
	slices.Sort(texts)
	return fmt.Sprintf("0/%d nodes are available: %s.", nodes, strings.Join(texts, ", "))
}
