package poolscheduler

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// The informers' handlers keep the assumed pods and the unschedulable set in
// step with the cluster, and retry unschedulable pods when a change could
// make one fit: a node added or changed (labels, taints, cordon,
// allocatable), a pod that used a node gone or finished, an assumed pod given
// up. The pool-no-requeue mutant build skips all of that but the resync.

func podKey(pod *v1.Pod) string {
	key, _ := cache.MetaNamespaceKeyFunc(pod)
	return key
}

// asPod is the pod of an informer object, also of a deletion tombstone.
func asPod(obj interface{}) (*v1.Pod, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*v1.Pod)
	return pod, ok
}

func (s *Scheduler) onPodAdd(obj interface{}) {
	pod, ok := asPod(obj)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		s.forget(pod.UID)
	}
	if s.responsible(pod) {
		s.queue.Add(podKey(pod))
	}
}

func (s *Scheduler) onPodUpdate(oldObj, newObj interface{}) {
	oldPod, ok1 := asPod(oldObj)
	pod, ok2 := asPod(newObj)
	if !ok1 || !ok2 {
		return
	}
	logger := klog.Background()
	key := podKey(pod)
	if pod.Spec.NodeName != "" {
		s.forget(pod.UID) // bound: the informer counts it now
	}
	if oldPod.Spec.NodeName != "" && !terminal(oldPod) && terminal(pod) {
		s.requeueUnschedulable(logger, "a pod finished")
	}
	switch {
	case s.responsible(pod):
		if !s.responsible(oldPod) || ownChange(oldPod, pod) {
			s.requeueOwn(key)
		}
	default:
		s.dropUnschedulable(key)
	}
}

// ownChange says whether an update to a pending pod may change where it fits.
func ownChange(oldPod, pod *v1.Pod) bool {
	return !apiequality.Semantic.DeepEqual(oldPod.Labels, pod.Labels) ||
		!apiequality.Semantic.DeepEqual(oldPod.Annotations, pod.Annotations) ||
		!apiequality.Semantic.DeepEqual(oldPod.Spec.Tolerations, pod.Spec.Tolerations) ||
		!apiequality.Semantic.DeepEqual(oldPod.Spec.Affinity, pod.Spec.Affinity) ||
		!apiequality.Semantic.DeepEqual(oldPod.Spec.NodeSelector, pod.Spec.NodeSelector)
}

func (s *Scheduler) onPodDelete(obj interface{}) {
	pod, ok := asPod(obj)
	if !ok {
		return
	}
	wasAssumed := s.forget(pod.UID)
	s.dropUnschedulable(podKey(pod))
	if wasAssumed || (pod.Spec.NodeName != "" && !terminal(pod)) {
		s.requeueUnschedulable(klog.Background(), "a pod was deleted")
	}
}

func (s *Scheduler) onNodeAdd(interface{}) {
	s.requeueUnschedulable(klog.Background(), "a node was added")
}

func (s *Scheduler) onNodeUpdate(oldObj, newObj interface{}) {
	oldNode, ok1 := oldObj.(*v1.Node)
	node, ok2 := newObj.(*v1.Node)
	if !ok1 || !ok2 {
		return
	}
	if !apiequality.Semantic.DeepEqual(oldNode.Labels, node.Labels) ||
		!apiequality.Semantic.DeepEqual(oldNode.Spec.Taints, node.Spec.Taints) ||
		oldNode.Spec.Unschedulable != node.Spec.Unschedulable ||
		!apiequality.Semantic.DeepEqual(oldNode.Status.Allocatable, node.Status.Allocatable) {
		s.requeueUnschedulable(klog.Background(), "a node changed")
	}
}

// forget drops the pod's assumption, saying whether there was one.
func (s *Scheduler) forget(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.assumed[uid]
	delete(s.assumed, uid)
	return ok
}

func (s *Scheduler) dropUnschedulable(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.unschedulable, key)
}

func (s *Scheduler) isUnschedulable(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unschedulable[key]
}

// requeueOwn retries a pending pod that changed itself. An unschedulable
// pod's own change is a cache change too, which the pool-no-requeue mutant
// build ignores.
func (s *Scheduler) requeueOwn(key string) {
	if noRequeue.On() && s.isUnschedulable(key) {
		return
	}
	s.queue.Add(key)
}

// requeueUnschedulable retries every unschedulable pod after a cache change
// that could help one (never in the pool-no-requeue mutant build).
func (s *Scheduler) requeueUnschedulable(logger klog.Logger, why string) {
	if noRequeue.On() {
		return
	}
	s.requeueAll(logger, why)
}

// requeueAll retries every unschedulable pod.
func (s *Scheduler) requeueAll(logger klog.Logger, why string) {
	s.mu.Lock()
	keys := make([]string, 0, len(s.unschedulable))
	for key := range s.unschedulable {
		keys = append(keys, key)
	}
	s.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	slices.Sort(keys)
	logger.V(3).Info("retrying unschedulable pods", "why", why, "pods", len(keys))
	for _, key := range keys {
		s.queue.Add(key)
	}
}
