package poolscheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestFit(t *testing.T) {
	cpu4 := resources("cpu", "4", "memory", "8Gi", "pods", "110")
	gpu2 := resources("cpu", "4", "memory", "8Gi", "pods", "110", "nvidia.com/gpu", "2")
	gpuPod := func(name string, n string, opts ...podOpt) *v1.Pod {
		return makePod(name, resources("nvidia.com/gpu", n), opts...)
	}
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		node    *v1.Node
		pods    []*v1.Pod
		assumed map[types.UID]assumedPod
		want    string
	}{
		{name: "fits", pod: makePod("p", resources("cpu", "1")), node: makeNode("n", cpu4)},
		{name: "being deleted", pod: makePod("p", nil), node: makeNode("n", cpu4, deleting, cordoned), want: ReasonDeleting},
		{name: "cordoned", pod: makePod("p", nil), node: makeNode("n", cpu4, cordoned), want: ReasonUnschedulable},
		{name: "cordoned, tolerated", node: makeNode("n", cpu4, cordoned),
			pod: makePod("p", nil, tolerate(v1.TaintNodeUnschedulable, "", v1.TaintEffectNoSchedule))},
		{name: "cordoned with its taint, tolerated",
			node: makeNode("n", cpu4, cordoned, taint(v1.TaintNodeUnschedulable, "", v1.TaintEffectNoSchedule)),
			pod:  makePod("p", nil, tolerate(v1.TaintNodeUnschedulable, "", ""))},
		{name: "NoSchedule taint", pod: makePod("p", nil), node: makeNode("n", cpu4, taint("gpu", "yes", v1.TaintEffectNoSchedule)),
			want: "node(s) had untolerated taint {gpu: yes}"},
		{name: "NoExecute taint", pod: makePod("p", nil), node: makeNode("n", cpu4, taint("dedicated", "", v1.TaintEffectNoExecute)),
			want: "node(s) had untolerated taint {dedicated: }"},
		{name: "PreferNoSchedule ignored", pod: makePod("p", nil),
			node: makeNode("n", cpu4, taint("soft", "x", v1.TaintEffectPreferNoSchedule))},
		{name: "taint tolerated by value", node: makeNode("n", cpu4, taint("gpu", "yes", v1.TaintEffectNoSchedule)),
			pod: makePod("p", nil, tolerate("gpu", "yes", v1.TaintEffectNoSchedule))},
		{name: "taint, toleration of another value", node: makeNode("n", cpu4, taint("gpu", "yes", v1.TaintEffectNoSchedule)),
			pod: makePod("p", nil, tolerate("gpu", "no", v1.TaintEffectNoSchedule)), want: "node(s) had untolerated taint {gpu: yes}"},
		{name: "second taint untolerated",
			node: makeNode("n", cpu4, taint("a", "1", v1.TaintEffectNoSchedule), taint("b", "2", v1.TaintEffectNoExecute)),
			pod:  makePod("p", nil, tolerate("a", "", "")), want: "node(s) had untolerated taint {b: 2}"},
		{name: "node selector matches", pod: makePod("p", nil, selector("zone", "a")), node: makeNode("n", cpu4, nodeLabel("zone", "a"))},
		{name: "node selector mismatch", pod: makePod("p", nil, selector("zone", "a")), node: makeNode("n", cpu4, nodeLabel("zone", "b")),
			want: ReasonAffinity},
		{name: "required affinity matches", pod: makePod("p", nil, requireIn("zone", "a", "b")),
			node: makeNode("n", cpu4, nodeLabel("zone", "b"))},
		{name: "required affinity mismatch", pod: makePod("p", nil, requireIn("zone", "a")), node: makeNode("n", cpu4),
			want: ReasonAffinity},
		{name: "taint before affinity", pod: makePod("p", nil, selector("zone", "a")),
			node: makeNode("n", cpu4, taint("k", "v", v1.TaintEffectNoSchedule)), want: "node(s) had untolerated taint {k: v}"},
		{name: "tenant in own pool", pod: makePod("p", nil, tenant("t1")), node: makeNode("n", cpu4, pool("t1"))},
		{name: "tenant in another pool", pod: makePod("p", nil, tenant("t1")), node: makeNode("n", cpu4, pool("t2")), want: ReasonPool},
		{name: "tenant on a shared node", pod: makePod("p", nil, tenant("t1")), node: makeNode("n", cpu4), want: ReasonPool},
		{name: "no tenant on a pool node", pod: makePod("p", nil), node: makeNode("n", cpu4, pool("t1")), want: ReasonPool},
		{name: "no tenant on a shared node", pod: makePod("p", nil), node: makeNode("n", cpu4)},
		{name: "affinity before pool", pod: makePod("p", nil, selector("zone", "a")), node: makeNode("n", cpu4, pool("t1")),
			want: ReasonAffinity},
		{name: "pool before resources", pod: makePod("p", resources("cpu", "10")), node: makeNode("n", cpu4, pool("t1")),
			want: ReasonPool},
		{name: "cpu exactly fits", pod: makePod("p", resources("cpu", "1")), node: makeNode("n", cpu4),
			pods: []*v1.Pod{makePod("a", resources("cpu", "3"), onNode("n"))}},
		{name: "cpu short", pod: makePod("p", resources("cpu", "1500m")), node: makeNode("n", cpu4),
			pods: []*v1.Pod{makePod("a", resources("cpu", "3"), onNode("n"))}, want: "Insufficient cpu"},
		{name: "pods of other nodes do not count", pod: makePod("p", resources("cpu", "2")), node: makeNode("n", cpu4),
			pods: []*v1.Pod{makePod("a", resources("cpu", "3"), onNode("m"))}},
		{name: "finished pods do not count", pod: makePod("p", resources("cpu", "2")), node: makeNode("n", cpu4),
			pods: []*v1.Pod{
				makePod("a", resources("cpu", "3"), onNode("n"), phase(v1.PodSucceeded)),
				makePod("b", resources("cpu", "3"), onNode("n"), phase(v1.PodFailed)),
			}},
		{name: "pending pods do not count", pod: makePod("p", resources("cpu", "2")), node: makeNode("n", cpu4),
			pods: []*v1.Pod{makePod("a", resources("cpu", "3"))}},
		{name: "assumed pod counts", pod: makePod("p", resources("cpu", "2")), node: makeNode("n", cpu4),
			assumed: map[types.UID]assumedPod{"uid-a": {key: "default/a", node: "n", requests: resources("cpu", "3")}},
			want:    "Insufficient cpu"},
		{name: "assumed pod seen bound counts once", pod: makePod("p", resources("cpu", "1")), node: makeNode("n", cpu4),
			pods:    []*v1.Pod{makePod("a", resources("cpu", "3"), onNode("n"))},
			assumed: map[types.UID]assumedPod{"uid-a": {key: "default/a", node: "n", requests: resources("cpu", "3")}}},
		{name: "first short resource in name order", pod: makePod("p", resources("memory", "9Gi", "cpu", "5")),
			node: makeNode("n", cpu4), want: "Insufficient cpu"},
		{name: "memory short", pod: makePod("p", resources("memory", "9Gi", "cpu", "1")),
			node: makeNode("n", cpu4), want: "Insufficient memory"},
		{name: "resource the node lacks", pod: gpuPod("p", "1"), node: makeNode("n", cpu4),
			want: "Insufficient nvidia.com/gpu"},
		{name: "zero request of a resource the node lacks", pod: makePod("p", resources("example.com/foo", "0")), node: makeNode("n", cpu4)},
		{name: "gpu fits", pod: gpuPod("p", "1"), node: makeNode("n", gpu2), pods: []*v1.Pod{gpuPod("a", "1", onNode("n"))}},
		{name: "gpu full", pod: gpuPod("p", "1"), node: makeNode("n", gpu2), pods: []*v1.Pod{gpuPod("a", "2", onNode("n"))},
			want: "Insufficient nvidia.com/gpu"},
		{name: "gpu full by an assumed pod", pod: gpuPod("p", "1"), node: makeNode("n", gpu2),
			pods:    []*v1.Pod{gpuPod("a", "1", onNode("n"))},
			assumed: map[types.UID]assumedPod{"uid-b": {node: "n", requests: resources("nvidia.com/gpu", "1")}},
			want:    "Insufficient nvidia.com/gpu"},
		{name: "pod count at the limit", pod: makePod("p", nil), node: makeNode("n", resources("cpu", "4", "pods", "2")),
			pods: []*v1.Pod{makePod("a", nil, onNode("n"))}},
		{name: "too many pods", pod: makePod("p", nil), node: makeNode("n", resources("cpu", "4", "pods", "2")),
			pods:    []*v1.Pod{makePod("a", nil, onNode("n"))},
			assumed: map[types.UID]assumedPod{"uid-b": {node: "n"}}, want: ReasonTooManyPods},
		{name: "resources before pod count", pod: makePod("p", resources("cpu", "5")), node: makeNode("n", resources("cpu", "4", "pods", "0")),
			want: "Insufficient cpu"},
		{name: "no pod limit without allocatable pods", pod: makePod("p", nil), node: makeNode("n", resources("cpu", "4")),
			pods: []*v1.Pod{makePod("a", nil, onNode("n")), makePod("b", nil, onNode("n"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			infos := NodeInfos([]*v1.Node{tc.node}, tc.pods, tc.assumed)
			if got := Fit(tc.pod, PodRequests(tc.pod), infos[0], testLabels); got != tc.want {
				t.Errorf("Fit = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPodRequestsCountInitContainersAndOverhead(t *testing.T) {
	pod := makePod("p", resources("cpu", "1", "memory", "1Gi"))
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: resources("cpu", "3")}}}
	pod.Spec.Overhead = resources("memory", "100Mi")
	got := PodRequests(pod)
	if cpu := got[v1.ResourceCPU]; cpu.String() != "3" {
		t.Errorf("cpu = %s, want 3 (the init container's)", cpu.String())
	}
	if mem := got[v1.ResourceMemory]; mem.String() != "1124Mi" {
		t.Errorf("memory = %s, want 1124Mi (with the overhead)", mem.String())
	}
}
