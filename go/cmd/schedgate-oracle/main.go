// Command schedgate-oracle judges placements with upstream's own helpers
// (k8s.io/component-helpers at the pinned Kubernetes version), never a
// re-implementation of scheduling:
//
//	schedgate-oracle < {"nodes": [Node...], "pods": [Pod...]}
//
// It writes one JSON object: the checks it ran, every violation among the
// bound pods (a node holding more than its allocatable of a resource, pods
// count included; a pod whose required node affinity or nodeSelector the node
// does not match; a pod on a node with a NoSchedule or NoExecute taint it does
// not tolerate, the unschedulable mark included; two pods in one topology
// domain that a required pod anti-affinity term of either keeps apart; two pods
// on one node asking for the same host port, by k8s.io/kube-scheduler's
// HostPortInfo; a pod whose hard topology spread constraint upstream's
// PodTopologySpread filter refuses where it is, the other pods where they
// are; a claim of a bound pod not allocated, not reserved for it or allocated
// for another node, or a device allocated to two claims), and for each pod
// bound to no node (but one with claims), the nodes it would fit now by the
// same checks; each group of schedgate's Gang plugin bound in part
// ("partial": fewer members bound than its minimum, but some); and each
// preemption given (a victim of a lower priority than its preemptor's, taken
// from the node preempted on, which the preemptor's own constraints do not
// exclude). A check it cannot make for a pod is listed in "skipped", with why.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Checks names what this oracle evaluates; a constraint outside them is not judged.
var Checks = []string{"resources", "nodeAffinity", "taints", "podAntiAffinity", "hostPorts", "topologySpread",
	"podAffinity", "devices", "gang", "preemption"}

type input struct {
	Nodes  []v1.Node                   `json:"nodes"`
	Pods   []v1.Pod                    `json:"pods"`
	Claims []resourceapi.ResourceClaim `json:"claims"`
	Slices []resourceapi.ResourceSlice `json:"slices"`
	// Preemptions are the victims the scheduler's "Preempted" events name (preemption.go).
	Preemptions []Preemption `json:"preemptions"`
}

// Violation is one broken rule: the pod, the node it is bound to, and why.
type Violation struct {
	Rule   string `json:"rule"`
	Pod    string `json:"pod"`
	Node   string `json:"node"`
	Detail string `json:"detail"`
}

type output struct {
	Checks     []string            `json:"checks"`
	Violations []Violation         `json:"violations"`
	Fits       map[string][]string `json:"fits"`
	// Partial lists the gangs bound in part: broken unless they complete (their members bind one by one).
	Partial []Violation `json:"partial"`
	// Skipped names each check left out for a pod, and why: never a pass.
	Skipped []string `json:"skipped"`
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, "schedgate-oracle: reading the nodes and pods on stdin:", err)
		os.Exit(2)
	}
	out, err := judge(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schedgate-oracle:", err)
		os.Exit(2)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "schedgate-oracle:", err)
		os.Exit(2)
	}
}

