package networkslots

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// holdState says how far a pod holding network slots has got.
type holdState string

const (
	// stateReserved: the scheduler chose a node (Reserve) but binding has
	// not finished yet.
	stateReserved holdState = "reserved"
	// stateBound: the pod is bound to the node (PostBind, or seen with
	// spec.nodeName by the pod informer).
	stateBound holdState = "bound"
)

// holding is one pod's claim on a node's network slots.
type holding struct {
	node  string
	slots int64
	state holdState
}

// usage is the per-node sum of holdings, split by state.
type usage struct {
	reserved int64
	bound    int64
}

func (u usage) total() int64 { return u.reserved + u.bound }

// ledger records which pods hold network slots on which nodes. There is one
// ledger per plugin instance; every method is safe for concurrent use
// (scheduling cycle, binding goroutines and informer handlers all call it).
//
// After every change the schedgate_network_slots gauge for the affected
// node(s) is set to the ledger's totals, so the metric always mirrors it.
type ledger struct {
	mu      sync.Mutex
	holders map[types.UID]holding
	perNode map[string]usage
}

func newLedger() *ledger {
	return &ledger{
		holders: map[types.UID]holding{},
		perNode: map[string]usage{},
	}
}

// reserve records (or replaces) a reserved holding for uid on node.
func (l *ledger) reserve(uid types.UID, node string, slots int64) {
	l.put(uid, holding{node: node, slots: slots, state: stateReserved})
}

// markBound records (or replaces) a bound holding for uid on node.
func (l *ledger) markBound(uid types.UID, node string, slots int64) {
	l.put(uid, holding{node: node, slots: slots, state: stateBound})
}

// markBoundIfHeld turns an existing holding of uid into a bound one. It does
// nothing if uid holds nothing, so a late PostBind cannot resurrect a holding
// that the informer already released because the pod was deleted.
func (l *ledger) markBoundIfHeld(uid types.UID, node string, slots int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.holders[uid]; !ok {
		return false
	}
	l.putLocked(uid, holding{node: node, slots: slots, state: stateBound})
	return true
}

// release drops any holding of uid. It is idempotent.
func (l *ledger) release(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removeLocked(uid)
}

// releaseReserved drops uid's holding only while it is still reserved; a
// holding the informer has already seen bound is left alone. Idempotent.
func (l *ledger) releaseReserved(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.holders[uid]; ok && h.state == stateReserved {
		l.removeLocked(uid)
	}
}

// held returns the total slots held on node (reserved + bound).
func (l *ledger) held(node string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.perNode[node].total()
}

// freeWith returns node's free slots as the scheduler's snapshot sees them:
// capacity minus the slots of the pods the snapshot places there (scheduled
// maps their UIDs to slots, the evaluated pod excluded), minus reservations
// in this ledger that the snapshot does not show (yet, or any more: a
// reservation that Unreserve failed to return keeps counting). Bound
// holdings come from the snapshot only, so a pod deletion the scheduler has
// already seen frees its slots even before this ledger hears of it.
func (l *ledger) freeWith(node string, capacity int64, self types.UID, scheduled map[types.UID]int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	used := int64(0)
	for _, n := range scheduled {
		used += n
	}
	for uid, h := range l.holders {
		if uid == self || h.node != node || h.state != stateReserved {
			continue
		}
		if _, shown := scheduled[uid]; !shown {
			used += h.slots
		}
	}
	return capacity - used
}

// get returns uid's holding, if any.
func (l *ledger) get(uid types.UID) (holding, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.holders[uid]
	return h, ok
}

// usageOf returns node's reserved/bound totals.
func (l *ledger) usageOf(node string) usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.perNode[node]
}

// put replaces uid's holding with h.
func (l *ledger) put(uid types.UID, h holding) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.putLocked(uid, h)
}

func (l *ledger) putLocked(uid types.UID, h holding) {
	l.removeLocked(uid)
	l.holders[uid] = h
	u := l.perNode[h.node]
	if h.state == stateBound {
		u.bound += h.slots
	} else {
		u.reserved += h.slots
	}
	l.perNode[h.node] = u
	l.publishLocked(h.node)
}

func (l *ledger) removeLocked(uid types.UID) {
	h, ok := l.holders[uid]
	if !ok {
		return
	}
	delete(l.holders, uid)
	u := l.perNode[h.node]
	if h.state == stateBound {
		u.bound -= h.slots
	} else {
		u.reserved -= h.slots
	}
	if u == (usage{}) {
		delete(l.perNode, h.node)
	} else {
		l.perNode[h.node] = u
	}
	l.publishLocked(h.node)
}

// publishLocked sets the gauges of node to the ledger's totals (0 once the
// node's holdings are gone). Caller holds l.mu, so gauge updates happen in
// the same order as ledger changes.
func (l *ledger) publishLocked(node string) {
	u := l.perNode[node]
	slotsGauge.WithLabelValues(node, string(stateReserved)).Set(float64(u.reserved))
	slotsGauge.WithLabelValues(node, string(stateBound)).Set(float64(u.bound))
}

var (
	// slotsGauge mirrors the ledger: slots held per node and state.
	// If several plugin instances exist (several profiles enable the
	// plugin), they all write here; with one profile the metric equals
	// that profile's ledger.
	slotsGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "schedgate_network_slots",
		Help:           "Network slots held per node by NetworkSlots, by state (reserved|bound).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"node", "state"})

	// capacityGauge is a node's network-slot capacity as last seen by Filter.
	capacityGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "schedgate_network_slot_capacity",
		Help:           "Network-slot capacity of a node (annotation " + Annotation + ") as last observed by NetworkSlots Filter.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"node"})

	registerOnce sync.Once
)

// registerMetrics registers the gauges with the legacy registry exactly once,
// however many plugin instances the scheduler builds. Until registration the
// component-base gauges are no-ops.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(slotsGauge, capacityGauge)
	})
}
