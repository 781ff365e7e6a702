package networkslots

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// SharedPool names the ConfigMap in which every scheduler process enabling
// NetworkSlots with the same SharedPool claims its pods' slots. Each
// process's ledger sees only its own reservations, so two schedulers that
// filter alone can both hand out a node's last slot; the claim, an update of
// this one object with a resourceVersion precondition, is where exactly one
// of them wins. The ConfigMap must exist (whoever deploys the schedulers
// creates it; the schedulers only need get and update on it).
//
// Data: one key per claiming pod UID, value "namespace/name node slots".
type SharedPool struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// validate checks the sharedPool args; nil (off) is valid.
func (sp *SharedPool) validate() error {
	if sp != nil && (sp.Namespace == "" || sp.Name == "") {
		return fmt.Errorf("%s args: sharedPool needs both namespace and name, got %+v", Name, *sp)
	}
	return nil
}

const (
	// FaultPreBindHold parks a pod in PreBind, before its claim, until the
	// fault annotation is lifted (or HoldTimeout passes): a test can get two
	// pods past Reserve in two schedulers before either claims.
	FaultPreBindHold = "prebind-hold"
	// holdTimeout bounds a prebind-hold.
	holdTimeout  = 60 * time.Second
	holdInterval = 20 * time.Millisecond

	// maxClaimAttempts bounds the optimistic-concurrency retries of a claim.
	maxClaimAttempts = 20

	msgHoldTimeout = "NetworkSlots PreBind hold timed out"
)

// msgClaimRefused is the stable message of a lost claim.
func msgClaimRefused(node string) string {
	return fmt.Sprintf("NetworkSlots PreBind: node %s has no free network slot in the shared pool", node)
}

// claim is one pod's entry in the shared pool.
type claim struct {
	namespace, name, node string
	slots                 int64
}

func (c claim) String() string {
	return fmt.Sprintf("%s/%s %s %d", c.namespace, c.name, c.node, c.slots)
}

// parseClaim reads a ConfigMap value; ok is false for a malformed one.
func parseClaim(s string) (claim, bool) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return claim{}, false
	}
	ns, name, found := strings.Cut(f[0], "/")
	n, err := strconv.ParseInt(f[2], 10, 64)
	if !found || err != nil || n < 0 {
		return claim{}, false
	}
	return claim{namespace: ns, name: name, node: f[1], slots: n}, true
}

// shared holds what the binding cycle needs beyond the ledger: the shared
// pool (nil pool = claims off) and the pod lister for holds and pruning.
type shared struct {
	pool   *SharedPool
	client clientset.Interface
	pods   corelisters.PodLister
	// claimed records the pods this process has a claim for, so Unreserve
	// talks to the API only when there is something to give back.
	claimed sync.Map
}

func newShared(pool *SharedPool, client clientset.Interface, pods corelisters.PodLister) *shared {
	return &shared{pool: pool, client: client, pods: pods}
}

// prebind holds the pod if asked to, then claims its slots on node. A nil
// receiver (a plugin built without one, in unit tests) does nothing.
func (s *shared) prebind(ctx context.Context, pl *Plugin, pod *v1.Pod, node *v1.Node) *fwk.Status {
	if s == nil {
		return nil
	}
	if pl.fault(pod) == FaultPreBindHold {
		if st := s.hold(ctx, pod); !st.IsSuccess() {
			return st
		}
	}
	if s.pool == nil {
		return nil
	}
	return s.claim(ctx, pod, node.Name, podRequest(pod), nodeCapacity(node))
}

