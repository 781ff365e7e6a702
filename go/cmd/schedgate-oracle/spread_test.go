package main

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const hostname = "kubernetes.io/hostname"

func host(name string) v1.Node { return node(name, "8", map[string]string{hostname: name}) }

func spreadPod(name, nodeName string) v1.Pod {
	p := pod(name, nodeName, "100m")
	p.Labels = map[string]string{"app": "web"}
	p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: hostname,
		WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}}}
	return p
}

func TestHardSpreadIsJudgedByUpstreamsFilter(t *testing.T) {
	nodes := []v1.Node{host("a"), host("b")}
	out, err := judge(input{Nodes: nodes, Pods: []v1.Pod{spreadPod("p", "a"), spreadPod("q", "b"), spreadPod("r", "a")}})
	if err != nil || rules(out) != "" || len(out.Skipped) != 0 {
		t.Fatalf("1/1 then 2/1 keeps maxSkew 1: got %q %v, err %v", rules(out), out.Skipped, err)
	}
	out, _ = judge(input{Nodes: nodes, Pods: []v1.Pod{spreadPod("p", "a"), spreadPod("q", "a")}})
	if rules(out) != "topologySpread t/p a; topologySpread t/q a" ||
		!strings.Contains(out.Violations[0].Detail, "didn't match pod topology spread constraints") ||
		!strings.Contains(out.Violations[0].Detail, "kubernetes.io/hostname (maxSkew 1): a=2 b=0") {
		t.Fatalf("2/0 breaks maxSkew 1: got %q %+v", rules(out), out.Violations)
	}
}

func TestAnUnboundSpreadPodFitsOnlyWhereTheSkewAllows(t *testing.T) {
	out, _ := judge(input{Nodes: []v1.Node{host("a"), host("b"), host("c")},
		Pods: []v1.Pod{spreadPod("p", "a"), spreadPod("q", "b"), spreadPod("w", "")}})
	if got := strings.Join(out.Fits["t/w"], ","); got != "c" {
		t.Fatalf("fits %q, want c (the only empty domain)", got)
	}
	unlabelled := node("u", "8", nil) // no topology key: the filter refuses it
	out, _ = judge(input{Nodes: []v1.Node{host("a"), unlabelled}, Pods: []v1.Pod{spreadPod("w", "")}})
	if got := strings.Join(out.Fits["t/w"], ","); got != "a" {
		t.Fatalf("fits %q, want a", got)
	}
}

func TestSpreadIsNotJudgedWhenACountedPodDoesNotCarryTheConstraint(t *testing.T) {
	plain := pod("plain", "a", "100m") // counted by p's selector, placed under no constraint
	plain.Labels = map[string]string{"app": "web"}
	out, err := judge(input{Nodes: []v1.Node{host("a"), host("b")}, Pods: []v1.Pod{plain, spreadPod("p", "a")}})
	if err != nil || rules(out) != "" || len(out.Skipped) != 1 ||
		!strings.Contains(out.Skipped[0], "topologySpread: pod t/p: not judged: pod t/plain, which its constraint on "+
			"kubernetes.io/hostname counts, does not carry it") {
		t.Fatalf("got %q %q, err %v", rules(out), out.Skipped, err)
	}
	other := spreadPod("other", "a") // the same constraint, other node selection under nodeAffinityPolicy Honor
	other.Spec.NodeSelector = map[string]string{hostname: "a"}
	out, _ = judge(input{Nodes: []v1.Node{host("a"), host("b")}, Pods: []v1.Pod{other, spreadPod("p", "b")}})
	if len(out.Skipped) != 2 || !strings.Contains(out.Skipped[0], "selects other nodes") {
		t.Fatalf("got %q", out.Skipped)
	}
}
