package draplugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

// Driver prepares one driver's claims on one node.
type Driver struct {
	Name   string
	Node   string
	CDIDir string
}

var _ kubeletplugin.DRAPlugin = &Driver{}

// Prepared is what one claim's preparation gives the kubelet: the claim's devices of this driver on
// this node, in allocation order, with the claim's CDI device on the first result of each request.
func (d *Driver) Prepared(claim *resourceapi.ResourceClaim, cdiID string) ([]kubeletplugin.Device, []string) {
	var out []kubeletplugin.Device
	var names []string
	if claim.Status.Allocation == nil {
		return nil, nil
	}
	withID := map[string]bool{}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != d.Name || r.Pool != d.Node {
			continue
		}
		dev := kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device}
		if cdiID != "" && !withID[r.Request] {
			dev.CDIDeviceIDs = []string{cdiID}
			withID[r.Request] = true
		}
		out = append(out, dev)
		names = append(names, r.Device)
	}
	return out, names
}

// PrepareResourceClaims writes a CDI spec per claim and returns its devices.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	logger := klog.FromContext(ctx)
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		_, names := d.Prepared(claim, "")
		if len(names) == 0 {
			out[claim.UID] = kubeletplugin.PrepareResult{
				Err: fmt.Errorf("claim %s/%s has no device of driver %s in pool %s", claim.Namespace, claim.Name, d.Name, d.Node)}
			continue
		}
		id, err := WriteCDISpec(d.CDIDir, d.Name, claim.UID, names)
		if err != nil {
			out[claim.UID] = kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: write CDI spec: %w", claim.Namespace, claim.Name, err)}
			continue
		}
		devices, _ := d.Prepared(claim, id)
		logger.Info("Prepared claim", "claim", klog.KObj(claim), "uid", claim.UID, "devices", names, "cdiDevice", id)
		out[claim.UID] = kubeletplugin.PrepareResult{Devices: devices}
	}
	return out, nil
}

// UnprepareResourceClaims removes the claims' CDI specs.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	logger := klog.FromContext(ctx)
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		out[c.UID] = RemoveCDISpec(d.CDIDir, d.Name, c.UID)
		logger.Info("Unprepared claim", "claim", c.String())
	}
	return out, nil
}

// HandleError logs background errors (publishing ResourceSlices, gRPC): all of them are worth a retry here.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	runtime.HandleErrorWithContext(ctx, err, msg, "driver", d.Name)
}

// Publisher runs one kubelet plugin helper per driver in this process (each its own registration
// socket and plugin directory) and publishes each driver's devices as one pool named after the node.
type Publisher struct {
	Node   string
	CDIDir string
	Client kubernetes.Interface

	mu      sync.Mutex
	helpers map[string]*kubeletplugin.Helper
}

// Apply makes the node's published devices what “devices“ says: a driver not seen before gets a
// helper; a driver no longer listed publishes an empty pool (its slices go; its helper stays, so the
// kubelet can still unprepare its claims).
func (p *Publisher) Apply(ctx context.Context, devices NodeDevices) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.helpers == nil {
		p.helpers = map[string]*kubeletplugin.Helper{}
	}
	logger := klog.FromContext(ctx)
	var errs []error
	for _, driver := range devices.Drivers() {
		if _, ok := p.helpers[driver]; ok {
			continue
		}
		// The helper listens in <plugins>/<driver>/ but does not make the folder.
		if err := os.MkdirAll(filepath.Join(kubeletplugin.KubeletPluginsDir, driver), 0o750); err != nil {
			errs = append(errs, fmt.Errorf("driver %s: %w", driver, err))
			continue
		}
		opts := []kubeletplugin.Option{
			kubeletplugin.DriverName(driver), kubeletplugin.NodeName(p.Node), kubeletplugin.KubeClient(p.Client),
		}
		opts = append(opts, withoutHealthService...)
		h, err := kubeletplugin.Start(klog.NewContext(ctx, klog.LoggerWithValues(logger, "driver", driver)),
			&Driver{Name: driver, Node: p.Node, CDIDir: p.CDIDir}, opts...)
		if err != nil {
			errs = append(errs, fmt.Errorf("driver %s: start kubelet plugin: %w", driver, err))
			continue
		}
		logger.Info("Started kubelet plugin", "driver", driver, "node", p.Node)
		p.helpers[driver] = h
	}
	for driver, h := range p.helpers {
		pools := map[string]resourceslice.Pool{}
		if devs, ok := devices[driver]; ok {
			pools[p.Node] = resourceslice.Pool{Slices: []resourceslice.Slice{{Devices: devs}}}
		}
		if err := h.PublishResources(ctx, resourceslice.DriverResources{Pools: pools}); err != nil {
			errs = append(errs, fmt.Errorf("driver %s: publish: %w", driver, err))
			continue
		}
		logger.Info("Published devices", "driver", driver, "pool", p.Node, "devices", len(devices[driver]))
	}
	return errors.Join(errs...)
}

// Stop stops every helper (their gRPC servers and ResourceSlice controllers).
func (p *Publisher) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for driver, h := range p.helpers {
		h.Stop()
		delete(p.helpers, driver)
	}
}
