// Command schedgate-dra-plugin is the DRA kubelet plugin of schedgate's kind
// nodes. Run as a DaemonSet, it watches the ConfigMap kube-system/schedgate-devices
// (key: node name; value: {"<driver>": [<ResourceSlice spec.devices entries>]})
// and, for each driver in its node's entry, runs a kubelet plugin helper that
// publishes those devices in one pool named after the node, republishing on
// every change. The kubelet asks it to prepare each claim allocated from that
// pool: it writes a CDI spec whose device sets SCHEDGATE_DEVICES to the claim's
// device names and hands the CDI device to the kubelet.
//
// It needs NODE_NAME (downward API); the CDI spec folder is CDI_DIR (default
// /var/run/cdi, where containerd 2.x looks by default).
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"schedgate/pkg/draplugin"
)

func main() {
	klog.InitFlags(nil)
	flag.Parse()
	node := os.Getenv("NODE_NAME")
	if node == "" {
		klog.Fatal("NODE_NAME is not set")
	}
	cdiDir := os.Getenv("CDI_DIR")
	if cdiDir == "" {
		cdiDir = draplugin.DefaultCDIDir
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		klog.Fatalf("in-cluster config: %v", err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.LoggerWithValues(klog.Background(), "node", node))
	pub := &draplugin.Publisher{Node: node, CDIDir: cdiDir, Client: client}
	defer pub.Stop()

	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(draplugin.ConfigMapNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", draplugin.ConfigMapName).String()
		}))
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	informer := factory.Core().V1().ConfigMaps()
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, n any) { poke(n) }, DeleteFunc: poke,
	}); err != nil {
		klog.Fatalf("configmap informer: %v", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	klog.InfoS("Watching devices", "configmap", draplugin.ConfigMapNamespace+"/"+draplugin.ConfigMapName, "cdiDir", cdiDir)
	poke(nil) // publish once even when the ConfigMap does not exist (yet): no devices

	const retry = 2 * time.Second
	var last string
	for {
		select {
		case <-ctx.Done():
			klog.InfoS("Stopping", "cause", context.Cause(ctx))
			factory.Shutdown()
			return
		case <-changed:
		}
		data := map[string]string{}
		cm, err := informer.Lister().ConfigMaps(draplugin.ConfigMapNamespace).Get(draplugin.ConfigMapName)
		if err == nil {
			data = cm.Data
		}
		if entry, ok := data[node]; ok && entry == last && last != "" {
			continue // another node's key changed
		}
		devices, err := draplugin.DecodeNodeDevices(data, node)
		if err != nil {
			klog.ErrorS(err, "Bad device entry; keeping what is published")
			continue
		}
		if err := pub.Apply(ctx, devices); err != nil {
			klog.ErrorS(err, "Publishing devices; trying again", "after", retry)
			time.AfterFunc(retry, func() { poke(nil) })
			continue
		}
		last = data[node]
	}
}
