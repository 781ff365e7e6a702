// Package since137 is the factory of a plugin written against Kubernetes 1.37's framework API, in a build
// on an older pin: it refuses to make the plugin, naming it.
package since137

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// Refuse is a plugin factory that fails with the plugin's name (its mutants run on the pinned version).
func Refuse(name string) func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return nil, fmt.Errorf("%s: built only on Kubernetes 1.37 and later", name)
	}
}
