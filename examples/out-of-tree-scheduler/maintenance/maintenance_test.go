package maintenance

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func node(labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
}

func TestFilter(t *testing.T) {
	for name, tc := range map[string]struct {
		labels map[string]string
		want   fwk.Code
	}{
		"no label":         {nil, fwk.Success},
		"in maintenance":   {map[string]string{Label: "true"}, fwk.UnschedulableAndUnresolvable},
		"label not 'true'": {map[string]string{Label: "false"}, fwk.Success},
	} {
		t.Run(name, func(t *testing.T) {
			info := framework.NewNodeInfo()
			info.SetNode(node(tc.labels))
			got := (&Plugin{}).Filter(context.Background(), nil, &v1.Pod{}, info)
			if got.Code() != tc.want {
				t.Fatalf("Filter: %v, want %v", got.Code(), tc.want)
			}
			if tc.want != fwk.Success && got.Message() != Message {
				t.Fatalf("Filter message %q, want %q", got.Message(), Message)
			}
		})
	}
}

func TestLeftMaintenance(t *testing.T) {
	on, off := node(map[string]string{Label: "true"}), node(nil)
	for name, tc := range map[string]struct {
		old, new *v1.Node
		want     fwk.QueueingHint
	}{
		"left":         {on, off, fwk.Queue},
		"entered":      {off, on, fwk.QueueSkip},
		"stayed in":    {on, on, fwk.QueueSkip},
		"never was in": {off, off, fwk.QueueSkip},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := leftMaintenance(klog.Background(), &v1.Pod{}, tc.old, tc.new)
			if err != nil || got != tc.want {
				t.Fatalf("leftMaintenance: %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
