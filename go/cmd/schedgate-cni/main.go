// Command schedgate-cni is the pod network of schedgate's kind nodes, in place
// of kindnetd (whose image cannot be pulled here). Run as a DaemonSet with the
// host's network, it watches the Nodes and
//
//   - writes this node's CNI configuration (ptp + host-local over the node's
//     spec.podCIDR) once the controller-manager has assigned one, and
//   - keeps a route to every other node's podCIDR via that node's InternalIP.
//
// It needs NODE_NAME (downward API) and reaches the API server through
// CONTROL_PLANE_ENDPOINT (host:port, added by kind) with its service account.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

const confFile = "10-schedgate.conflist"

func main() {
	node := os.Getenv("NODE_NAME")
	confDir := envOr("CNI_CONF_DIR", "/etc/cni/net.d")
	if node == "" {
		klog.Fatal("NODE_NAME is not set")
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		klog.Fatalf("in-cluster config: %v", err)
	}
	// Pods cannot reach the kubernetes Service before kube-proxy runs; kind
	// gives us the API server's own address instead.
	if ep := os.Getenv("CONTROL_PLANE_ENDPOINT"); ep != "" {
		cfg.Host = "https://" + ep
	}
	client := kubernetes.NewForConfigOrDie(cfg)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	factory := informers.NewSharedInformerFactory(client, 0)
	lister := factory.Core().V1().Nodes().Lister()
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(_, n any) { poke(n) },
		DeleteFunc: poke,
	}); err != nil {
		klog.Fatalf("node informer: %v", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	// Resync now and then as well, so a route removed behind our back comes back.
	ticker := time.NewTicker(30 * time.Second)
	defer ticker.Stop()
	for {
		nodes, err := lister.List(labels.Everything())
		if err != nil {
			klog.Errorf("list nodes: %v", err)
		} else if err := sync(node, confDir, nodes); err != nil {
			klog.Errorf("sync: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-ticker.C:
		}
	}
}

func sync(self, confDir string, nodes []*corev1.Node) error {
	for _, n := range nodes {
		cidr := n.Spec.PodCIDR
		if cidr == "" {
			continue
		}
		if n.Name == self {
			if err := writeConf(confDir, cidr); err != nil {
				return err
			}
			continue
		}
		ip := internalIP(n)
		if ip == nil {
			continue
		}
		_, dst, err := net.ParseCIDR(cidr)
		if err != nil {
			return fmt.Errorf("node %s: podCIDR %q: %w", n.Name, cidr, err)
		}
		if err := netlink.RouteReplace(&netlink.Route{Dst: dst, Gw: ip}); err != nil {
			return fmt.Errorf("route %s via %s (node %s): %w", dst, ip, n.Name, err)
		}
	}
	return nil
}

func internalIP(n *corev1.Node) net.IP {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			if ip := net.ParseIP(a.Address); ip != nil && ip.To4() != nil {
				return ip
			}
		}
	}
	return nil
}

// writeConf writes the CNI configuration for this node's pod range, replacing
// the file atomically and only when its content changes.
func writeConf(dir, cidr string) error {
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       "schedgate",
		"plugins": []any{
			map[string]any{
				"type":   "ptp",
				"ipMasq": false,
				"ipam": map[string]any{
					"type":   "host-local",
					"ranges": [][]map[string]string{{{"subnet": cidr}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
				},
				"mtu": 1500,
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(dir, confFile)
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	klog.Infof("wrote %s for pod range %s", path, cidr)
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
