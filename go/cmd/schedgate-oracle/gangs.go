package main

// Gangs of schedgate's Gang plugin (schedgate/pkg/gang): pods labelled with a group's name and how many
// members it needs. A group is admitted whole or not at all: bound members, if any, are at least its
// minimum. A group short of it is "partial", not a violation at once: members the plugin lets go together
// bind one by one, so the caller waits for it to complete before calling it broken. A member left
// unbound is not judged for a missed fit: its admission is its group's, which the fit of one pod does not
// decide.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"schedgate/pkg/gang"
)

// member is the pod's group (namespace/name) and the minimum its label asks for, or "" when it is no member.
func member(p *v1.Pod) (string, int, error) {
	group, ok := p.Labels[gang.GroupLabel]
	if !ok {
		return "", 0, nil
	}
	min, err := strconv.Atoi(p.Labels[gang.MinLabel])
	if err != nil || min < 1 {
		return "", 0, fmt.Errorf("pod %s: label %s=%q is not a positive number", key(p), gang.MinLabel,
			p.Labels[gang.MinLabel])
	}
	return p.Namespace + "/" + group, min, nil
}

// partialGroups lists each group with some members bound but fewer than its minimum (the largest minimum
// its members' labels ask for), naming the bound ones and their nodes.
func partialGroups(pods []v1.Pod) ([]Violation, error) {
	mins := map[string]int{}
	bound := map[string][]string{}
	for i := range pods {
		p := &pods[i]
		group, min, err := member(p)
		if err != nil {
			return nil, err
		}
		if group == "" || !running(p) {
			continue
		}
		if min > mins[group] {
			mins[group] = min
		}
		if p.Spec.NodeName != "" {
			bound[group] = append(bound[group], p.Name+" on "+p.Spec.NodeName)
		}
	}
	groups := make([]string, 0, len(bound))
	for g := range bound {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	out := []Violation{}
	for _, g := range groups {
		if n := len(bound[g]); n < mins[g] {
			sort.Strings(bound[g])
			out = append(out, Violation{Rule: "gang", Detail: fmt.Sprintf("group %s (min %d): %d member(s) bound: %s; "+
				"a group binds whole or not at all", g, mins[g], n, strings.Join(bound[g], ", "))})
		}
	}
	return out, nil
}
