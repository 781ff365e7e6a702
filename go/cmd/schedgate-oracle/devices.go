package main

// DRA devices, judged from the API's own records: every claim of a bound pod exists, is allocated, is
// reserved for the pod and is allocated for the pod's node (the allocation's node selector, by
// component-helpers' NodeSelector), from devices a ResourceSlice publishes on that node; no device is
// allocated to two claims unless its slice lets it be (allowMultipleAllocations); and the devices allocated
// in a pool consume no more of a shared counter than the pool's counter set has (partitions of one GPU).

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

type deviceID struct{ driver, pool, device string }

// counterID is one counter of a pool's counter set.
type counterID struct{ driver, pool, set, counter string }

func (c counterID) String() string { return c.driver + "/" + c.pool + " " + c.set + "." + c.counter }

func (d deviceID) String() string { return d.driver + "/" + d.pool + "/" + d.device }

// claimOf names the ResourceClaim behind one of the pod's claim entries: its resourceClaimName, else the
// one made from its template (status.resourceClaimStatuses); "" while none is.
func claimOf(p *v1.Pod, c v1.PodResourceClaim) string {
	if c.ResourceClaimName != nil {
		return *c.ResourceClaimName
	}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.Name == c.Name && s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	return ""
}

// claimName names a claim by what stays the same on a replay: the pod that owns it (a claim made from a
// template has a generated name), else its namespace and name.
func claimName(c *resourceapi.ResourceClaim) string {
	for _, o := range c.OwnerReferences {
		if o.Kind == "Pod" {
			return fmt.Sprintf("the claim of pod %s/%s", c.Namespace, o.Name)
		}
	}
	return fmt.Sprintf("the claim %s/%s", c.Namespace, c.Name)
}

func reservedFor(claim *resourceapi.ResourceClaim, p *v1.Pod) bool {
	for _, r := range claim.Status.ReservedFor {
		if r.Resource == "pods" && r.Name == p.Name && (r.UID == "" || r.UID == p.UID) {
			return true
		}
	}
	return false
}

// judgeDevices adds the devices rule's violations among the bound pods.
func judgeDevices(out *output, nodes map[string]*v1.Node, bound []*v1.Pod, claims []resourceapi.ResourceClaim,
	slices []resourceapi.ResourceSlice) {
	published := map[deviceID]string{} // the node whose slice publishes it ("" for a slice of no one node)
	shared := map[deviceID]bool{}
	consumes := map[deviceID][]resourceapi.DeviceCounterConsumption{}
	capacity := map[counterID]resource.Quantity{}
	counterNode := map[counterID]string{}
	for i := range slices {
		s := &slices[i].Spec
		node := ""
		if s.NodeName != nil {
			node = *s.NodeName
		}
		for _, d := range s.Devices {
			id := deviceID{s.Driver, s.Pool.Name, d.Name}
			published[id] = node
			shared[id] = d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
			consumes[id] = d.ConsumesCounters
		}
		for _, set := range s.SharedCounters {
			for name, c := range set.Counters {
				id := counterID{s.Driver, s.Pool.Name, set.Name, name}
				capacity[id], counterNode[id] = c.Value, node
			}
		}
	}
	byKey := map[string]*resourceapi.ResourceClaim{}
	holders := map[deviceID][]string{} // who holds each device, named as a reader can repeat it
	for i := range claims {
		c := &claims[i]
		byKey[c.Namespace+"/"+c.Name] = c
		if c.Status.Allocation == nil || c.DeletionTimestamp != nil { // one going away may be freed already
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			id := deviceID{r.Driver, r.Pool, r.Device}
			holders[id] = append(holders[id], claimName(c))
		}
	}
	ids := make([]deviceID, 0, len(holders))
	for id := range holders {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	for _, id := range ids {
		if len(holders[id]) > 1 && !shared[id] {
			out.Violations = append(out.Violations, Violation{Rule: "devices", Node: published[id],
				Detail: fmt.Sprintf("device %s is allocated to %s", id, strings.Join(holders[id], " and "))})
		}
	}
	judgeCounters(out, ids, holders, shared, consumes, capacity, counterNode)
	for _, p := range bound {
		node := nodes[p.Spec.NodeName]
		for _, entry := range p.Spec.ResourceClaims {
			for _, d := range claimViolations(p, node, entry, byKey, published) {
				out.Violations = append(out.Violations, Violation{Rule: "devices", Pod: key(p), Node: node.Name, Detail: d})
			}
		}
	}
}

func claimViolations(p *v1.Pod, node *v1.Node, entry v1.PodResourceClaim, claims map[string]*resourceapi.ResourceClaim,
	published map[deviceID]string) []string {
	made := claimOf(p, entry)
	name := fmt.Sprintf("its claim %q", entry.Name) // the generated ResourceClaim's name differs on each run
	if made == "" {
		return []string{name + " has no ResourceClaim"}
	}
	claim := claims[p.Namespace+"/"+made]
	switch {
	case claim == nil:
		return []string{fmt.Sprintf("%s: its ResourceClaim %s does not exist", name, made)}
	case claim.Status.Allocation == nil:
		return []string{name + " is not allocated"}
	}
	var out []string
	if !reservedFor(claim, p) {
		out = append(out, name+" is not reserved for it")
	}
	if sel := claim.Status.Allocation.NodeSelector; sel != nil {
		if ns, err := nodeaffinity.NewNodeSelector(sel); err != nil {
			out = append(out, fmt.Sprintf("%s: cannot evaluate the allocation's node selector: %v", name, err))
		} else if !ns.Match(node) {
			out = append(out, name+" is allocated for other nodes")
		}
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		id := deviceID{r.Driver, r.Pool, r.Device}
		if on, ok := published[id]; !ok {
			out = append(out, fmt.Sprintf("%s holds device %s, which no ResourceSlice publishes", name, id))
		} else if on != "" && on != node.Name {
			out = append(out, fmt.Sprintf("%s holds device %s of node %s", name, id, on))
		}
	}
	return out
}

// judgeCounters adds a violation for each shared counter the allocated devices (each counted once; a device
// several claims share is not judged) consume more of than its counter set has.
func judgeCounters(out *output, held []deviceID, holders map[deviceID][]string, shared map[deviceID]bool,
	consumes map[deviceID][]resourceapi.DeviceCounterConsumption, capacity map[counterID]resource.Quantity,
	counterNode map[counterID]string) {
	used := map[counterID]resource.Quantity{}
	by := map[counterID][]string{}
	for _, id := range held {
		if shared[id] {
			continue
		}
		for _, c := range consumes[id] {
			for name, q := range c.Counters {
				cid := counterID{id.driver, id.pool, c.CounterSet, name}
				sum := used[cid]
				sum.Add(q.Value)
				used[cid] = sum
				by[cid] = append(by[cid], fmt.Sprintf("%s (%s)", id.device, strings.Join(holders[id], ", ")))
			}
		}
	}
	ids := make([]counterID, 0, len(used))
	for id := range used {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	for _, id := range ids {
		have, ok := capacity[id]
		if q := used[id]; !ok || q.Cmp(have) > 0 {
			out.Violations = append(out.Violations, Violation{Rule: "devices", Node: counterNode[id],
				Detail: fmt.Sprintf("counter %s: devices allocated consume %s, the counter set has %s: %s", id,
					q.String(), have.String(), strings.Join(by[id], "; "))})
		}
	}
}
