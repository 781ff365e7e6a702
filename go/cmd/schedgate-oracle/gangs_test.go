package main

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"schedgate/pkg/gang"
)

func memberOf(group, min string, p v1.Pod) v1.Pod {
	p.Labels = map[string]string{gang.GroupLabel: group, gang.MinLabel: min}
	return p
}

func TestAGroupBoundInPartIsPartial(t *testing.T) {
	out, err := judge(input{Nodes: []v1.Node{node("a", "4", nil)}, Pods: []v1.Pod{
		memberOf("g", "3", pod("g-0", "a", "1")), memberOf("g", "3", pod("g-1", "a", "1")),
		memberOf("g", "3", pod("g-2", "", "1"))}})
	if err != nil || len(out.Partial) != 1 || len(out.Violations) != 0 {
		t.Fatalf("partial %v, violations %q, err %v", out.Partial, rules(out), err)
	}
	if d := out.Partial[0].Detail; !strings.Contains(d, "group t/g (min 3): 2 member(s) bound: g-0 on a, g-1 on a") {
		t.Fatalf("detail %q", d)
	}
	if fits, ok := out.Fits["t/g-2"]; !ok || len(fits) != 0 || !strings.Contains(strings.Join(out.Skipped, ";"),
		"gang: pod t/g-2: a member of group t/g") {
		t.Fatalf("an unbound member is judged for a missed fit: fits %v, skipped %v", fits, out.Skipped)
	}
}

func TestAGroupWholeOrUnboundIsKept(t *testing.T) {
	for name, pods := range map[string][]v1.Pod{
		"whole":   {memberOf("g", "2", pod("g-0", "a", "1")), memberOf("g", "2", pod("g-1", "a", "1")), memberOf("g", "2", pod("g-2", "", "1"))},
		"unbound": {memberOf("g", "2", pod("g-0", "", "1")), memberOf("g", "2", pod("g-1", "", "1"))},
	} {
		out, err := judge(input{Nodes: []v1.Node{node("a", "4", nil)}, Pods: pods})
		if err != nil || len(out.Partial) != 0 {
			t.Fatalf("%s: partial %v, err %v", name, out.Partial, err)
		}
	}
}

func TestAMinimumThatIsNoNumberIsAnError(t *testing.T) {
	_, err := judge(input{Nodes: []v1.Node{node("a", "4", nil)}, Pods: []v1.Pod{memberOf("g", "two", pod("g-0", "a", "1"))}})
	if err == nil || !strings.Contains(err.Error(), `label schedgate.io/gang-min="two" is not a positive number`) {
		t.Fatalf("err %v", err)
	}
}
