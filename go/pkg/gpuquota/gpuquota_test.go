package gpuquota

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

func quota(namespace, name string, max int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "quota.schedgate.io/v1alpha1", "kind": "GPUQuota",
		"metadata": map[string]interface{}{"name": name, "namespace": namespace},
		"spec":     map[string]interface{}{"maxGPUs": max},
	}}
}

func lister(t *testing.T, objs ...*unstructured.Unstructured) cache.GenericLister {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if err := indexer.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return cache.NewGenericLister(indexer, Resource.GroupResource())
}

func gpuPod(namespace, name string, n int64) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{GPU: *resource.NewQuantity(n, resource.DecimalSI)}}}}}}
}

func TestTheSmallestQuotaOfTheNamespaceHolds(t *testing.T) {
	pl := &Plugin{quotas: lister(t, quota("a", "team", 4), quota("a", "team-tight", 2), quota("b", "other", 1))}
	name, max, ok, err := pl.limit("a")
	if err != nil || !ok || name != "team-tight" || max != 2 {
		t.Fatalf("limit(a) = %q %d %v %v, want team-tight 2", name, max, ok, err)
	}
	if _, _, ok, _ := pl.limit("c"); ok {
		t.Fatal("a namespace without a GPUQuota has a limit")
	}
}

func TestGPUsCountEveryContainersRequest(t *testing.T) {
	p := gpuPod("a", "p", 2)
	p.Spec.Containers = append(p.Spec.Containers, gpuPod("a", "q", 1).Spec.Containers[0])
	if got := gpus(p); got != 3 {
		t.Fatalf("gpus = %d, want 3", got)
	}
}

func TestARefusedPodIsRetriedOnlyByTheDeletionOfAGPUPodOfItsNamespace(t *testing.T) {
	waiting := gpuPod("a", "w", 1)
	for _, c := range []struct {
		gone *v1.Pod
		want fwk.QueueingHint
	}{
		{gpuPod("a", "g", 1), fwk.Queue},
		{gpuPod("b", "g", 1), fwk.QueueSkip},
		{gpuPod("a", "g", 0), fwk.QueueSkip},
	} {
		got, err := sameNamespaceGPUs(klog.Background(), waiting, c.gone, nil)
		if err != nil || got != c.want {
			t.Errorf("deleted %s/%s with %d GPUs: %v %v, want %v", c.gone.Namespace, c.gone.Name, gpus(c.gone), got,
				err, c.want)
		}
	}
}
