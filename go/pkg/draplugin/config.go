// Package draplugin is schedgate's DRA kubelet plugin for kind nodes: it
// publishes the devices a cluster definition gives a node (handed over in one
// ConfigMap) and prepares the claims the scheduler allocated from them by
// writing a CDI spec that names the devices in the container's environment.
package draplugin

import (
	"encoding/json"
	"fmt"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
)

const (
	// ConfigMapName and ConfigMapNamespace name the ConfigMap schedgate writes:
	// one key per node, its value a JSON object {"<driver>": [<devices>]}, each
	// device exactly as an entry of a resource.k8s.io/v1 ResourceSlice's spec.devices.
	ConfigMapName      = "schedgate-devices"
	ConfigMapNamespace = "kube-system"
)

// NodeDevices are one node's devices by driver name.
type NodeDevices map[string][]resourceapi.Device

// Drivers are the driver names, sorted.
func (n NodeDevices) Drivers() []string {
	out := make([]string, 0, len(n))
	for d := range n {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// DecodeNodeDevices reads node's entry of the ConfigMap's data. A node without
// an entry has no devices (an empty, non-nil map). Unknown device fields are
// an error: a field this plugin would drop silently is a device published wrong.
func DecodeNodeDevices(data map[string]string, node string) (NodeDevices, error) {
	out := NodeDevices{}
	raw, ok := data[node]
	if !ok || raw == "" {
		return out, nil
	}
	var byDriver map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &byDriver); err != nil {
		return nil, fmt.Errorf("node %s: not a JSON object of drivers: %w", node, err)
	}
	for driver, msg := range byDriver {
		if driver == "" {
			return nil, fmt.Errorf("node %s: empty driver name", node)
		}
		var devices []resourceapi.Device
		if err := strictUnmarshal(msg, &devices); err != nil {
			return nil, fmt.Errorf("node %s, driver %s: %w", node, driver, err)
		}
		seen := map[string]bool{}
		for i, d := range devices {
			if d.Name == "" {
				return nil, fmt.Errorf("node %s, driver %s: device %d has no name", node, driver, i)
			}
			if seen[d.Name] {
				return nil, fmt.Errorf("node %s, driver %s: device %s listed twice", node, driver, d.Name)
			}
			seen[d.Name] = true
		}
		if devices == nil {
			devices = []resourceapi.Device{}
		}
		out[driver] = devices
	}
	return out, nil
}
