package main

// One of upstream's own filter plugins run as the scheduler's cycle runs it: PreFilter, then Filter on each
// node, over a snapshot of the nodes and the bound pods.

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

type filterPlugin interface {
	fwk.PreFilterPlugin
	fwk.FilterPlugin
}

// filterEach runs the plugin made by newPlugin for pod on each of nodes, the pods others bound where they
// are: node name -> reason(status) where the node is refused, "" where it passes (or PreFilter skips).
func filterEach(pod *v1.Pod, nodes []*v1.Node, others []*v1.Pod,
	newPlugin func(context.Context, fwk.Handle) (fwk.Plugin, error), reason func(*fwk.Status) string) (map[string]string, error) {
	registerMetrics.Do(metrics.Register)
	ctx := context.Background()
	snapshot := cache.NewSnapshot(others, nodes)
	handle, err := frameworkruntime.NewFramework(ctx, nil, nil, frameworkruntime.WithSnapshotSharedLister(snapshot),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(fake.NewClientset(), 0)))
	if err != nil {
		return nil, fmt.Errorf("the scheduling framework: %w", err)
	}
	plugin, err := newPlugin(ctx, handle)
	if err != nil {
		return nil, err
	}
	pl := plugin.(filterPlugin)
	infos, err := snapshot.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	state := framework.NewCycleState()
	_, status := pl.PreFilter(ctx, state, pod, infos)
	for _, info := range infos {
		name := info.Node().Name
		switch {
		case status.IsSkip():
			out[name] = ""
		case !status.IsSuccess():
			out[name] = status.Message()
		default:
			if filtered := pl.Filter(ctx, state, pod, info); !filtered.IsSuccess() {
				out[name] = reason(filtered)
			} else {
				out[name] = ""
			}
		}
	}
	return out, nil
}

// without is bound but p.
func without(bound []*v1.Pod, p *v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(bound))
	for _, q := range bound {
		if q != p {
			out = append(out, q)
		}
	}
	return out
}