func key(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

func running(p *v1.Pod) bool {
	return p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
}

func judge(in input) (output, error) {
	out := output{Checks: Checks, Violations: []Violation{}, Fits: map[string][]string{}, Skipped: []string{}}
	var err error
	if out.Partial, err = partialGroups(in.Pods); err != nil {
		return out, err
	}
	nodes := map[string]*v1.Node{}
	for i := range in.Nodes {
		nodes[in.Nodes[i].Name] = &in.Nodes[i]
	}
	used := map[string]v1.ResourceList{}
	ports := map[string]fwk.HostPortInfo{}
	var bound []*v1.Pod
	for i := range in.Pods {
		p := &in.Pods[i]
		n, ok := nodes[p.Spec.NodeName]
		if !ok || !running(p) {
			continue
		}
		add(used, n.Name, p)
		bound = append(bound, p)
		for _, d := range takePorts(ports, n.Name, p) {
			out.Violations = append(out.Violations, Violation{Rule: "hostPorts", Pod: key(p), Node: n.Name, Detail: d})
		}
		for _, v := range placement(p, n) {
			out.Violations = append(out.Violations, Violation{Rule: v[0], Pod: key(p), Node: n.Name, Detail: v[1]})
		}
	}
	for i, p := range bound {
		for _, q := range bound[i+1:] {
			if detail, err := apart(p, nodes[p.Spec.NodeName], q, nodes[q.Spec.NodeName]); err != nil {
				return out, err
			} else if detail != "" {
				out.Violations = append(out.Violations, Violation{Rule: "podAntiAffinity", Pod: key(p),
					Node: p.Spec.NodeName, Detail: detail})
			}
		}
	}
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	nodeList := make([]*v1.Node, 0, len(names))
	for _, name := range names {
		nodeList = append(nodeList, nodes[name])
	}
	for _, p := range bound {
		if len(hardSpread(p)) == 0 {
			continue
		}
		if why := uncounted(p, bound); why != "" {
			out.Skipped = append(out.Skipped, fmt.Sprintf("topologySpread: pod %s: not judged: %s", key(p), why))
			continue
		}
		verdicts, err := spreadFilter(p, nodeList, without(bound, p))
		if err != nil {
			return out, err
		}
		if reason := verdicts[p.Spec.NodeName]; reason != "" {
			out.Violations = append(out.Violations, Violation{Rule: "topologySpread", Pod: key(p), Node: p.Spec.NodeName,
				Detail: fmt.Sprintf("upstream's filter, the other pods where they are: %s (%s)", reason,
					spreadCounts(p, nodeList, bound))})
		}
	}
	if err := judgeAffinity(&out, nodeList, bound); err != nil {
		return out, err
	}
	for _, name := range names {
		for _, r := range over(used[name], nodes[name].Status.Allocatable) {
			out.Violations = append(out.Violations, Violation{Rule: "resources", Node: name, Detail: r})
		}
	}
	judgeDevices(&out, nodes, bound, in.Claims, in.Slices)
	judgePreemptions(&out, nodes, in.Pods, in.Preemptions)
	for i := range in.Pods {
		p := &in.Pods[i]
		if p.Spec.NodeName != "" || !running(p) {
			continue
		}
		if group, _, _ := member(p); group != "" {
			out.Fits[key(p)] = []string{}
			out.Skipped = append(out.Skipped, fmt.Sprintf("gang: pod %s: a member of group %s, admitted with its "+
				"group, so no missed fit is claimed", key(p), group))
			continue
		}
		if len(p.Spec.ResourceClaims) > 0 {
			out.Fits[key(p)] = []string{}
			out.Skipped = append(out.Skipped, fmt.Sprintf("devices: pod %s: not judged whether a node has the "+
				"devices its claims ask for, so no missed fit is claimed", key(p)))
			continue
		}
		if selfAffine(p) {
			out.Fits[key(p)] = []string{}
			out.Skipped = append(out.Skipped, fmt.Sprintf("podAffinity: pod %s: matches its own affinity term, "+
				"so no missed fit is claimed", key(p)))
			continue
		}
		fits := []string{}
		spread, together := map[string]string{}, map[string]string{}
		if len(hardSpread(p)) > 0 {
			var err error
			if spread, err = spreadFilter(p, nodeList, bound); err != nil {
				return out, err
			}
		}
		if len(affinityTerms(p)) > 0 {
			var err error
			if together, err = affinityFilter(p, nodeList, bound); err != nil {
				return out, err
			}
		}
		for _, name := range names {
			n := nodes[name]
			if len(placement(p, n)) > 0 || len(conflicts(ports[name], p)) > 0 || spread[name] != "" ||
				together[name] != "" {
				continue
			}
			kept := false
			for _, q := range bound {
				if detail, err := apart(p, n, q, nodes[q.Spec.NodeName]); err != nil {
					return out, err
				} else if detail != "" {
					kept = true
				}
			}
			if kept {
				continue
			}
			trial := map[string]v1.ResourceList{name: used[name].DeepCopy()}
			add(trial, name, p)
			if len(over(trial[name], n.Status.Allocatable)) == 0 {
				fits = append(fits, name)
			}
		}
		out.Fits[key(p)] = fits
	}
	return out, nil
}

// add counts the pod's requests (upstream's PodRequests: containers, init and sidecar containers,
// overhead) and one pod on the node.
func add(used map[string]v1.ResourceList, node string, p *v1.Pod) {
	if used[node] == nil {
		used[node] = v1.ResourceList{}
	}
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	req[v1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	for name, q := range req {
		sum := used[node][name]
		sum.Add(q)
		used[node][name] = sum
	}
}

// over lists the resources whose sum exceeds the node's allocatable (a resource the node does not
// have counts as zero allocatable).
func over(used, allocatable v1.ResourceList) []string {
	names := make([]string, 0, len(used))
	for name := range used {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		q := used[v1.ResourceName(name)]
		if q.IsZero() {
			continue
		}
		have := allocatable[v1.ResourceName(name)]
		if q.Cmp(have) > 0 {
			out = append(out, fmt.Sprintf("%s: pods bound there request %s, allocatable %s", name, q.String(),
				have.String()))
		}
	}
	return out
}

// placement lists the rules the pod breaks on the node: required node affinity and nodeSelector,
// untolerated NoSchedule and NoExecute taints (the unschedulable mark as its taint; a toleration's Gt and
// Lt operators, behind a feature gate, are not evaluated).
func placement(p *v1.Pod, n *v1.Node) [][2]string {
	var out [][2]string
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n); err != nil {
		out = append(out, [2]string{"nodeAffinity", "cannot evaluate: " + err.Error()})
	} else if !ok {
		out = append(out, [2]string{"nodeAffinity", "the node does not match the pod's nodeSelector or " +
			"required node affinity"})
	}
	taints := append([]v1.Taint{}, n.Spec.Taints...)
	if n.Spec.Unschedulable {
		taints = append(taints, v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule})
	}
	hard := func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}
	if t, found := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, p.Spec.Tolerations, hard,
		false); found {
		out = append(out, [2]string{"taints", fmt.Sprintf("the pod does not tolerate the node's taint %s", t.ToString())})
	}
	return out
}

