package poolscheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMessage(t *testing.T) {
	for _, tc := range []struct {
		nodes   int
		reasons map[string]int
		want    string
	}{
		{6, map[string]int{ReasonInsufficient(ResourceGPU): 4, ReasonAffinity: 2},
			"0/6 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 4 Insufficient nvidia.com/gpu."},
		{1, map[string]int{ReasonUnschedulable: 1}, "0/1 nodes are available: 1 node(s) were unschedulable."},
		{4, map[string]int{
			ReasonTaint(v1.Taint{Key: "b", Value: "2"}): 1, ReasonTaint(v1.Taint{Key: "a", Value: "1"}): 1,
			ReasonPool: 1, ReasonTooManyPods: 1,
		}, "0/4 nodes are available: 1 Too many pods, 1 node(s) had untolerated taint {a: 1}, " +
			"1 node(s) had untolerated taint {b: 2}, 1 node(s) were not in the pod's tenant pool."},
	} {
		if got := Message(tc.nodes, tc.reasons); got != tc.want {
			t.Errorf("Message(%d, %v) =\n %q, want\n %q", tc.nodes, tc.reasons, got, tc.want)
		}
	}
}

func TestChooseMessageCountsEveryNode(t *testing.T) {
	gpu1 := resources("cpu", "8", "memory", "16Gi", "pods", "110", "nvidia.com/gpu", "1")
	nodes := []*v1.Node{
		makeNode("cpu-a", resources("cpu", "8", "pods", "110")),
		makeNode("cpu-b", resources("cpu", "8", "pods", "110"), nodeLabel("zone", "b")),
		makeNode("gpu-1", gpu1, nodeLabel("zone", "a")),
		makeNode("gpu-2", gpu1, nodeLabel("zone", "a")),
		makeNode("gpu-3", gpu1, nodeLabel("zone", "a"), deleting),
		makeNode("gpu-4", gpu1, nodeLabel("zone", "a"), cordoned),
	}
	pods := []*v1.Pod{
		makePod("a", resources("nvidia.com/gpu", "1"), onNode("gpu-1")),
		makePod("b", resources("nvidia.com/gpu", "1"), onNode("gpu-2")),
	}
	pod := makePod("p", resources("nvidia.com/gpu", "1"), selector("zone", "a"))
	got := Choose(pod, PodRequests(pod), NodeInfos(nodes, pods, nil), testLabels)
	want := "0/6 nodes are available: 1 node(s) were being deleted, 1 node(s) were unschedulable, " +
		"2 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector."
	if got.Node != nil || got.Message != want {
		t.Errorf("Choose = node %v, message\n %q, want no node and\n %q", got.Node, got.Message, want)
	}
	if got := Choose(pod, PodRequests(pod), nil, testLabels); got.Node != nil || got.Message != msgNoNodes {
		t.Errorf("Choose with no nodes = %v, %q", got.Node, got.Message)
	}
}

func TestChooseLeastLoaded(t *testing.T) {
	alloc := resources("cpu", "4", "memory", "8Gi", "pods", "10", "nvidia.com/gpu", "4")
	nodes := []*v1.Node{
		makeNode("c", alloc),
		makeNode("a", alloc),
		makeNode("b", alloc),
	}
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		pods    []*v1.Pod
		assumed map[string]v1.ResourceList // node -> assumed requests
		want    string
	}{
		{name: "empty nodes tie: first name", pod: makePod("p", resources("cpu", "1")), want: "a"},
		{name: "cpu used on a", pod: makePod("p", resources("cpu", "1")),
			pods: []*v1.Pod{makePod("x", resources("cpu", "1"), onNode("a"))}, want: "b"},
		{name: "highest share counts: memory on b outweighs cpu on a", pod: makePod("p", resources("cpu", "1", "memory", "1Gi")),
			pods: []*v1.Pod{
				makePod("x", resources("cpu", "1"), onNode("a")),
				makePod("y", resources("memory", "6Gi"), onNode("b")),
				makePod("z", resources("cpu", "2"), onNode("c")),
			}, want: "a"},
		{name: "resources the pod does not request do not count", pod: makePod("p", resources("nvidia.com/gpu", "1")),
			pods: []*v1.Pod{
				makePod("x", resources("cpu", "3"), onNode("a")),
				makePod("y", resources("nvidia.com/gpu", "1"), onNode("b")),
				makePod("z", resources("nvidia.com/gpu", "1"), onNode("c")),
			}, want: "a"},
		{name: "assumed pods count", pod: makePod("p", resources("cpu", "1")),
			assumed: map[string]v1.ResourceList{"a": resources("cpu", "1"), "b": resources("cpu", "2")}, want: "c"},
		{name: "pod requesting nothing: pod count share", pod: makePod("p", nil),
			pods: []*v1.Pod{makePod("x", nil, onNode("a")), makePod("y", nil, onNode("c"))}, want: "b"},
		{name: "equal shares tie on name", pod: makePod("p", resources("cpu", "1")),
			pods: []*v1.Pod{makePod("x", resources("cpu", "1"), onNode("a")), makePod("y", resources("cpu", "1"), onNode("b"))},
			want: "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assumed := map[types.UID]assumedPod{}
			for node, req := range tc.assumed {
				assumed[types.UID("assumed-"+node)] = assumedPod{node: node, requests: req}
			}
			got := Choose(tc.pod, PodRequests(tc.pod), NodeInfos(nodes, tc.pods, assumed), testLabels)
			if got.Node == nil || got.Node.Name != tc.want {
				t.Errorf("Choose = %v (%q), want %s", got.Node, got.Message, tc.want)
			}
		})
	}
}

func TestShare(t *testing.T) {
	n := makeNode("n", resources("cpu", "4", "memory", "8Gi", "pods", "4"))
	ni := NodeInfo{Node: n, Requested: resources("cpu", "1"), Pods: 1}
	for _, tc := range []struct {
		req  v1.ResourceList
		want float64
	}{
		{resources("cpu", "1"), 0.5},
		{resources("cpu", "1", "memory", "6Gi"), 0.75},
		{nil, 0.5},
		{resources("cpu", "0"), 0.5},
	} {
		if got := Share(tc.req, ni); got != tc.want {
			t.Errorf("Share(%v) = %v, want %v", tc.req, got, tc.want)
		}
	}
	if got := Share(nil, NodeInfo{Node: makeNode("m", resources("cpu", "1"))}); got != 0 {
		t.Errorf("Share without allocatable pods = %v, want 0", got)
	}
}
