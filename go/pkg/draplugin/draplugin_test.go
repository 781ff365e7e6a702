package draplugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

func TestDecodeNodeDevices(t *testing.T) {
	entry := `{"gpu.schedgate.io": [
	  {"name": "gpu-0", "attributes": {"nvlinkDomain": {"int": 0}, "model": {"string": "H100"}},
	   "capacity": {"memory": {"value": "80Gi"}}},
	  {"name": "gpu-1", "attributes": {"nvlinkDomain": {"int": 1}}}],
	 "nic.schedgate.io": []}`
	cases := []struct {
		name    string
		data    map[string]string
		node    string
		drivers []string
		devices []string // of gpu.schedgate.io
		err     string
	}{
		{name: "a node's entry gives each driver's devices, attributes and capacity intact",
			data: map[string]string{"a": entry, "b": `{"x.io": [{"name": "other"}]}`}, node: "a",
			drivers: []string{"gpu.schedgate.io", "nic.schedgate.io"}, devices: []string{"gpu-0", "gpu-1"}},
		{name: "a node without an entry has no devices", data: map[string]string{"b": entry}, node: "a",
			drivers: []string{}},
		{name: "a value that is no JSON object is an error", data: map[string]string{"a": `[1]`}, node: "a",
			err: "not a JSON object of drivers"},
		{name: "a field a ResourceSlice device does not have is an error, not dropped",
			data: map[string]string{"a": `{"gpu.schedgate.io": [{"name": "gpu-0", "atributes": {}}]}`}, node: "a",
			err: `unknown field "atributes"`},
		{name: "a device without a name is an error",
			data: map[string]string{"a": `{"gpu.schedgate.io": [{"attributes": {}}]}`}, node: "a", err: "has no name"},
		{name: "a device listed twice is an error",
			data: map[string]string{"a": `{"gpu.schedgate.io": [{"name": "g"}, {"name": "g"}]}`}, node: "a",
			err: "listed twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeNodeDevices(tc.data, tc.node)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := got.Drivers(); !reflect.DeepEqual(d, tc.drivers) {
				t.Fatalf("drivers %v, want %v", d, tc.drivers)
			}
			var names []string
			for _, d := range got["gpu.schedgate.io"] {
				names = append(names, d.Name)
			}
			if !reflect.DeepEqual(names, tc.devices) {
				t.Fatalf("devices %v, want %v", names, tc.devices)
			}
			if tc.devices == nil {
				return
			}
			g0 := got["gpu.schedgate.io"][0]
			if v := g0.Attributes["nvlinkDomain"].IntValue; v == nil || *v != 0 {
				t.Errorf("gpu-0 nvlinkDomain %v, want 0", v)
			}
			if q := g0.Capacity["memory"].Value; q.String() != "80Gi" {
				t.Errorf("gpu-0 memory %s, want 80Gi", q.String())
			}
			if got["nic.schedgate.io"] == nil {
				t.Errorf("a driver with an empty list must stay (an empty pool), got nil")
			}
		})
	}
}

func claim(uid types.UID, results ...resourceapi.DeviceRequestAllocationResult) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: uid},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: results}}},
	}
}

func result(request, driver, pool, device string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: request, Driver: driver, Pool: pool, Device: device}
}

func TestPrepareWritesCDISpecNamingTheDevices(t *testing.T) {
	dir := t.TempDir()
	d := &Driver{Name: "gpu.schedgate.io", Node: "whole", CDIDir: dir}
	c := claim("uid-1",
		result("gpus", "gpu.schedgate.io", "whole", "gpu-2"),
		result("gpus", "other.io", "whole", "x-0"),           // another driver's: not ours to prepare
		result("gpus", "gpu.schedgate.io", "split", "gpu-9"), // another node's pool
		result("gpus", "gpu.schedgate.io", "whole", "gpu-3"),
		result("nic", "gpu.schedgate.io", "whole", "gpu-5"))
	got, err := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c, claim("uid-2")})
	if err != nil {
		t.Fatal(err)
	}
	if got["uid-2"].Err == nil {
		t.Errorf("a claim with none of this driver's devices must fail to prepare, got %+v", got["uid-2"])
	}
	res := got["uid-1"]
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	id := "gpu.schedgate.io/device=uid-1"
	want := []kubeletplugin.Device{
		{Requests: []string{"gpus"}, PoolName: "whole", DeviceName: "gpu-2", CDIDeviceIDs: []string{id}},
		{Requests: []string{"gpus"}, PoolName: "whole", DeviceName: "gpu-3"},
		{Requests: []string{"nic"}, PoolName: "whole", DeviceName: "gpu-5", CDIDeviceIDs: []string{id}},
	}
	if !reflect.DeepEqual(res.Devices, want) {
		t.Fatalf("devices\n %+v\nwant\n %+v", res.Devices, want)
	}
	path := filepath.Join(dir, "schedgate-gpu.schedgate.io-uid-1.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	wantSpec := map[string]any{"cdiVersion": "0.6.0", "kind": "gpu.schedgate.io/device",
		"devices": []any{map[string]any{"name": "uid-1",
			"containerEdits": map[string]any{"env": []any{"SCHEDGATE_DEVICES=gpu-2,gpu-3,gpu-5"}}}}}
	if !reflect.DeepEqual(spec, wantSpec) {
		t.Fatalf("CDI spec %v, want %v", spec, wantSpec)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".schedgate-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// Unprepare removes the spec, and again is no error (the kubelet may repeat it).
	for i := 0; i < 2; i++ {
		errs, err := d.UnprepareResourceClaims(context.Background(),
			[]kubeletplugin.NamespacedObject{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "c"}, UID: "uid-1"}})
		if err != nil || errs["uid-1"] != nil {
			t.Fatalf("unprepare #%d: %v, %v", i+1, err, errs)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("unprepare #%d left %s (%v)", i+1, path, err)
		}
	}
}
