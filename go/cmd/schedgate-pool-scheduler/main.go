// Command schedgate-pool-scheduler is schedgate's reference independent
// scheduler (see schedgate/pkg/poolscheduler): a process of its own that
// schedules the pods naming it in spec.schedulerName. This file only parses
// the flags and wires the parts together.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"

	"schedgate/pkg/mutant"
	"schedgate/pkg/poolscheduler"
)

const program = "schedgate-pool-scheduler"

type options struct {
	kubeconfig     string
	leaderElect    bool
	leaseName      string
	leaseNamespace string
	healthAddress  string
	qps            float64
	burst          int
	showVersion    bool
	cfg            poolscheduler.Config
}

func parseFlags() *options {
	o := &options{}
	klog.InitFlags(nil)
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig (required)")
	flag.StringVar(&o.cfg.SchedulerName, "scheduler-name", "pool-scheduler", "schedule the pods with this spec.schedulerName")
	flag.BoolVar(&o.leaderElect, "leader-elect", true, "schedule only while holding the lease")
	flag.StringVar(&o.leaseName, "lease-name", "", "the lease's name (default: the scheduler name)")
	flag.StringVar(&o.leaseNamespace, "lease-namespace", "kube-system", "the lease's namespace")
	flag.StringVar(&o.healthAddress, "health-address", "", "serve /healthz and /readyz on this HOST:PORT")
	flag.StringVar(&o.cfg.Labels.Tenant, "tenant-label", "tenant-id", "the pod label naming its tenant")
	flag.StringVar(&o.cfg.Labels.Pool, "pool-label", "schedgate.io/tenant-pool", "the node label naming its tenant pool")
	flag.BoolVar(&o.cfg.FaultInjection, "fault-injection", false,
		"honour the "+poolscheduler.FaultAnnotation+": "+poolscheduler.FaultBindHold+" pod annotation (tests only)")
	flag.DurationVar(&o.cfg.HoldTimeout, "hold-timeout", 30*time.Second, "the longest a bind-hold fault holds a bind")
	flag.DurationVar(&o.cfg.UnschedulableResync, "unschedulable-resync", 5*time.Minute, "how often to retry every unschedulable pod")
	flag.Float64Var(&o.qps, "qps", 50, "API requests per second")
	flag.IntVar(&o.burst, "burst", 100, "API request burst")
	flag.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	flag.Parse()
	if o.leaseName == "" {
		o.leaseName = o.cfg.SchedulerName
	}
	return o
}

func main() {
	// A mutant build says so first thing, as kube-scheduler does.
	if b := mutant.Banner(); b != "" {
		fmt.Fprintln(os.Stderr, b)
	}
	o := parseFlags()
	if o.showVersion {
		fmt.Printf("%s Kubernetes %s\n", program, version.Get().GitVersion)
		return
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%s: unexpected arguments %q\n", program, flag.Args())
		os.Exit(2)
	}
	if o.kubeconfig == "" {
		fmt.Fprintf(os.Stderr, "%s: --kubeconfig is required\n", program)
		os.Exit(2)
	}
	code := run(o)
	klog.Flush()
	os.Exit(code)
}

func run(o *options) int {
	if err := mutant.Check(); err != nil {
		klog.ErrorS(err, "refusing to start")
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	config, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		klog.ErrorS(err, "reading the kubeconfig", "path", o.kubeconfig)
		return 1
	}
	config.QPS, config.Burst = float32(o.qps), o.burst
	config.UserAgent = program
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		klog.ErrorS(err, "building the client")
		return 1
	}
	sched, err := poolscheduler.New(client, o.cfg)
	if err != nil {
		klog.ErrorS(err, "building the scheduler")
		return 1
	}
	if o.healthAddress != "" {
		if err := poolscheduler.ServeHealth(ctx, o.healthAddress, sched.HealthHandler()); err != nil {
			klog.ErrorS(err, "serving health", "address", o.healthAddress)
			return 1
		}
	}
	klog.InfoS("starting", "version", version.Get().GitVersion, "scheduler", o.cfg.SchedulerName, "mutant", mutant.Active())
	if err := sched.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return 0
		}
		klog.ErrorS(err, "starting")
		return 1
	}
	if !o.leaderElect {
		sched.Run(ctx)
		return 0
	}
	err = poolscheduler.RunLeaderElected(ctx, client, o.leaseNamespace, o.leaseName, sched.Run)
	if errors.Is(err, poolscheduler.ErrLeadershipLost) {
		klog.ErrorS(err, "exiting", "lease", o.leaseNamespace+"/"+o.leaseName)
		return 1
	}
	if err != nil {
		klog.ErrorS(err, "leader election")
		return 1
	}
	return 0
}
