package main

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, cpu string, labels map[string]string, taints ...v1.Taint) v1.Node {
	return v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu),
			v1.ResourcePods: resource.MustParse("110")}}}
}

func pod(name, nodeName, cpu string) v1.Pod {
	return v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "t"}, Spec: v1.PodSpec{NodeName: nodeName,
		Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

func rules(out output) string {
	var r []string
	for _, v := range out.Violations {
		r = append(r, v.Rule+" "+v.Pod+" "+v.Node)
	}
	return strings.Join(r, "; ")
}

func TestAKeptPlacementHasNoViolation(t *testing.T) {
	out, err := judge(input{Nodes: []v1.Node{node("a", "2", nil)}, Pods: []v1.Pod{pod("p", "a", "1"), pod("q", "a", "1")}})
	if err != nil || len(out.Violations) != 0 {
		t.Fatalf("violations %q, err %v", rules(out), err)
	}
}

func TestOvercommitIsAResourceViolation(t *testing.T) {
	out, _ := judge(input{Nodes: []v1.Node{node("a", "2", nil)}, Pods: []v1.Pod{pod("p", "a", "1500m"), pod("q", "a", "1")}})
	if rules(out) != "resources  a" || !strings.Contains(out.Violations[0].Detail, "request 2500m, allocatable 2") {
		t.Fatalf("got %q %+v", rules(out), out.Violations)
	}
}

func TestSelectorAndTaintViolations(t *testing.T) {
	p := pod("p", "a", "1")
	p.Spec.NodeSelector = map[string]string{"zone": "b"}
	taint := v1.Taint{Key: "k", Effect: v1.TaintEffectNoSchedule}
	out, _ := judge(input{Nodes: []v1.Node{node("a", "2", map[string]string{"zone": "a"}, taint)}, Pods: []v1.Pod{p}})
	if rules(out) != "nodeAffinity t/p a; taints t/p a" {
		t.Fatalf("got %q", rules(out))
	}
	p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}
	p.Spec.NodeSelector = map[string]string{"zone": "a"}
	out, _ = judge(input{Nodes: []v1.Node{node("a", "2", map[string]string{"zone": "a"}, taint)}, Pods: []v1.Pod{p}})
	if rules(out) != "" {
		t.Fatalf("a tolerated taint and a matching selector: got %q", rules(out))
	}
}

func TestAnUnboundPodFitsWhereRoomAndRulesAllow(t *testing.T) {
	cordoned := node("c", "8", nil)
	cordoned.Spec.Unschedulable = true
	out, _ := judge(input{Nodes: []v1.Node{node("a", "2", nil), node("b", "4", nil), cordoned},
		Pods: []v1.Pod{pod("p", "a", "1"), pod("w", "", "2")}})
	if got := strings.Join(out.Fits["t/w"], ","); got != "b" {
		t.Fatalf("fits %q, want b (a has 1 CPU left, c is cordoned)", got)
	}
}

func TestRequiredAntiAffinityKeepsPodsApartBothWays(t *testing.T) {
	a, b := node("a", "4", map[string]string{"kubernetes.io/hostname": "a"}), node("b", "4", map[string]string{"kubernetes.io/hostname": "b"})
	web := pod("web", "a", "1")
	web.Labels = map[string]string{"app": "web"}
	shy := pod("shy", "a", "1")
	shy.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			TopologyKey:   "kubernetes.io/hostname"}}}}
	out, err := judge(input{Nodes: []v1.Node{a, b}, Pods: []v1.Pod{web, shy}})
	if err != nil || rules(out) != "podAntiAffinity t/web a" {
		t.Fatalf("got %q, err %v", rules(out), err)
	}
	// unbound, each way: the shy pod fits only away from web, and so does a web pod beside a bound shy one
	shy.Spec.NodeName = ""
	out, _ = judge(input{Nodes: []v1.Node{a, b}, Pods: []v1.Pod{web, shy}})
	if got := strings.Join(out.Fits["t/shy"], ","); got != "b" {
		t.Fatalf("shy fits %q, want b", got)
	}
	shy.Spec.NodeName, web.Spec.NodeName = "a", ""
	out, _ = judge(input{Nodes: []v1.Node{a, b}, Pods: []v1.Pod{web, shy}})
	if got := strings.Join(out.Fits["t/web"], ","); got != "b" {
		t.Fatalf("web fits %q, want b (the bound pod's term excludes a)", got)
	}
}

func withPort(p v1.Pod, hostIP string, protocol v1.Protocol, port int32) v1.Pod {
	p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: port, HostPort: port, HostIP: hostIP, Protocol: protocol}}
	return p
}

func TestTwoPodsOnANodeMayNotHoldTheSameHostPort(t *testing.T) {
	a, b := node("a", "4", nil), node("b", "4", nil)
	first := withPort(pod("first", "a", "1"), "", v1.ProtocolTCP, 8080)
	second := withPort(pod("second", "a", "1"), "127.0.0.1", v1.ProtocolTCP, 8080) // the wildcard holds every address
	udp := withPort(pod("udp", "a", "1"), "", v1.ProtocolUDP, 8080)                // another protocol: no conflict
	out, err := judge(input{Nodes: []v1.Node{a, b}, Pods: []v1.Pod{first, second, udp}})
	if err != nil || rules(out) != "hostPorts t/second a" {
		t.Fatalf("got %q, err %v", rules(out), err)
	}
	second.Spec.NodeName = ""
	out, _ = judge(input{Nodes: []v1.Node{a, b}, Pods: []v1.Pod{first, second, udp}})
	if got := strings.Join(out.Fits["t/second"], ","); got != "b" {
		t.Fatalf("second fits %q, want b (its port is held on a)", got)
	}
}
