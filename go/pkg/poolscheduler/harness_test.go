package poolscheduler

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
)

var podsResource = v1.SchemeGroupVersion.WithResource("pods")

// harness is a scheduler against a fake clientset whose bindings set the
// pod's node, as the API server does.
type harness struct {
	t       *testing.T
	ctx     context.Context
	stop    context.CancelFunc
	running chan struct{} // closed when Run returns
	client  *fake.Clientset
	s       *Scheduler
	events  *events.FakeRecorder

	mu       sync.Mutex
	binds    map[string]string // pod name -> node
	bindErr  error             // returned by every binding when set
	eventLog []string
}

func newHarness(t *testing.T, cfg Config, objs ...runtime.Object) *harness {
	t.Helper()
	if cfg.SchedulerName == "" {
		cfg.SchedulerName = "pool-scheduler"
	}
	cfg.Labels = testLabels
	if cfg.HoldTimeout == 0 {
		cfg.HoldTimeout = 30 * time.Second
	}
	if cfg.UnschedulableResync == 0 {
		cfg.UnschedulableResync = time.Hour
	}
	h := &harness{t: t, client: fake.NewClientset(objs...), binds: map[string]string{}, events: events.NewFakeRecorder(1000)}
	h.client.PrependReactor("create", "pods", h.bind)
	s, err := New(h.client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.recorder = h.events
	h.s = s
	h.ctx, h.stop = context.WithCancel(context.Background())
	t.Cleanup(h.shutdown)
	return h
}

// shutdown stops the scheduler and waits for its goroutines, so that the
// next test may switch the mutant.
func (h *harness) shutdown() {
	h.stop()
	if h.running != nil {
		<-h.running
	}
	h.s.factory.Shutdown()
}

// start syncs the informers and runs the scheduler.
func (h *harness) start() {
	h.t.Helper()
	if err := h.s.Start(h.ctx); err != nil {
		h.t.Fatal(err)
	}
	h.running = make(chan struct{})
	go func() {
		defer close(h.running)
		h.s.Run(h.ctx)
	}()
}

func (h *harness) bind(action k8stesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "binding" {
		return false, nil, nil
	}
	b := action.(k8stesting.CreateAction).GetObject().(*v1.Binding)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bindErr != nil {
		return true, nil, h.bindErr
	}
	obj, err := h.client.Tracker().Get(podsResource, b.Namespace, b.Name)
	if err != nil {
		return true, nil, err
	}
	pod := obj.(*v1.Pod).DeepCopy()
	if pod.Spec.NodeName != "" {
		return true, nil, apierrors.NewConflict(podsResource.GroupResource(), b.Name, nil)
	}
	pod.Spec.NodeName = b.Target.Name
	h.binds[b.Name] = b.Target.Name
	return true, nil, h.client.Tracker().Update(podsResource, pod, b.Namespace)
}

func (h *harness) boundTo(pod string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.binds[pod]
}

func (h *harness) create(objs ...runtime.Object) {
	h.t.Helper()
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *v1.Pod:
			_, err = h.client.CoreV1().Pods(o.Namespace).Create(h.ctx, o, metav1.CreateOptions{})
		case *v1.Node:
			_, err = h.client.CoreV1().Nodes().Create(h.ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			h.t.Fatal(err)
		}
	}
}

// eventually waits up to 5s for cond.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting until %s; events: %q", what, h.drainEvents())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// drainEvents returns every event recorded so far.
func (h *harness) drainEvents() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		select {
		case e := <-h.events.Events:
			h.eventLog = append(h.eventLog, e)
		default:
			return append([]string(nil), h.eventLog...)
		}
	}
}

// hasEvent says whether an event starting with prefix was recorded.
func (h *harness) hasEvent(prefix string) bool {
	for _, e := range h.drainEvents() {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// condition is the pod's PodScheduled condition in the API.
func (h *harness) condition(pod string) (v1.PodCondition, bool) {
	p, err := h.client.CoreV1().Pods("default").Get(h.ctx, pod, metav1.GetOptions{})
	if err != nil {
		return v1.PodCondition{}, false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c, true
		}
	}
	return v1.PodCondition{}, false
}

func (h *harness) isAssumed(pod *v1.Pod) bool {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	_, ok := h.s.assumed[pod.UID]
	return ok
}
