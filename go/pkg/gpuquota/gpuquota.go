// Package gpuquota is the GPUQuota scheduling-framework plugin: the pods of a
// namespace hold at most the nvidia.com/gpu its GPUQuota objects allow. A
// GPUQuota is a custom resource (quota.schedgate.io/v1alpha1, namespaced;
// its CRD is clusters/crds/gpuquotas.quota.schedgate.io.yaml):
//
//	apiVersion: quota.schedgate.io/v1alpha1
//	kind: GPUQuota
//	metadata: {name: team-a}
//	spec: {maxGPUs: 4}
//
// It is schedgate's example of a plugin with state of its own in the API, as
// out-of-tree schedulers have (Coscheduling's PodGroup, CapacityScheduling's
// ElasticQuota): it reads its objects through an informer of its own, so the
// CRD must be served and the scheduler allowed to list and watch them before
// the scheduler starts; a scheduler that cannot list them exits, saying why.
//
// PreFilter counts the GPUs of the namespace's pods the scheduler holds on a
// node (bound or assumed) and refuses a pod that would take the namespace past
// the smallest maxGPUs of its GPUQuotas, as UnschedulableAndUnresolvable (no
// node changes that; preempting is not this plugin's). The refused pod is
// retried when a GPU pod of its namespace is deleted or a GPUQuota changes.
package gpuquota

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"schedgate/pkg/mutant"
)

const (
	// Name is the plugin name used in the registry and in configurations.
	Name = "GPUQuota"
	// GPU is the resource a GPUQuota limits.
	GPU = v1.ResourceName("nvidia.com/gpu")
	// quotaEvent names GPUQuota objects in EventsToRegister (resource.version.group).
	quotaEvent = fwk.EventResource("gpuquotas.v1alpha1.quota.schedgate.io")
)

// Resource is the GPUQuota objects' group, version and resource.
var Resource = schema.GroupVersionResource{Group: "quota.schedgate.io", Version: "v1alpha1", Resource: "gpuquotas"}

// noRequeue is a build whose refused pods wait for the scheduler's periodic flush (five minutes) instead of
// being retried when a pod of their namespace goes.
var noRequeue = mutant.Define(Name, "gpu-quota-no-requeue",
	"GPUQuota registers no event: a pod it refused is retried only by the five-minute flush")

// largestWins is a build that holds a namespace with several GPUQuotas to the largest.
var largestWins = mutant.Define(Name, "gpu-quota-largest-wins",
	"GPUQuota holds a namespace with several quotas to the largest, not the smallest")

// Plugin implements GPUQuota.
type Plugin struct {
	handle fwk.Handle
	quotas cache.GenericLister
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}

	// New must fit the registry's factory type.
	_ frameworkruntime.PluginFactory = New
)

// New starts the plugin's informer of GPUQuota objects and waits until it has listed them. A scheduler whose
// first list fails (the CRD not served, the objects not its to list, no API server) does not start: it exits
// with the list's error, in one line, instead of waiting for the objects forever.
func New(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	client, err := dynamic.NewForConfig(h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	// One list first, for its error: the informer would retry a refused list for ever, and a scheduler that
	// cannot start its plugin is better stopped saying why.
	if _, err := client.Resource(Resource).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return nil, fmt.Errorf("%s: cannot list %s: %w", Name, Resource.GroupResource(), err)
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	informer := factory.ForResource(Resource)
	factory.Start(ctx.Done())
	started := time.Now()
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		return nil, fmt.Errorf("%s: the %s informer did not sync", Name, Resource.GroupResource())
	}
	klog.FromContext(ctx).V(2).Info("GPUQuota plugin built", "synced", time.Since(started))
	return &Plugin{handle: h, quotas: informer.Lister()}, nil
}

// Name returns the plugin name.
func (pl *Plugin) Name() string { return Name }

func gpus(pod *v1.Pod) int64 {
	var n int64
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Requests[GPU]; ok {
			n += q.Value()
		}
	}
	return n
}

// limit is the smallest spec.maxGPUs of the namespace's GPUQuotas, with its object's name; ok false without one.
func (pl *Plugin) limit(namespace string) (name string, max int64, ok bool, err error) {
	objs, err := pl.quotas.ByNamespace(namespace).List(labels.Everything())
	if err != nil {
		return "", 0, false, err
	}
	for _, o := range objs {
		u, isU := o.(*unstructured.Unstructured)
		if !isU {
			continue
		}
		m, found, err := unstructured.NestedInt64(u.Object, "spec", "maxGPUs")
		if err != nil || !found {
			continue
		}
		if !ok || (m < max) != largestWins.On() {
			name, max, ok = u.GetName(), m, true
		}
	}
	return name, max, ok, nil
}

// used is what the namespace's pods on nodes hold, but pod itself.
func (pl *Plugin) used(pod *v1.Pod) (int64, error) {
	nodes, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, ni := range nodes {
		for _, pi := range ni.GetPods() {
			if p := pi.GetPod(); p.Namespace == pod.Namespace && p.UID != pod.UID {
				n += gpus(p)
			}
		}
	}
	return n, nil
}

// PreFilter refuses a GPU pod that would take its namespace past its quota.
func (pl *Plugin) PreFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	want := gpus(pod)
	if want == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	name, max, ok, err := pl.limit(pod.Namespace)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	used, err := pl.used(pod)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	if used+want > max {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf(
			"GPUQuota %s: %d of %d %s in use in namespace %s, the pod asks for %d", name, used, max, GPU,
			pod.Namespace, want))
	}
	return nil, nil
}

// PreFilterExtensions returns nil: the quota is the namespace's, not a node's.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// EventsToRegister: a refused pod may fit once a GPU pod of its namespace is deleted, or a GPUQuota changes.
func (pl *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	if noRequeue.On() {
		return []fwk.ClusterEventWithHint{}, nil
	}
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: sameNamespaceGPUs},
		{Event: fwk.ClusterEvent{Resource: quotaEvent, ActionType: fwk.Add | fwk.Update | fwk.Delete}},
	}, nil
}

// sameNamespaceGPUs requeues a pod when a pod of its namespace that held GPUs is deleted.
func sameNamespaceGPUs(_ klog.Logger, pod *v1.Pod, oldObj, _ interface{}) (fwk.QueueingHint, error) {
	gone, ok := oldObj.(*v1.Pod)
	if !ok || gone.Namespace != pod.Namespace || gpus(gone) == 0 {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
