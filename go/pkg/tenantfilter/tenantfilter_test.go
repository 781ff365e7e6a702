package tenantfilter

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func mkNode(name, pool string) *framework.NodeInfo {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if pool != "" {
		node.Labels[NodeLabel] = pool
	}
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	return ni
}

func mkPod(uid, tenant string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID("uid-" + uid), Labels: map[string]string{}}}
	if tenant != "" {
		pod.Labels[PodLabel] = tenant
	}
	return pod
}

// run is PreFilter then Filter on node, as the framework runs them.
func run(t *testing.T, pl *Plugin, pod *v1.Pod, node *framework.NodeInfo) *fwk.Status {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	if _, s := pl.PreFilter(ctx, state, pod, nil); !s.IsSuccess() {
		return s
	}
	return pl.Filter(ctx, state, pod, node)
}

func TestPodWithoutTenantIsRejectedAtPreFilter(t *testing.T) {
	pl := &Plugin{args: Args{DefaultPolicy: PolicyAllow}}
	for _, pod := range []*v1.Pod{mkPod("none", ""), {ObjectMeta: metav1.ObjectMeta{Name: "nil-labels"}}} {
		_, s := pl.PreFilter(context.Background(), framework.NewCycleState(), pod, nil)
		if s.Code() != fwk.UnschedulableAndUnresolvable || s.Message() != msgNoTenant {
			t.Errorf("PreFilter(%s) = %v, want UnschedulableAndUnresolvable %q", pod.Name, s, msgNoTenant)
		}
	}
}

func TestTenantUsesOnlyItsOwnPool(t *testing.T) {
	deny := &Plugin{args: Args{DefaultPolicy: PolicyDeny}}
	allow := &Plugin{args: Args{DefaultPolicy: PolicyAllow}}
	shared := &Plugin{args: Args{DefaultPolicy: PolicyDeny, Pools: map[string][]string{"shared": {"a", "b"}}}}
	a := mkPod("a", "a")
	cases := []struct {
		name string
		pl   *Plugin
		node *framework.NodeInfo
		code fwk.Code
		msg  string
	}{
		{"own pool", deny, mkNode("n", "a"), fwk.Success, ""},
		{"other pool", deny, mkNode("n", "b"), fwk.UnschedulableAndUnresolvable, msgOtherPool},
		{"other pool, allow policy", allow, mkNode("n", "b"), fwk.UnschedulableAndUnresolvable, msgOtherPool},
		{"no pool, deny", deny, mkNode("n", ""), fwk.UnschedulableAndUnresolvable, msgNoPool},
		{"no pool, allow", allow, mkNode("n", ""), fwk.Success, ""},
		{"pool listing the tenant", shared, mkNode("n", "shared"), fwk.Success, ""},
		{"listed pool does not fall back to its own name", &Plugin{args: Args{Pools: map[string][]string{"a": {"x"}}}}, mkNode("n", "a"), fwk.UnschedulableAndUnresolvable, msgOtherPool},
	}
	for _, c := range cases {
		s := run(t, c.pl, a, c.node)
		if s.Code() != c.code || (c.msg != "" && s.Message() != c.msg) {
			t.Errorf("%s: %v, want %v %q", c.name, s, c.code, c.msg)
		}
	}
}

func TestFilterWithoutPreFilterReadsTheLabel(t *testing.T) {
	pl := &Plugin{args: Args{DefaultPolicy: PolicyDeny}}
	ctx := context.Background()
	if s := pl.Filter(ctx, framework.NewCycleState(), mkPod("a", "a"), mkNode("n", "b")); s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("Filter without PreFilter state onto another pool = %v", s)
	}
	if s := pl.Filter(ctx, framework.NewCycleState(), mkPod("a", ""), mkNode("n", "a")); s.Message() != msgNoTenant {
		t.Errorf("Filter without PreFilter state, no tenant = %v", s)
	}
}

func TestDecodeArgs(t *testing.T) {
	a, err := decodeArgs(nil)
	if err != nil || a.DefaultPolicy != PolicyDeny || a.Pools != nil {
		t.Errorf("nil args = %+v, %v", a, err)
	}
	a, err = decodeArgs(&runtime.Unknown{Raw: []byte(`{"defaultPolicy":"allow","pools":{"p":["a","b"]}}`), ContentType: runtime.ContentTypeJSON})
	if err != nil || a.DefaultPolicy != PolicyAllow || len(a.Pools["p"]) != 2 {
		t.Errorf("full args = %+v, %v", a, err)
	}
	if _, err := decodeArgs(&runtime.Unknown{Raw: []byte(`{"defaultPolicy":"maybe"}`), ContentType: runtime.ContentTypeJSON}); err == nil {
		t.Error("defaultPolicy maybe accepted")
	}
}

func TestRequeueOnOwnTenantChange(t *testing.T) {
	pod := mkPod("p", "")
	relabelled := mkPod("p", "a")
	other := mkPod("q", "a")
	logger := klog.Background()
	if h, _ := isOwnTenantChange(logger, pod, pod, relabelled); h != fwk.Queue {
		t.Errorf("own tenant-id added: %v, want Queue", h)
	}
	if h, _ := isOwnTenantChange(logger, pod, mkPod("q", ""), other); h != fwk.QueueSkip {
		t.Errorf("another pod's label: %v, want QueueSkip", h)
	}
	if h, _ := isOwnTenantChange(logger, pod, pod, pod); h != fwk.QueueSkip {
		t.Errorf("no change: %v, want QueueSkip", h)
	}
	events, err := (&Plugin{}).EventsToRegister(context.Background())
	if err != nil || len(events) != 2 {
		t.Errorf("EventsToRegister = %v, %v", events, err)
	}
}
