package poolscheduler

import (
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func held(p *v1.Pod) { p.Annotations = map[string]string{FaultAnnotation: FaultBindHold} }

// bindOnce runs one bind of the assumed pod to node, without the worker.
func bindOnce(h *harness, pod *v1.Pod, node *v1.Node) {
	h.s.mu.Lock()
	h.s.assumed[pod.UID] = assumedPod{key: podKey(pod), node: node.Name}
	h.s.mu.Unlock()
	h.s.bind(h.ctx, pod, node)
}

func TestBindLiveNodeCheck(t *testing.T) {
	cached := makeNode("n1", gpuNode)
	replaced := makeNode("n1", gpuNode)
	replaced.UID = "uid-other"
	for _, tc := range []struct {
		name   string
		mutant string
		live   []*v1.Node // the node in the API server
		want   string     // the SchedulerError message, "" when bound
	}{
		{name: "node exists", live: []*v1.Node{cached}},
		{name: "node deleted", want: "node n1 no longer exists"},
		{name: "node replaced", live: []*v1.Node{replaced}, want: "node n1 no longer exists"},
		{name: "node being deleted", live: []*v1.Node{makeNode("n1", gpuNode, deleting)}, want: "node n1 is being deleted"},
		{name: "unchecked mutant binds to a deleted node", mutant: "pool-bind-unchecked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setMutant(t, tc.mutant)
			pod := gpuPod("a")
			h := newHarness(t, Config{}, pod)
			for _, n := range tc.live {
				h.create(n)
			}
			bindOnce(h, pod, cached)
			if h.isAssumed(pod) == (tc.want != "") {
				t.Errorf("assumed = %v after the bind", h.isAssumed(pod))
			}
			if tc.want == "" {
				if h.boundTo("a") != "n1" {
					t.Errorf("not bound")
				}
				if !h.hasEvent("Normal Scheduled Successfully assigned default/a to n1") {
					t.Errorf("no Scheduled event: %q", h.drainEvents())
				}
				return
			}
			if h.boundTo("a") != "" {
				t.Errorf("bound to %s", h.boundTo("a"))
			}
			if c, ok := h.condition("a"); !ok || c.Status != v1.ConditionFalse || c.Reason != reasonSchedulerError || c.Message != tc.want {
				t.Errorf("condition = %+v, want SchedulerError %q", c, tc.want)
			}
			if !h.hasEvent("Warning FailedScheduling " + tc.want) {
				t.Errorf("no FailedScheduling event: %q", h.drainEvents())
			}
			if n := h.s.queue.NumRequeues("default/a"); n != 1 {
				t.Errorf("requeued with backoff %d times, want 1", n)
			}
		})
	}
}

func TestBindConflictIsNotRetried(t *testing.T) {
	pod := gpuPod("a")
	h := newHarness(t, Config{}, makeNode("n1", gpuNode), gpuPod("a", onNode("n2")))
	bindOnce(h, pod, makeNode("n1", gpuNode))
	if h.isAssumed(pod) {
		t.Errorf("still assumed after a conflict")
	}
	if _, ok := h.condition("a"); ok {
		t.Errorf("wrote a condition after a conflict")
	}
	if h.hasEvent("Warning") || h.s.queue.NumRequeues("default/a") != 0 || h.s.queue.Len() != 0 {
		t.Errorf("retried after a conflict: events %q", h.drainEvents())
	}
}

func TestBindOtherErrorIsRetried(t *testing.T) {
	pod := gpuPod("a")
	h := newHarness(t, Config{}, makeNode("n1", gpuNode), pod)
	h.bindErr = apierrors.NewInternalError(errors.New("etcd is sad"))
	bindOnce(h, pod, makeNode("n1", gpuNode))
	c, ok := h.condition("a")
	if !ok || c.Reason != reasonSchedulerError || c.Message != h.bindErr.Error() {
		t.Errorf("condition = %+v, want SchedulerError %q", c, h.bindErr.Error())
	}
	if h.isAssumed(pod) || h.s.queue.NumRequeues("default/a") != 1 {
		t.Errorf("assumed %v, requeues %d", h.isAssumed(pod), h.s.queue.NumRequeues("default/a"))
	}
}

func TestBindHold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutant string
		during func(h *harness) // while the bind is held
		lift   bool             // then remove the annotation
		bound  string
		event  string // an event that must be recorded
	}{
		{name: "lifted", lift: true, bound: "n1"},
		{name: "timed out", bound: "n1"},
		{name: "pod deleted", during: func(h *harness) {
			_ = h.client.CoreV1().Pods("default").Delete(h.ctx, "a", metav1.DeleteOptions{})
		}},
		{name: "node deleted", lift: true, event: "Warning FailedScheduling node n1 no longer exists", during: func(h *harness) {
			_ = h.client.CoreV1().Nodes().Delete(h.ctx, "n1", metav1.DeleteOptions{})
		}},
		{name: "node deleted, unchecked mutant", mutant: "pool-bind-unchecked", lift: true, bound: "n1",
			during: func(h *harness) { _ = h.client.CoreV1().Nodes().Delete(h.ctx, "n1", metav1.DeleteOptions{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setMutant(t, tc.mutant)
			h := newHarness(t, Config{FaultInjection: true, HoldTimeout: time.Second}, makeNode("n1", gpuNode))
			h.start()
			h.create(gpuPod("a", held))
			h.eventually("the bind is held", func() bool {
				return h.hasEvent("Normal BindHeld holding the bind to node n1 until the schedgate.io/fault annotation is removed")
			})
			if h.boundTo("a") != "" {
				t.Fatalf("bound while held")
			}
			if tc.during != nil {
				tc.during(h)
				time.Sleep(200 * time.Millisecond)
			}
			if tc.lift {
				patch := []byte(`{"metadata":{"annotations":{"` + FaultAnnotation + `":null}}}`)
				if _, err := h.client.CoreV1().Pods("default").Patch(h.ctx, "a", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.bound != "" {
				h.eventually("a is bound", func() bool { return h.boundTo("a") == tc.bound })
				return
			}
			if tc.event != "" {
				h.eventually("the event "+tc.event, func() bool { return h.hasEvent(tc.event) })
			}
			time.Sleep(1200 * time.Millisecond) // past the hold timeout
			if h.boundTo("a") != "" {
				t.Errorf("bound to %s", h.boundTo("a"))
			}
		})
	}
}

func TestHoldIgnoredWithoutFaultInjection(t *testing.T) {
	h := newHarness(t, Config{}, makeNode("n1", gpuNode))
	h.start()
	h.create(gpuPod("a", held))
	h.eventually("a is bound", func() bool { return h.boundTo("a") == "n1" })
	if h.hasEvent("Normal BindHeld") {
		t.Errorf("held without --fault-injection")
	}
}
