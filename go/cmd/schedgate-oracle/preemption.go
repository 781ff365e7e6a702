package main

// Preemptions the scheduler made, as its "Preempted" events tell them (one a victim): each is judged by
// three rules a correct scheduler keeps.
//   - The victim's priority is lower than its preemptor's.
//   - The victim was bound to the node the preemptor was nominated to (the event names it): a victim
//     taken from elsewhere freed nothing the preemptor could use.
//   - That node is one the preemptor could be placed on once pods go: its required node affinity and
//     nodeSelector match the node, it tolerates the node's NoSchedule and NoExecute taints and the
//     unschedulable mark, and its requests alone do not exceed the node's allocatable. A victim on a node
//     the preemptor's own constraints exclude was evicted for nothing.
//
// The last rule is judged on the nodes as they are at the end, sound where node labels are only added,
// taints only removed and nodes never cordoned after the pods come (then a node that excludes the pod now
// excluded it when the victim was chosen), as in a generated scenario. A victim preempted in the
// scheduler's memory (a pod waiting at Permit or in PreBind, never bound) has no node of its own to judge.

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// Preemption is one victim of one preemption, as the caller read it from the API.
type Preemption struct {
	Victim string `json:"victim"` // namespace/name
	// VictimPriority is the victim's priority (it is gone by now: the caller read its PriorityClass);
	// nil when the caller could not tell it.
	VictimPriority *int32 `json:"victimPriority"`
	VictimNode     string `json:"victimNode"` // where it was bound ("" when unknown)
	Preemptor      string `json:"preemptor"`  // namespace/name
	Node           string `json:"node"`       // the node the scheduler preempted on, for the preemptor
	InMemory       bool   `json:"inMemory"`   // a waiting pod preempted in the scheduler's memory, not deleted
}

func judgePreemptions(out *output, nodes map[string]*v1.Node, pods []v1.Pod, preemptions []Preemption) {
	byKey := map[string]*v1.Pod{}
	for i := range pods {
		byKey[key(&pods[i])] = &pods[i]
	}
	for _, pe := range preemptions {
		p, ok := byKey[pe.Preemptor]
		if !ok {
			out.Skipped = append(out.Skipped, fmt.Sprintf("preemption: pod %s preempted %s and is gone: not judged",
				pe.Preemptor, pe.Victim))
			continue
		}
		broken := func(detail string) {
			out.Violations = append(out.Violations, Violation{Rule: "preemption", Pod: pe.Preemptor, Node: pe.Node,
				Detail: detail})
		}
		mine := corev1helpers.PodPriority(p)
		if pe.VictimPriority == nil {
			out.Skipped = append(out.Skipped, fmt.Sprintf("preemption: victim %s: its priority is unknown, so not "+
				"judged against its preemptor's", pe.Victim))
		} else if *pe.VictimPriority >= mine {
			broken(fmt.Sprintf("evicted %s of priority %d for a preemptor of priority %d: a victim's must be lower",
				pe.Victim, *pe.VictimPriority, mine))
		}
		if !pe.InMemory {
			if pe.VictimNode == "" {
				out.Skipped = append(out.Skipped, fmt.Sprintf("preemption: victim %s: the node it was bound to is "+
					"unknown, so not judged against the preemptor's", pe.Victim))
			} else if pe.VictimNode != pe.Node {
				broken(fmt.Sprintf("evicted %s from %s, not from %s where it preempted", pe.Victim, pe.VictimNode,
					pe.Node))
			}
		}
		n, ok := nodes[pe.Node]
		if !ok {
			out.Skipped = append(out.Skipped, fmt.Sprintf("preemption: node %s (of victim %s) is gone: not judged",
				pe.Node, pe.Victim))
			continue
		}
		for _, why := range placement(p, n) {
			broken(fmt.Sprintf("evicted %s for a node the preemptor's own constraints exclude: %s: %s", pe.Victim,
				why[0], why[1]))
		}
		alone := map[string]v1.ResourceList{}
		add(alone, n.Name, p)
		for _, r := range over(alone[n.Name], n.Status.Allocatable) {
			broken(fmt.Sprintf("evicted %s for a node too small for the preemptor alone: %s", pe.Victim, r))
		}
	}
}
