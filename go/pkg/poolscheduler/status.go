package poolscheduler

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// The reasons of the PodScheduled=False condition and of the events, as
// kube-scheduler words them.
const (
	reasonUnschedulable  = v1.PodReasonUnschedulable
	reasonSchedulerError = v1.PodReasonSchedulerError

	eventFailedScheduling = "FailedScheduling"
	eventScheduled        = "Scheduled"
	eventBindHeld         = "BindHeld"

	actionScheduling = "Scheduling"
	actionBinding    = "Binding"
)

// reportFailure says why the pod was not placed: PodScheduled=False with
// reason and msg, and a FailedScheduling event with msg.
func (s *Scheduler) reportFailure(ctx context.Context, pod *v1.Pod, reason, msg string) {
	if err := s.setNotScheduled(ctx, pod, reason, msg); err != nil {
		klog.FromContext(ctx).Error(err, "updating the pod's PodScheduled condition", "pod", klog.KObj(pod))
	}
	s.recorder.Eventf(pod, nil, v1.EventTypeWarning, eventFailedScheduling, actionScheduling, "%s", msg)
}

// setNotScheduled patches the pod's PodScheduled condition to False with
// reason and msg, unless the cached pod says so already.
func (s *Scheduler) setNotScheduled(ctx context.Context, pod *v1.Pod, reason, msg string) error {
	if cur, err := s.pods.Pods(pod.Namespace).Get(pod.Name); err == nil && cur.UID == pod.UID {
		pod = cur
	}
	cond := v1.PodCondition{
		Type:               v1.PodScheduled,
		Status:             v1.ConditionFalse,
		Reason:             reason,
		Message:            msg,
		ObservedGeneration: pod.Generation,
		LastTransitionTime: metav1.Now(),
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != v1.PodScheduled {
			continue
		}
		if c.Status == cond.Status && c.Reason == reason && c.Message == msg {
			return nil
		}
		if c.Status == cond.Status {
			cond.LastTransitionTime = c.LastTransitionTime
		}
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   map[string]any{"conditions": []v1.PodCondition{cond}},
	})
	if err != nil {
		return err
	}
	_, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, "status")
	return err
}
