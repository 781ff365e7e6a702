//go:build kubernetes1.35 || kubernetes1.36

package draplugin

import "k8s.io/dynamic-resource-allocation/kubeletplugin"

// Before 1.37 the kubelet plugin helper has no device health service to turn off.
var withoutHealthService []kubeletplugin.Option
