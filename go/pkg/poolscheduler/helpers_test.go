package poolscheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"schedgate/pkg/mutant"
)

var testLabels = Labels{Tenant: "tenant-id", Pool: "schedgate.io/tenant-pool"}

// setMutant makes the test binary the mutant name until the test ends.
func setMutant(t *testing.T, name string) {
	t.Helper()
	t.Cleanup(mutant.SetForTest(name))
}

// resources parses name=quantity pairs.
func resources(pairs ...string) v1.ResourceList {
	list := v1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		list[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}

type nodeOpt func(*v1.Node)

func makeNode(name string, alloc v1.ResourceList, opts ...nodeOpt) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{}},
		Status:     v1.NodeStatus{Allocatable: alloc},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func nodeLabel(k, v string) nodeOpt { return func(n *v1.Node) { n.Labels[k] = v } }

func pool(p string) nodeOpt { return nodeLabel(testLabels.Pool, p) }

func taint(k, v string, e v1.TaintEffect) nodeOpt {
	return func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: k, Value: v, Effect: e}) }
}

func cordoned(n *v1.Node) { n.Spec.Unschedulable = true }

func deleting(n *v1.Node) { now := metav1.Now(); n.DeletionTimestamp = &now }

type podOpt func(*v1.Pod)

func makePod(name string, req v1.ResourceList, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{}},
		Spec: v1.PodSpec{
			SchedulerName: "pool-scheduler",
			Containers:    []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func tenant(t string) podOpt { return func(p *v1.Pod) { p.Labels[testLabels.Tenant] = t } }

func onNode(n string) podOpt { return func(p *v1.Pod) { p.Spec.NodeName = n } }

func phase(ph v1.PodPhase) podOpt { return func(p *v1.Pod) { p.Status.Phase = ph } }

func tolerate(k, v string, e v1.TaintEffect) podOpt {
	return func(p *v1.Pod) {
		op := v1.TolerationOpEqual
		if v == "" {
			op = v1.TolerationOpExists
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: k, Operator: op, Value: v, Effect: e})
	}
}

func selector(k, v string) podOpt {
	return func(p *v1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[k] = v
	}
}

func requireIn(k string, values ...string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: k, Operator: v1.NodeSelectorOpIn, Values: values}},
			}}},
		}}
	}
}
