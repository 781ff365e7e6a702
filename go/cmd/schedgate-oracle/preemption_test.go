package main

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func prioritized(p v1.Pod, priority int32) v1.Pod {
	p.Spec.Priority = &priority
	return p
}

func of(priority int32) *int32 { return &priority }

func TestALowerVictimFromTheNodePreemptedOnIsNoViolation(t *testing.T) {
	out, err := judge(input{Nodes: []v1.Node{node("a", "2", nil)}, Pods: []v1.Pod{prioritized(pod("p", "a", "2"), 1000)},
		Preemptions: []Preemption{{Victim: "t/v", VictimPriority: of(100), VictimNode: "a", Preemptor: "t/p", Node: "a"}}})
	if err != nil || len(out.Violations) != 0 || len(out.Skipped) != 0 {
		t.Fatalf("violations %q, skipped %v, err %v", rules(out), out.Skipped, err)
	}
}

func TestAVictimOfEqualPriorityIsAViolation(t *testing.T) {
	out, _ := judge(input{Nodes: []v1.Node{node("a", "2", nil)}, Pods: []v1.Pod{pod("p", "a", "2")},
		Preemptions: []Preemption{{Victim: "t/v", VictimPriority: of(0), VictimNode: "a", Preemptor: "t/p", Node: "a"}}})
	if len(out.Violations) != 1 || !strings.Contains(out.Violations[0].Detail,
		"evicted t/v of priority 0 for a preemptor of priority 0: a victim's must be lower") {
		t.Fatalf("violations %+v", out.Violations)
	}
}

func TestAVictimFromAnotherNodeIsAViolation(t *testing.T) {
	out, _ := judge(input{Nodes: []v1.Node{node("a", "2", nil), node("b", "2", nil)},
		Pods:        []v1.Pod{prioritized(pod("p", "", "1"), 10)},
		Preemptions: []Preemption{{Victim: "t/v", VictimPriority: of(0), VictimNode: "b", Preemptor: "t/p", Node: "a"}}})
	if rules(out) != "preemption t/p a" || !strings.Contains(out.Violations[0].Detail, "evicted t/v from b, not from a") {
		t.Fatalf("violations %+v", out.Violations)
	}
}

func TestAVictimOnANodeThePreemptorsConstraintsExcludeIsAViolation(t *testing.T) {
	taint := v1.Taint{Key: "k", Effect: v1.TaintEffectNoSchedule}
	p := prioritized(pod("p", "", "1"), 10)
	p.Spec.NodeSelector = map[string]string{"net": "true"}
	out, _ := judge(input{Nodes: []v1.Node{node("a", "2", nil, taint), node("small", "500m", map[string]string{"net": "true"})},
		Pods: []v1.Pod{p}, Preemptions: []Preemption{
			{Victim: "t/v", VictimPriority: of(0), VictimNode: "a", Preemptor: "t/p", Node: "a"},
			{Victim: "t/w", VictimPriority: of(0), VictimNode: "small", Preemptor: "t/p", Node: "small"}}})
	got := []string{}
	for _, v := range out.Violations {
		got = append(got, v.Detail)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"evicted t/v for a node the preemptor's own constraints exclude: nodeAffinity",
		"evicted t/v for a node the preemptor's own constraints exclude: taints",
		"evicted t/w for a node too small for the preemptor alone: cpu"} {
		if !strings.Contains(all, want) {
			t.Fatalf("%q not among %q", want, all)
		}
	}
}

func TestAPreemptionThatCannotBeJudgedIsSkippedNotPassed(t *testing.T) {
	out, _ := judge(input{Nodes: []v1.Node{node("a", "2", nil)}, Pods: []v1.Pod{prioritized(pod("p", "", "1"), 10)},
		Preemptions: []Preemption{{Victim: "t/v", VictimNode: "", Preemptor: "t/p", Node: "a"},
			{Victim: "t/w", VictimPriority: of(0), Preemptor: "t/gone", Node: "a"},
			{Victim: "t/x", VictimPriority: of(0), Preemptor: "t/p", Node: "a", InMemory: true}}})
	skipped := strings.Join(out.Skipped, "\n")
	for _, want := range []string{"victim t/v: its priority is unknown", "victim t/v: the node it was bound to is unknown",
		"pod t/gone preempted t/w and is gone"} {
		if !strings.Contains(skipped, want) {
			t.Fatalf("%q not among %q", want, skipped)
		}
	}
	if len(out.Violations) != 0 || strings.Contains(skipped, "t/x") {
		t.Fatalf("violations %+v, skipped %q", out.Violations, skipped)
	}
}
