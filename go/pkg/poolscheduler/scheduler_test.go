package poolscheduler

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var gpuNode = resources("cpu", "8", "memory", "16Gi", "pods", "110", "nvidia.com/gpu", "1")

func gpuPod(name string, opts ...podOpt) *v1.Pod {
	return makePod(name, resources("nvidia.com/gpu", "1"), opts...)
}

func TestSchedulesBackToBackAndRequeuesOnNodeAdd(t *testing.T) {
	h := newHarness(t, Config{}, makeNode("n1", gpuNode), makeNode("n2", gpuNode))
	h.start()
	h.create(gpuPod("a"), gpuPod("b"), gpuPod("c"), makePod("other", nil, func(p *v1.Pod) { p.Spec.SchedulerName = "default-scheduler" }))
	want := "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
	h.eventually("c is unschedulable", func() bool {
		c, ok := h.condition("c")
		return ok && c.Reason == reasonUnschedulable && c.Message == want
	})
	// c's verdict counts a and b as assumed; their binds run on their own and may still be in flight.
	h.eventually("a and b are bound", func() bool { return h.boundTo("a") != "" && h.boundTo("b") != "" })
	if h.boundTo("a") == h.boundTo("b") {
		t.Fatalf("a on %q and b on %q, want one on each node", h.boundTo("a"), h.boundTo("b"))
	}
	if h.boundTo("other") != "" {
		t.Errorf("bound a pod of another scheduler")
	}
	if !h.hasEvent("Warning FailedScheduling " + want) {
		t.Errorf("no FailedScheduling event: %q", h.drainEvents())
	}
	if !h.hasEvent("Normal Scheduled Successfully assigned default/a to " + h.boundTo("a")) {
		t.Errorf("no Scheduled event for a: %q", h.drainEvents())
	}
	h.create(makeNode("n3", gpuNode))
	h.eventually("c is bound to n3", func() bool { return h.boundTo("c") == "n3" })
}

func TestRequeuesWhenAPodIsDeleted(t *testing.T) {
	h := newHarness(t, Config{}, makeNode("n1", gpuNode))
	h.start()
	h.create(gpuPod("a"))
	h.eventually("a is bound", func() bool { return h.boundTo("a") == "n1" })
	h.create(gpuPod("b"))
	h.eventually("b is unschedulable", func() bool { _, ok := h.condition("b"); return ok })
	if err := h.client.CoreV1().Pods("default").Delete(h.ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("b is bound", func() bool { return h.boundTo("b") == "n1" })
}

func TestRequeuesWhenThePodItselfChanges(t *testing.T) {
	h := newHarness(t, Config{}, makeNode("n1", gpuNode, pool("t1")))
	h.start()
	h.create(gpuPod("a"))
	h.eventually("a is unschedulable", func() bool {
		c, ok := h.condition("a")
		return ok && c.Message == "0/1 nodes are available: 1 node(s) were not in the pod's tenant pool."
	})
	pod, err := h.client.CoreV1().Pods("default").Get(h.ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Labels = map[string]string{testLabels.Tenant: "t1"}
	if _, err := h.client.CoreV1().Pods("default").Update(h.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("a is bound", func() bool { return h.boundTo("a") == "n1" })
}

func TestNoRequeueMutantWaitsForTheResync(t *testing.T) {
	setMutant(t, "pool-no-requeue")
	h := newHarness(t, Config{UnschedulableResync: 1500 * time.Millisecond})
	h.start()
	h.create(gpuPod("a"))
	h.eventually("a is unschedulable", func() bool { _, ok := h.condition("a"); return ok })
	added := time.Now()
	h.create(makeNode("n1", gpuNode))
	time.Sleep(300 * time.Millisecond)
	if h.boundTo("a") != "" {
		t.Fatalf("the pool-no-requeue build requeued on a node add")
	}
	h.eventually("a is bound by the resync", func() bool { return h.boundTo("a") == "n1" })
	if waited := time.Since(added); waited < 500*time.Millisecond {
		t.Errorf("bound after %v, before the resync", waited)
	}
}

func TestIgnoresGPUCapacityMutantOverfillsANode(t *testing.T) {
	for _, tc := range []struct {
		mutant string
		bound  bool
	}{{"", false}, {"pool-ignores-gpu-capacity", true}} {
		t.Run("mutant="+tc.mutant, func(t *testing.T) {
			setMutant(t, tc.mutant)
			h := newHarness(t, Config{}, makeNode("n1", gpuNode))
			h.start()
			h.create(gpuPod("a"))
			h.eventually("a is bound", func() bool { return h.boundTo("a") == "n1" })
			h.create(gpuPod("b"))
			if tc.bound {
				h.eventually("b is bound", func() bool { return h.boundTo("b") == "n1" })
				return
			}
			h.eventually("b is unschedulable", func() bool { _, ok := h.condition("b"); return ok })
			if h.boundTo("b") != "" {
				t.Errorf("b bound to a full node")
			}
		})
	}
}