// hold waits until the pod's prebind-hold fault is lifted, the pod is gone,
// or the timeout passes.
func (s *shared) hold(ctx context.Context, pod *v1.Pod) *fwk.Status {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("NetworkSlots: holding pod in PreBind", "pod", klog.KObj(pod))
	deadline := time.NewTimer(holdTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(holdInterval)
	defer tick.Stop()
	for {
		cur, err := s.pods.Pods(pod.Namespace).Get(pod.Name)
		if err != nil || cur.UID != pod.UID || cur.Annotations[FaultAnnotation] != FaultPreBindHold {
			logger.V(2).Info("NetworkSlots: PreBind hold lifted", "pod", klog.KObj(pod))
			return nil
		}
		select {
		case <-ctx.Done():
			return fwk.AsStatus(ctx.Err())
		case <-deadline.C:
			return fwk.NewStatus(fwk.Error, msgHoldTimeout)
		case <-tick.C:
		}
	}
}

// claim records the pod's claim on node in the shared pool, unless the
// claims already there leave fewer than slots of capacity. Claims of pods
// that no longer exist (or have finished) are pruned on the way.
func (s *shared) claim(ctx context.Context, pod *v1.Pod, node string, slots, capacity int64) *fwk.Status {
	logger := klog.FromContext(ctx)
	cms := s.client.CoreV1().ConfigMaps(s.pool.Namespace)
	want := claim{namespace: pod.Namespace, name: pod.Name, node: node, slots: slots}
	for attempt := 1; attempt <= maxClaimAttempts; attempt++ {
		cm, err := cms.Get(ctx, s.pool.Name, metav1.GetOptions{})
		if err != nil {
			return fwk.AsStatus(fmt.Errorf("NetworkSlots PreBind: reading shared pool %s/%s: %w", s.pool.Namespace, s.pool.Name, err))
		}
		data := map[string]string{}
		for k, v := range cm.Data {
			data[k] = v
		}
		pruned := s.prune(ctx, data, pod.UID)
		used := int64(0)
		for uid, v := range data {
			if c, ok := parseClaim(v); ok && c.node == node && types.UID(uid) != pod.UID {
				used += c.slots
			}
		}
		if used+slots > capacity {
			logger.V(2).Info("NetworkSlots: claim refused", "pod", klog.KObj(pod), "node", node, "claimed", used, "capacity", capacity)
			return fwk.NewStatus(fwk.Error, msgClaimRefused(node))
		}
		if data[string(pod.UID)] == want.String() && len(pruned) == 0 {
			s.claimed.Store(pod.UID, node)
			return nil
		}
		data[string(pod.UID)] = want.String()
		cm.Data = data
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				logger.V(4).Info("NetworkSlots: claim conflict, retrying", "pod", klog.KObj(pod), "attempt", attempt)
				continue
			}
			return fwk.AsStatus(fmt.Errorf("NetworkSlots PreBind: claiming on node %s: %w", node, err))
		}
		s.claimed.Store(pod.UID, node)
		logger.V(2).Info("NetworkSlots: claimed", "pod", klog.KObj(pod), "node", node, "slots", slots, "pruned", pruned)
		return nil
	}
	return fwk.NewStatus(fwk.Error, fmt.Sprintf("NetworkSlots PreBind: claiming on node %s: still conflicting after %d attempts", node, maxClaimAttempts))
}

// prune removes from data the claims of pods that are gone or finished and
// returns their UIDs. A pod the informer does not show (too new, or gone) is
// looked up in the API; one whose fate is uncertain (an API error) is kept.
func (s *shared) prune(ctx context.Context, data map[string]string, self types.UID) []string {
	var pruned []string
	for uid, v := range data {
		if types.UID(uid) == self {
			continue
		}
		c, ok := parseClaim(v)
		if ok && s.alive(ctx, types.UID(uid), c) {
			continue
		}
		delete(data, uid)
		pruned = append(pruned, uid)
	}
	sort.Strings(pruned)
	return pruned
}

func running(p *v1.Pod, uid types.UID) bool {
	return p.UID == uid && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
}

// alive says whether the claim's pod may still hold its slots.
func (s *shared) alive(ctx context.Context, uid types.UID, c claim) bool {
	if s.pods != nil {
		if p, err := s.pods.Pods(c.namespace).Get(c.name); err == nil && running(p, uid) {
			return true
		}
	}
	p, err := s.client.CoreV1().Pods(c.namespace).Get(ctx, c.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false
	case err != nil:
		return true // uncertain: keep it
	}
	return running(p, uid)
}

// release removes uid's claim from the shared pool, if it has one.
func (s *shared) release(ctx context.Context, uid types.UID) error {
	cms := s.client.CoreV1().ConfigMaps(s.pool.Namespace)
	for attempt := 1; attempt <= maxClaimAttempts; attempt++ {
		cm, err := cms.Get(ctx, s.pool.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, ok := cm.Data[string(uid)]; !ok {
			return nil
		}
		delete(cm.Data, string(uid))
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("still conflicting after %d attempts", maxClaimAttempts)
}

// unreserve gives back the claim this process made for a pod whose binding
// failed after PreBind, before the pod is retried.
func (s *shared) unreserve(ctx context.Context, pod *v1.Pod) {
	if s == nil || s.pool == nil {
		return
	}
	if _, ok := s.claimed.LoadAndDelete(pod.UID); !ok {
		return
	}
	if err := s.release(ctx, pod.UID); err != nil {
		klog.FromContext(ctx).Error(err, "NetworkSlots: releasing claim on Unreserve", "pod", klog.KObj(pod))
	}
}

// podGone releases a deleted pod's claim in the background (any scheduler
// sharing the pool may do it; informer handlers must not block).
func (s *shared) podGone(logger klog.Logger, pod *v1.Pod) {
	if s == nil || s.pool == nil {
		return
	}
	s.claimed.Delete(pod.UID)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.release(ctx, pod.UID); err != nil {
			logger.Error(err, "NetworkSlots: releasing claim of deleted pod", "pod", klog.KObj(pod))
		}
	}()
}
