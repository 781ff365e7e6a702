//go:build !kubernetes1.35 && !kubernetes1.36

package draplugin

import (
	"context"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// Kubernetes 1.37's kubelet plugin helper serves device health unless told not to
// (go/pins/: kubernetes1.35 and kubernetes1.36 builds use health_before137.go).

// WatchHealthStatus is not offered (the helper is started without the health service).
func (d *Driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

var withoutHealthService = []kubeletplugin.Option{kubeletplugin.HealthService(false)}
