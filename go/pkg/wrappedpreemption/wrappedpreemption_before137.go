//go:build kubernetes1.35 || kubernetes1.36

package wrappedpreemption

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// New refuses: the plugin is written against 1.37's preemption API (its mutant runs on the pinned version).
func New(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return nil, fmt.Errorf("%s: built only on Kubernetes 1.37 and later", Name)
}
