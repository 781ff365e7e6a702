package poolscheduler

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

const (
	// ResourceGPU is the extended resource a GPU node offers.
	ResourceGPU v1.ResourceName = "nvidia.com/gpu"

	// Stable reasons a node does not fit, relied upon by tests and users
	// (see Message for how they are counted). Where kube-scheduler has a
	// reason for the same check, the text is kube-scheduler's, so a message
	// pattern written for one matches the other.
	ReasonDeleting      = "node(s) were being deleted"
	ReasonUnschedulable = "node(s) were unschedulable"
	ReasonAffinity      = "node(s) didn't match Pod's node affinity/selector"
	ReasonPool          = "node(s) were not in the pod's tenant pool"
	ReasonTooManyPods   = "Too many pods"
)

// ReasonTaint is the reason for a node with a taint the pod does not tolerate.
func ReasonTaint(t v1.Taint) string {
	return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
}

// ReasonInsufficient is the reason for a node without enough of resource r.
func ReasonInsufficient(r v1.ResourceName) string {
	return fmt.Sprintf("Insufficient %s", r)
}

// Labels names the labels that tie tenants to pools.
type Labels struct {
	// Tenant is the pod label naming the pod's tenant.
	Tenant string
	// Pool is the node label naming the tenant pool the node belongs to.
	Pool string
}

// NodeInfo is a node with what is already placed on it: the bound pods that
// have not finished and the pods assumed onto it and not yet seen bound.
type NodeInfo struct {
	Node *v1.Node
	// Requested sums the requests of the pods placed on the node.
	Requested v1.ResourceList
	// Pods counts the pods placed on the node.
	Pods int64
}

// unschedulableTaint is what spec.unschedulable counts as.
var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// Fit says why the pod, requesting podReq, does not fit the node ("" when it
// fits). The checks run in a fixed order and the first failing one is the
// node's reason.
func Fit(pod *v1.Pod, podReq v1.ResourceList, ni NodeInfo, l Labels) string {
	node := ni.Node
	if node.DeletionTimestamp != nil {
		return ReasonDeleting
	}
	if node.Spec.Unschedulable && !corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, &unschedulableTaint, false) {
		return ReasonUnschedulable
	}
	if taint, found := untoleratedTaint(pod, node); found {
		return ReasonTaint(taint)
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !ok {
		return ReasonAffinity
	}
	if !inPool(pod, node, l) {
		return ReasonPool
	}
	if r, short := insufficient(podReq, ni); short {
		return ReasonInsufficient(r)
	}
	if max, ok := node.Status.Allocatable[v1.ResourcePods]; ok && ni.Pods+1 > max.Value() {
		return ReasonTooManyPods
	}
	return ""
}

// untoleratedTaint is the first NoSchedule or NoExecute taint of the node
// the pod does not tolerate.
func untoleratedTaint(pod *v1.Pod, node *v1.Node) (v1.Taint, bool) {
	return corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
		func(t *v1.Taint) bool {
			return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
		}, false)
}

// inPool says whether the node's pool admits the pod's tenant: a tenant pod
// needs a node of its own pool, a pod of no tenant a node of no pool.
func inPool(pod *v1.Pod, node *v1.Node, l Labels) bool {
	tenant := pod.Labels[l.Tenant]
	pool := node.Labels[l.Pool]
	return tenant == pool
}

// insufficient is the first resource, in name order, of which the node has
// less left than the pod requests. A resource missing from the node's
// allocatable counts as none.
func insufficient(podReq v1.ResourceList, ni NodeInfo) (v1.ResourceName, bool) {
	for _, r := range sortedNames(podReq) {
		want := podReq[r]
		if want.IsZero() || (r == ResourceGPU && ignoresGPUCapacity.On()) {
			continue
		}
		free := ni.Node.Status.Allocatable[r].DeepCopy()
		free.Sub(ni.Requested[r])
		if want.Cmp(free) > 0 {
			return r, true
		}
	}
	return "", false
}

// sortedNames lists the resources of list in name order.
func sortedNames(list v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(list))
	for r := range list {
		names = append(names, r)
	}
	slices.Sort(names)
	return names
}

// addTo adds list into sum.
func addTo(sum, list v1.ResourceList) {
	for r, q := range list {
		total := sum[r].DeepCopy()
		total.Add(q)
		sum[r] = total
	}
}
