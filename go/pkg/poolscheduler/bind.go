package poolscheduler

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// The bind-hold fault (test-only, honoured only with --fault-injection)
// holds a pod's bind after its node was chosen, until the pod's fault
// annotation no longer says bind-hold or the hold timeout passes. Tests use
// it for a deterministic "chosen but not bound" state, then delete the pod
// or its node meanwhile.
const (
	FaultAnnotation = "schedgate.io/fault"
	FaultBindHold   = "bind-hold"

	// holdPoll is how often a held bind looks at the cached pod.
	holdPoll = 100 * time.Millisecond
)

// bind binds the assumed pod to the chosen node, in its own goroutine: the
// bind-hold fault first, then the live node check (skipped by the
// pool-bind-unchecked mutant build), then the binding.
func (s *Scheduler) bind(ctx context.Context, pod *v1.Pod, node *v1.Node) {
	logger := klog.FromContext(ctx)
	if s.cfg.FaultInjection && pod.Annotations[FaultAnnotation] == FaultBindHold {
		s.recorder.Eventf(pod, nil, v1.EventTypeNormal, eventBindHeld, actionBinding,
			"holding the bind to node %s until the %s annotation is removed", node.Name, FaultAnnotation)
		if !s.waitHold(ctx, pod) {
			logger.Info("held pod is gone, not binding it", "pod", klog.KObj(pod), "node", node.Name)
			s.giveUp(logger, pod)
			return
		}
	}
	if !bindUnchecked.On() {
		if msg := s.checkNode(ctx, node); msg != "" {
			logger.Info("not binding: the node failed the live check", "pod", klog.KObj(pod), "node", node.Name, "reason", msg)
			s.failBind(ctx, pod, msg)
			return
		}
	}
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: node.Name},
	}
	err := s.client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
	switch {
	case err == nil:
		s.recorder.Eventf(pod, nil, v1.EventTypeNormal, eventScheduled, actionBinding,
			"Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node.Name)
		klog.Infof("bound pod %s/%s to node %s", pod.Namespace, pod.Name, node.Name)
		s.queue.Forget(podKey(pod))
	case apierrors.IsConflict(err):
		klog.Infof("pod %s/%s was not bound to node %s: %v", pod.Namespace, pod.Name, node.Name, err)
		s.giveUp(logger, pod)
		s.queue.Forget(podKey(pod))
	case apierrors.IsNotFound(err):
		logger.Info("pod is gone, not bound", "pod", klog.KObj(pod), "node", node.Name)
		s.giveUp(logger, pod)
		s.queue.Forget(podKey(pod))
	default:
		logger.Error(err, "binding the pod", "pod", klog.KObj(pod), "node", node.Name)
		s.failBind(ctx, pod, err.Error())
	}
}

// waitHold waits while the cached pod says bind-hold, for at most the hold
// timeout; it says false if the pod is gone (deleted, being deleted or
// replaced) or ctx ends.
func (s *Scheduler) waitHold(ctx context.Context, pod *v1.Pod) bool {
	logger := klog.FromContext(ctx)
	timeout := time.NewTimer(s.cfg.HoldTimeout)
	defer timeout.Stop()
	tick := time.NewTicker(holdPoll)
	defer tick.Stop()
	for {
		cur, err := s.pods.Pods(pod.Namespace).Get(pod.Name)
		if err != nil || cur.UID != pod.UID || cur.DeletionTimestamp != nil {
			return false
		}
		if cur.Annotations[FaultAnnotation] != FaultBindHold {
			logger.V(2).Info("bind hold lifted", "pod", klog.KObj(pod))
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-timeout.C:
			logger.Info("bind hold timed out, binding", "pod", klog.KObj(pod), "timeout", s.cfg.HoldTimeout)
			return true
		case <-tick.C:
		}
	}
}

// checkNode reads the chosen node from the API server, not the cache, and
// says why the pod must not be bound there ("" when it may).
func (s *Scheduler) checkNode(ctx context.Context, node *v1.Node) string {
	live, err := s.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("node %s no longer exists", node.Name)
	case err != nil:
		return fmt.Sprintf("checking node %s: %v", node.Name, err)
	case live.UID != node.UID:
		return fmt.Sprintf("node %s no longer exists", node.Name)
	case live.DeletionTimestamp != nil:
		return fmt.Sprintf("node %s is being deleted", node.Name)
	}
	return ""
}

// failBind gives the pod up with a SchedulerError and retries it after a
// backoff.
func (s *Scheduler) failBind(ctx context.Context, pod *v1.Pod, msg string) {
	s.reportFailure(ctx, pod, reasonSchedulerError, msg)
	s.giveUp(klog.FromContext(ctx), pod)
	s.queue.AddRateLimited(podKey(pod))
}

// giveUp forgets the assumed pod, which frees its node for the
// unschedulable pods.
func (s *Scheduler) giveUp(logger klog.Logger, pod *v1.Pod) {
	if s.forget(pod.UID) {
		s.requeueUnschedulable(logger, "an assumed pod was given up")
	}
}
