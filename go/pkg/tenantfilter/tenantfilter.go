// Package tenantfilter is the TenantFilter scheduling-framework plugin: a
// tenant's pods may only use the nodes of its own pool.
//
// A pod names its tenant with the label tenant-id (a label, not an
// annotation: tenants are selected and grouped by it, and labels are what
// selectors, quotas and dashboards already use). A node names the pool it
// belongs to with the label schedgate.io/tenant-pool. By default a pool admits
// the tenant of the same name; the plugin args can map a pool to several
// tenants. Nodes without a pool label are closed to tenant pods unless the
// args set defaultPolicy: allow.
//
// A pod without a tenant-id is rejected once, at PreFilter, as
// UnschedulableAndUnresolvable: no node can change that, only the pod. Nodes
// of another pool are rejected at Filter as UnschedulableAndUnresolvable too
// (preempting pods there would not help); the pod is retried when a node is
// added or relabelled, or when its own tenant-id label changes.
package tenantfilter

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

const (
	// Name is the plugin name used in the registry and in configurations.
	Name = "TenantFilter"

	// PodLabel on a Pod names its tenant.
	PodLabel = "tenant-id"
	// NodeLabel on a Node names the tenant pool it belongs to.
	NodeLabel = "schedgate.io/tenant-pool"

	// Values of Args.DefaultPolicy: what a node without NodeLabel does.
	PolicyDeny  = "deny"
	PolicyAllow = "allow"

	// Stable messages, relied upon by tests and users.
	msgNoTenant        = "TenantFilter: pod has no " + PodLabel + " label"
	msgOtherPool       = "node(s) belong to another tenant's pool"
	msgNoPool          = "node(s) have no tenant pool"
	stateKey           = fwk.StateKey(Name)
	defaultPolicyValue = PolicyDeny
)

// Args are the plugin arguments (pluginConfig[].args).
type Args struct {
	// DefaultPolicy says whether nodes without a pool label admit tenant
	// pods: "deny" (default) or "allow".
	DefaultPolicy string `json:"defaultPolicy"`
	// Pools maps a pool name to the tenants it admits. A pool not listed
	// admits only the tenant of the same name.
	Pools map[string][]string `json:"pools"`
}

// Plugin implements TenantFilter.
type Plugin struct {
	args Args
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}

	// New must fit the registry's factory type.
	_ frameworkruntime.PluginFactory = New
)

// decodeArgs turns the configuration object into Args, applying defaults.
func decodeArgs(obj runtime.Object) (Args, error) {
	args := Args{}
	if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
		return Args{}, fmt.Errorf("decoding %s args: %w", Name, err)
	}
	switch args.DefaultPolicy {
	case "":
		args.DefaultPolicy = defaultPolicyValue
	case PolicyDeny, PolicyAllow:
	default:
		return Args{}, fmt.Errorf("%s args: defaultPolicy must be %q or %q, got %q", Name, PolicyDeny, PolicyAllow, args.DefaultPolicy)
	}
	return args, nil
}

// New is the plugin factory (frameworkruntime.PluginFactory).
func New(ctx context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	args, err := decodeArgs(obj)
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).V(2).Info("TenantFilter plugin built", "defaultPolicy", args.DefaultPolicy, "pools", len(args.Pools))
	return &Plugin{args: args}, nil
}

// Name returns the plugin name.
func (pl *Plugin) Name() string { return Name }

// tenantState carries the pod's tenant from PreFilter to Filter.
type tenantState struct{ tenant string }

func (s *tenantState) Clone() fwk.StateData { return s }

// PreFilter rejects a pod without a tenant and remembers the tenant for Filter.
func (pl *Plugin) PreFilter(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	tenant := pod.Labels[PodLabel]
	if tenant == "" {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msgNoTenant)
	}
	state.Write(stateKey, &tenantState{tenant: tenant})
	return nil, nil
}

// PreFilterExtensions returns nil: other pods do not change a node's pool.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// tenantOf is the tenant PreFilter saw. Should Filter run without it (a
// profile enabling only Filter), it reads the label itself.
func tenantOf(state fwk.CycleState, pod *v1.Pod) string {
	if state != nil {
		if d, err := state.Read(stateKey); err == nil {
			if s, ok := d.(*tenantState); ok {
				return s.tenant
			}
		}
	}
	return pod.Labels[PodLabel]
}

// admits says whether a node in pool may run pods of tenant.
func (pl *Plugin) admits(pool, tenant string) bool {
	if tenants, ok := pl.args.Pools[pool]; ok {
		return slices.Contains(tenants, tenant)
	}
	return pool == tenant
}

// Filter lets a pod onto nodes of its tenant's pool only.
func (pl *Plugin) Filter(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeInfo.Node()
	if node == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	tenant := tenantOf(state, pod)
	if tenant == "" {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msgNoTenant)
	}
	pool, labelled := node.Labels[NodeLabel]
	switch {
	case !labelled || pool == "":
		if pl.args.DefaultPolicy == PolicyAllow {
			return nil
		}
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msgNoPool)
	case !pl.admits(pool, tenant):
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msgOtherPool)
	}
	return nil
}

// EventsToRegister: a rejected pod may fit after a node appears or its labels
// change, or after its own tenant-id label changes.
func (pl *Plugin) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.UpdatePodLabel}, QueueingHintFn: isOwnTenantChange},
	}, nil
}

// isOwnTenantChange requeues a pod when an update to that same pod changed
// its tenant-id label.
func isOwnTenantChange(_ klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldPod, okOld := oldObj.(*v1.Pod)
	newPod, okNew := newObj.(*v1.Pod)
	if !okOld || !okNew || newPod.UID != pod.UID || oldPod.Labels[PodLabel] == newPod.Labels[PodLabel] {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}
