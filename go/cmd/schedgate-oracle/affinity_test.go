package main

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func hostNode(name string) v1.Node {
	return node(name, "4", map[string]string{hostname: name})
}

func app(p v1.Pod, name string) v1.Pod {
	p.Labels = map[string]string{"app": name}
	return p
}

// near gives p a required affinity to the pods of app on its node.
func near(p v1.Pod, app string) v1.Pod {
	p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: hostname}}}}
	return p
}

func TestAPodBoundAwayFromWhatItRequiresBreaksPodAffinity(t *testing.T) {
	nodes := []v1.Node{hostNode("a"), hostNode("b")}
	out, err := judge(input{Nodes: nodes, Pods: []v1.Pod{app(pod("db", "a", "1"), "db"), near(app(pod("web", "b", "1"), "web"), "db")}})
	if err != nil || rules(out) != "podAffinity t/web b" {
		t.Fatalf("violations %q, err %v", rules(out), err)
	}
	if !strings.Contains(out.Violations[0].Detail, "node(s) didn't match pod affinity rules") {
		t.Fatalf("detail %q", out.Violations[0].Detail)
	}
	out, err = judge(input{Nodes: nodes, Pods: []v1.Pod{app(pod("db", "a", "1"), "db"), near(app(pod("web", "a", "1"), "web"), "db")}})
	if err != nil || len(out.Violations) != 0 {
		t.Fatalf("beside it: violations %q, err %v", rules(out), err)
	}
}

func TestARefusedPodWithAffinityFitsOnlyBesideWhatItRequires(t *testing.T) {
	out, err := judge(input{Nodes: []v1.Node{hostNode("a"), hostNode("b")},
		Pods: []v1.Pod{app(pod("db", "b", "1"), "db"), near(app(pod("web", "", "1"), "web"), "db")}})
	if err != nil || strings.Join(out.Fits["t/web"], ",") != "b" {
		t.Fatalf("fits %v, err %v", out.Fits, err)
	}
}

func TestAPodThatMatchesItsOwnAffinityIsNotJudged(t *testing.T) {
	out, err := judge(input{Nodes: []v1.Node{hostNode("a"), hostNode("b")},
		Pods: []v1.Pod{app(pod("db", "a", "1"), "db"), near(app(pod("db-2", "b", "1"), "db"), "db"), near(app(pod("db-3", "", "1"), "db"), "db")}})
	if err != nil || len(out.Violations) != 0 || len(out.Fits["t/db-3"]) != 0 {
		t.Fatalf("violations %q, fits %v, err %v", rules(out), out.Fits, err)
	}
	if got := strings.Join(out.Skipped, "\n"); !strings.Contains(got, "podAffinity: pod t/db-2: not judged") ||
		!strings.Contains(got, "podAffinity: pod t/db-3: matches its own affinity term") {
		t.Fatalf("skipped %q", got)
	}
}
