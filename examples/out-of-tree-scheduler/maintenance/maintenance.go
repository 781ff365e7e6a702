// Package maintenance is the Maintenance scheduling-framework plugin: a node
// labelled example.com/maintenance=true takes no new pods. Its pods keep
// running; only placement stops. A pod that fits nowhere else waits, and is
// retried when a node leaves maintenance (its label removed or set to
// anything but "true") or a node is added.
package maintenance

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

const (
	// Name is the plugin's name in the registry and in configurations.
	Name = "Maintenance"
	// Label on a Node, set to "true", puts it in maintenance.
	Label = "example.com/maintenance"
	// Message is what a pod's Unschedulable condition says of such nodes.
	Message = "node(s) are in maintenance"
)

// Plugin implements Maintenance.
type Plugin struct{}

var (
	_ fwk.FilterPlugin               = &Plugin{}
	_ fwk.EnqueueExtensions          = &Plugin{}
	_ frameworkruntime.PluginFactory = New
)

// New is the plugin factory. Maintenance takes no arguments.
func New(_ context.Context, _ runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	return &Plugin{}, nil
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// inMaintenance says whether a node takes no new pods.
func inMaintenance(node *v1.Node) bool { return node != nil && node.Labels[Label] == "true" }

// Filter refuses nodes in maintenance. Preempting pods there would not help,
// so the status is UnschedulableAndUnresolvable.
func (pl *Plugin) Filter(_ context.Context, _ fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if inMaintenance(nodeInfo.Node()) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, Message)
	}
	return nil
}

// EventsToRegister: a refused pod may fit once a node is added, or once a
// node's labels change so that it leaves maintenance.
func (pl *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.UpdateNodeLabel}, QueueingHintFn: leftMaintenance},
	}, nil
}

// leftMaintenance queues the pod when an update took a node out of maintenance.
func leftMaintenance(_ klog.Logger, _ *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldNode, okOld := oldObj.(*v1.Node)
	newNode, okNew := newObj.(*v1.Node)
	if okOld && okNew && inMaintenance(oldNode) && !inMaintenance(newNode) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
