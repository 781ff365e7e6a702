package main

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func slice(node string, devices ...string) resourceapi.ResourceSlice {
	s := resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.schedgate.io", NodeName: &node,
		Pool: resourceapi.ResourcePool{Name: node}}}
	for _, d := range devices {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: d})
	}
	return s
}

func claimed(name, node string, devices ...string) (v1.Pod, resourceapi.ResourceClaim) {
	p := pod(name, node, "100m")
	p.UID = types.UID("uid-" + name)
	made := name + "-gpu"
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr("devices-1")}}
	p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &made}}
	c := resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: made, Namespace: "t",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Pod", Name: name}}}}
	if len(devices) > 0 {
		c.Status.Allocation = &resourceapi.AllocationResult{NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}
		for _, d := range devices {
			c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
				Request: "gpu", Driver: "gpu.schedgate.io", Pool: node, Device: d})
		}
		c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: name, UID: p.UID}}
	}
	return p, c
}

func ptr(s string) *string { return &s }

func details(out output) string {
	var d []string
	for _, v := range out.Violations {
		d = append(d, v.Rule+" "+v.Pod+" "+v.Node+": "+v.Detail)
	}
	return strings.Join(d, "\n")
}

func TestClaimsAllocatedOnTheirNodeKeepTheDevicesRule(t *testing.T) {
	p, pc := claimed("p", "a", "gpu-0")
	q, qc := claimed("q", "a", "gpu-1")
	out, err := judge(input{Nodes: []v1.Node{node("a", "4", nil)}, Pods: []v1.Pod{p, q},
		Claims: []resourceapi.ResourceClaim{pc, qc}, Slices: []resourceapi.ResourceSlice{slice("a", "gpu-0", "gpu-1")}})
	if err != nil || len(out.Violations) != 0 {
		t.Fatalf("violations %s, err %v", details(out), err)
	}
}

func TestADeviceInTwoClaimsAndABoundPodWithoutAllocationAreViolations(t *testing.T) {
	p, pc := claimed("p", "a", "gpu-0")
	q, qc := claimed("q", "a", "gpu-0")
	r, rc := claimed("r", "a") // bound, its claim never allocated (a scheduler that ignores claims)
	out, _ := judge(input{Nodes: []v1.Node{node("a", "4", nil)}, Pods: []v1.Pod{p, q, r},
		Claims: []resourceapi.ResourceClaim{pc, qc, rc}, Slices: []resourceapi.ResourceSlice{slice("a", "gpu-0")}})
	want := "devices  a: device gpu.schedgate.io/a/gpu-0 is allocated to the claim of pod t/p and the claim of pod t/q\n" +
		"devices t/r a: its claim \"gpu\" is not allocated"
	if got := details(out); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestAClaimAllocatedForAnotherNodeOrNotReservedIsAViolation(t *testing.T) {
	p, pc := claimed("p", "b", "gpu-0") // allocated on b's device, the pod bound to a
	p.Spec.NodeName = "a"
	pc.Status.ReservedFor = nil
	out, _ := judge(input{Nodes: []v1.Node{node("a", "4", nil), node("b", "4", nil)}, Pods: []v1.Pod{p},
		Claims: []resourceapi.ResourceClaim{pc}, Slices: []resourceapi.ResourceSlice{slice("b", "gpu-0")}})
	for _, want := range []string{"is not reserved for it", "is allocated for other nodes", "holds device gpu.schedgate.io/b/gpu-0 of node b"} {
		if !strings.Contains(details(out), want) {
			t.Fatalf("%q not in\n%s", want, details(out))
		}
	}
}

func TestAnUnboundPodWithClaimsIsNotJudgedForAMissedFit(t *testing.T) {
	w, wc := claimed("w", "")
	out, _ := judge(input{Nodes: []v1.Node{node("a", "4", nil)}, Pods: []v1.Pod{w}, Claims: []resourceapi.ResourceClaim{wc}})
	if len(out.Fits["t/w"]) != 0 || len(out.Skipped) != 1 || !strings.Contains(out.Skipped[0], "devices: pod t/w: not judged") {
		t.Fatalf("fits %v skipped %q", out.Fits, out.Skipped)
	}
}

// partitions returns node's slice of devices that each consume one slice of counter set "gpu", and the pool's
// slice of that set with `have` slices.
func partitions(node, have string, devices ...string) []resourceapi.ResourceSlice {
	s := slice(node, devices...)
	for i := range s.Spec.Devices {
		s.Spec.Devices[i].ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu",
			Counters: map[string]resourceapi.Counter{"slices": {Value: resource.MustParse("1")}}}}
	}
	counters := resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.schedgate.io", NodeName: &node,
		Pool: resourceapi.ResourcePool{Name: node}, SharedCounters: []resourceapi.CounterSet{{Name: "gpu",
			Counters: map[string]resourceapi.Counter{"slices": {Value: resource.MustParse(have)}}}}}}
	return []resourceapi.ResourceSlice{s, counters}
}

func TestDevicesThatConsumeMoreOfACounterThanItsSetHasBreakTheDevicesRule(t *testing.T) {
	p, pc := claimed("p", "a", "gpu-0", "gpu-1")
	q, qc := claimed("q", "a", "gpu-2")
	in := input{Nodes: []v1.Node{node("a", "4", nil)}, Pods: []v1.Pod{p, q}, Claims: []resourceapi.ResourceClaim{pc, qc},
		Slices: partitions("a", "2", "gpu-0", "gpu-1", "gpu-2")}
	out, _ := judge(in)
	want := "devices  a: counter gpu.schedgate.io/a gpu.slices: devices allocated consume 3, the counter set has 2: " +
		"gpu-0 (the claim of pod t/p); gpu-1 (the claim of pod t/p); gpu-2 (the claim of pod t/q)"
	if details(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", details(out), want)
	}
	in.Slices = partitions("a", "3", "gpu-0", "gpu-1", "gpu-2")
	if out, err := judge(in); err != nil || len(out.Violations) != 0 {
		t.Fatalf("within the set: violations %s, err %v", details(out), err)
	}
}