// apart says why p (on node pn) and q (on qn) may not share a topology domain: a required pod
// anti-affinity term of either whose selector matches the other and whose topology key both nodes carry
// with the same value; "" when none does. A term's namespaces (or, without them, its pod's own) must
// hold the other pod; a namespaceSelector is not evaluated (an error, not a pass).
func apart(p *v1.Pod, pn *v1.Node, q *v1.Pod, qn *v1.Node) (string, error) {
	for _, pair := range [][2]*v1.Pod{{p, q}, {q, p}} {
		a, b := pair[0], pair[1]
		if a.Spec.Affinity == nil || a.Spec.Affinity.PodAntiAffinity == nil {
			continue
		}
		an, bn := pn, qn
		if a == q {
			an, bn = qn, pn
		}
		for _, term := range a.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if term.NamespaceSelector != nil {
				return "", fmt.Errorf("pod %s: a namespaceSelector in a pod anti-affinity term is not evaluated", key(a))
			}
			namespaces := term.Namespaces
			if len(namespaces) == 0 {
				namespaces = []string{a.Namespace}
			}
			if !contains(namespaces, b.Namespace) {
				continue
			}
			selector, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
			if err != nil {
				return "", fmt.Errorf("pod %s: %w", key(a), err)
			}
			if !selector.Matches(labels.Set(b.Labels)) {
				continue
			}
			av, aok := an.Labels[term.TopologyKey]
			bv, bok := bn.Labels[term.TopologyKey]
			if aok && bok && av == bv {
				return fmt.Sprintf("pods %s and %s share %s=%s, which a required anti-affinity term of %s forbids",
					key(p), key(q), term.TopologyKey, av, key(a)), nil
			}
		}
	}
	return "", nil
}

// conflicts lists the pod's host ports the node's pods hold already (upstream's CheckConflict: a wildcard
// address conflicts with every address).
func conflicts(taken fwk.HostPortInfo, p *v1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.HostPort > 0 && taken != nil && taken.CheckConflict(port.HostIP, string(port.Protocol), port.HostPort) {
				out = append(out, fmt.Sprintf("host port %d/%s is held by another pod on the node", port.HostPort,
					port.Protocol))
			}
		}
	}
	return out
}

// takePorts records the pod's host ports on the node and returns the ones another pod there held first.
func takePorts(ports map[string]fwk.HostPortInfo, node string, p *v1.Pod) []string {
	if ports[node] == nil {
		ports[node] = fwk.HostPortInfo{}
	}
	held := conflicts(ports[node], p)
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.HostPort > 0 {
				ports[node].Add(port.HostIP, string(port.Protocol), port.HostPort)
			}
		}
	}
	return held
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
