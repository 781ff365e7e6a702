// Package poolscheduler is a reference independent scheduler: its own
// process, informers and bind call, standing in for kube-scheduler in the
// scenarios a black box may run.
//
// It schedules the pods whose spec.schedulerName is its name, one at a time,
// onto the least-loaded node they fit (see Fit and Choose), honouring taints,
// cordons, node selectors and required node affinity, resources and tenant
// pools: a pod labelled tenant-id=T may only use nodes labelled
// schedgate.io/tenant-pool=T, and a pod of no tenant only nodes of no pool.
// A pod no node fits gets PodScheduled=False (reason Unschedulable) and a
// FailedScheduling event, and is retried when the cluster changes in a way
// that could help, and periodically. Binds run apart from the choosing, each
// after re-reading its node from the API server (see bind.go).
package poolscheduler

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// A pod whose bind failed is retried after backoffInitial, doubling up to
// backoffMax while it keeps failing.
const (
	backoffInitial = 500 * time.Millisecond
	backoffMax     = 10 * time.Second
)

// Config is what the scheduler is told on its command line.
type Config struct {
	// SchedulerName is the spec.schedulerName of the pods it schedules, and
	// the reporting controller of its events.
	SchedulerName string
	// Labels name the tenant and pool labels.
	Labels Labels
	// FaultInjection honours the bind-hold fault annotation (tests only).
	FaultInjection bool
	// HoldTimeout bounds how long a bind-hold fault holds a bind.
	HoldTimeout time.Duration
	// UnschedulableResync is how often every unschedulable pod is retried
	// whatever changed.
	UnschedulableResync time.Duration
}

// Scheduler is one pool scheduler. Build it with New, start its informers
// with Start, and schedule with Run (while leading).
type Scheduler struct {
	cfg         Config
	client      kubernetes.Interface
	factory     informers.SharedInformerFactory
	pods        corelisters.PodLister
	nodes       corelisters.NodeLister
	hasSynced   []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	broadcaster events.EventBroadcaster
	recorder    events.EventRecorder

	// mu guards assumed and unschedulable.
	mu sync.Mutex
	// assumed are the pods chosen a node and not yet seen bound, by UID.
	assumed map[types.UID]assumedPod
	// unschedulable holds the keys of the pods no node fitted last time.
	unschedulable map[string]bool

	// binding counts the binds in flight.
	binding sync.WaitGroup

	synced  atomic.Bool
	leading atomic.Bool
}

// New builds a scheduler and registers its informers' handlers.
func New(client kubernetes.Interface, cfg Config) (*Scheduler, error) {
	if cfg.SchedulerName == "" {
		return nil, fmt.Errorf("the scheduler name is empty")
	}
	if cfg.HoldTimeout <= 0 || cfg.UnschedulableResync <= 0 {
		return nil, fmt.Errorf("the hold timeout and the unschedulable resync must be positive")
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods()
	nodeInformer := factory.Core().V1().Nodes()
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	s := &Scheduler{
		cfg:       cfg,
		client:    client,
		factory:   factory,
		pods:      podInformer.Lister(),
		nodes:     nodeInformer.Lister(),
		hasSynced: []cache.InformerSynced{podInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](backoffInitial, backoffMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pool-scheduler"}),
		broadcaster:   broadcaster,
		recorder:      broadcaster.NewRecorder(scheme.Scheme, cfg.SchedulerName),
		assumed:       map[types.UID]assumedPod{},
		unschedulable: map[string]bool{},
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: s.onPodAdd, UpdateFunc: s.onPodUpdate, DeleteFunc: s.onPodDelete,
	}); err != nil {
		return nil, err
	}
	if _, err := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: s.onNodeAdd, UpdateFunc: s.onNodeUpdate,
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// Start starts the informers and the event sink, and waits for the caches.
func (s *Scheduler) Start(ctx context.Context) error {
	if err := s.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("starting the event sink: %w", err)
	}
	s.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.hasSynced...) {
		return fmt.Errorf("the pod and node caches did not sync")
	}
	s.synced.Store(true)
	klog.FromContext(ctx).Info("caches synced", "scheduler", s.cfg.SchedulerName)
	return nil
}

// Healthy says whether the caches have synced and this process schedules.
func (s *Scheduler) Healthy() bool { return s.synced.Load() && s.leading.Load() }

// Run schedules until ctx ends: one worker choosing nodes, plus the periodic
// retry of unschedulable pods. It returns once the binds in flight are done.
func (s *Scheduler) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("scheduling", "scheduler", s.cfg.SchedulerName)
	s.leading.Store(true)
	defer s.leading.Store(false)
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	go s.resyncLoop(ctx)
	for s.processNext(ctx) {
	}
	s.binding.Wait()
}

// resyncLoop retries every unschedulable pod every UnschedulableResync.
func (s *Scheduler) resyncLoop(ctx context.Context) {
	ticker := time.NewTicker(s.cfg.UnschedulableResync)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			s.requeueAll(klog.FromContext(ctx), "periodic resync")
		}
	}
}

func (s *Scheduler) processNext(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	s.scheduleOne(ctx, key)
	return true
}

// responsible says whether the pod is this scheduler's to place now.
func (s *Scheduler) responsible(pod *v1.Pod) bool {
	return pod.Spec.SchedulerName == s.cfg.SchedulerName && pod.Spec.NodeName == "" &&
		pod.DeletionTimestamp == nil && !terminal(pod) && len(pod.Spec.SchedulingGates) == 0
}

// scheduleOne makes one attempt at the pod of key: it either assumes the pod
// onto a node and starts its bind, or reports it unschedulable.
func (s *Scheduler) scheduleOne(ctx context.Context, key string) {
	logger := klog.FromContext(ctx)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		s.queue.Forget(key)
		return
	}
	pod, err := s.pods.Pods(ns).Get(name)
	if err != nil || !s.responsible(pod) {
		if err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "reading the pod from the cache", "pod", key)
		}
		s.dropUnschedulable(key)
		s.queue.Forget(key)
		return
	}
	choice, assumed := s.choose(pod, key)
	s.queue.Forget(key)
	if assumed {
		return // its bind is in flight
	}
	if choice.Node == nil {
		logger.V(2).Info("pod is unschedulable", "pod", key, "message", choice.Message)
		s.reportFailure(ctx, pod, reasonUnschedulable, choice.Message)
		return
	}
	logger.V(2).Info("chose a node", "pod", key, "node", choice.Node.Name)
	s.binding.Add(1)
	go func() {
		defer s.binding.Done()
		s.bind(ctx, pod, choice.Node)
	}()
}

// choose picks the pod's node against the cache and the assumed pods, and
// assumes the pod there; it says so if the pod was assumed already.
func (s *Scheduler) choose(pod *v1.Pod, key string) (Choice, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.assumed[pod.UID]; ok {
		return Choice{}, true
	}
	// The pods are listed under the lock, so that a pod the pod handler
	// forgets is counted either as assumed or as bound.
	nodes, _ := s.nodes.List(labels.Everything())
	pods, _ := s.pods.List(labels.Everything())
	req := PodRequests(pod)
	choice := Choose(pod, req, NodeInfos(nodes, pods, s.assumed), s.cfg.Labels)
	if choice.Node == nil {
		s.unschedulable[key] = true
		return choice, false
	}
	delete(s.unschedulable, key)
	s.assumed[pod.UID] = assumedPod{key: key, node: choice.Node.Name, requests: req}
	return choice, false
}
