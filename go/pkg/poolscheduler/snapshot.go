package poolscheduler

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// assumedPod is a pod this scheduler has chosen a node for and not yet seen
// bound: its requests count on that node so the next choices see them.
type assumedPod struct {
	key      string
	node     string
	requests v1.ResourceList
}

// PodRequests is what the pod takes from its node: its effective requests,
// counting init containers and overhead.
func PodRequests(pod *v1.Pod) v1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// terminal says whether the pod has finished and no longer uses its node.
func terminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// NodeInfos puts on each node the bound pods that have not finished, plus the
// assumed pods not among them, in the order of nodes.
func NodeInfos(nodes []*v1.Node, pods []*v1.Pod, assumed map[types.UID]assumedPod) []NodeInfo {
	infos := make([]NodeInfo, len(nodes))
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		infos[i] = NodeInfo{Node: n, Requested: v1.ResourceList{}}
		index[n.Name] = i
	}
	place := func(node string, requests v1.ResourceList) {
		if i, ok := index[node]; ok {
			addTo(infos[i].Requested, requests)
			infos[i].Pods++
		}
	}
	bound := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		bound[p.UID] = true
		if !terminal(p) {
			place(p.Spec.NodeName, PodRequests(p))
		}
	}
	for uid, a := range assumed {
		if !bound[uid] {
			place(a.node, a.requests)
		}
	}
	return infos
}
