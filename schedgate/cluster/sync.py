"""The black-box cache barrier: wait until every scheduler has seen every change made so far.

A node watch delivers events in order, and so does a pod watch. The last
write goes to the sync node (a label with a fresh token); a probe pod per
scheduler, created after it, requires that token. Once each scheduler has
judged its probe against the token, it has processed all earlier node and pod
events.

The barrier must not change what it measures. The sync node is cordoned and
its allocatable ``pods`` is 0: no pod fits it, whatever it tolerates (a pod
tolerating every taint, as every DaemonSet pod does, was placed there when it
had room). It has no ``kubernetes.io/hostname`` label: PodTopologySpread counts
every node that has a constraint's key, cordoned or not, and a sync node with
one was a domain holding no pod, which made a hard spread by host refuse pods
that fit. A kube-scheduler's probe is never bound: it asks for
``schedgate.io/sync``, which no node but the sync node has, and once its
scheduler has seen the token the only node that passes its node affinity is
the sync node, where it fails as "Too many pods". That reason in the probe's
``PodScheduled`` condition is the signal. A probe that is never bound is never
an assigned pod whose deletion frees room, so it requeues no other pod: a
pod's scheduling attempts are the same with a barrier as without (a bound
probe's deletion made NodeResourcesFit retry every pod it had rejected). A
profile without NodeAffinity cannot steer the probe by the token: its probe
still lands nowhere, and the signal then says only that the scheduler has seen
every pod event.

A black box binds its probe (binding is the only sign of life it gives), and
so does every probe where the cluster has devices (DynamicResources judges a
node after NodeResourcesFit, so the signal must be the bind): there the sync
node has room for the probes while they run, and a bound probe's deletion can
requeue others.

ResourceSlices and DeviceClasses come on watches of their own. Where the
cluster has devices, the barrier also republishes the sync node's slice (one
device per scheduler, named anew each time) and the sync DeviceClass, whose
selector holds the token, after every other device change; each probe then
asks, by a ResourceClaim, for its device of that class. It binds only once its
scheduler has seen the newest slice and class, and so every earlier one.

In a cluster schedgate made, an admission policy (:mod:`schedgate.cluster.guard`) refuses to bind any
other pod to the sync node: a profile without NodeResourcesFit, to which the node's missing room means
nothing, cannot place a scenario's pod there either.
"""

from __future__ import annotations

import re
import time
import uuid
import warnings
from collections.abc import Iterable
from typing import Any

import kubernetes.client as k8s

from schedgate.cluster.devices import MANAGED, Devices
from schedgate.cluster.guard import guard_sync_node
from schedgate.cluster.nodes import MERGE, ready_condition
from schedgate.errors import ComponentError
from schedgate.kube.api import ignore_not_found, read_json
from schedgate.kube.watch import MATCH, Check, FnMatcher, WaitTimeout, WrongOutcome, fail, pending, wait_for
from schedgate.objects.builders import make_pod
from schedgate.objects.matchers import pod_condition
from schedgate.objects.pods import Namespace, Pod
from schedgate.objects.schedlog import read_logs
from schedgate.runtime.scheduler import Scheduler
from schedgate.spec.cluster import HOSTNAME

SYNC_NODE = "schedgate-sync"
CORDON_TAINT = "node.kubernetes.io/unschedulable"  # what a node lifecycle controller taints a cordoned node with
SYNC_KEY = "schedgate.io/sync"
# The sync node is a tenant pool of its own and the probes its tenant, so a scheduler that keeps tenants
# to their pools (TenantFilter, tenant-id / schedgate.io/tenant-pool) admits them there too.
SYNC_DRIVER = "sync.schedgate.io"
SYNC_CLASS = "schedgate-sync"
SYNC_TENANT = {"pod": ("tenant-id", "schedgate-sync"), "node": ("schedgate.io/tenant-pool", "schedgate-sync")}
SYNC_RESOURCE = "schedgate.io/sync"  # only the sync node has it: a probe fits no other node, whatever the profile
IN_SYNC = "Too many pods"  # NodeResourcesFit's reason on the sync node, past the token's node affinity
PROBE_NAME = re.compile(r"^sync-(\d+)-")  # sync-<barrier>-<scheduler>
ATTEMPTS, PREEMPTIONS = "scheduler_schedule_attempts_total", "scheduler_preemption_attempts_total"
PREEMPTION_MESSAGE = "preemption: "  # DefaultPreemption's PostFilter message, in the FitError it ran for


def is_sync_node(name: str) -> bool:
    """The sync node of a cluster schedgate made (``schedgate-sync``) or of a run in one it did not
    (``schedgate-sync-run``, beside the other's)."""
    return name == SYNC_NODE or name.startswith(SYNC_NODE + "-")


def barrier_counts(proc: Scheduler, namespace: str, after: int) -> list[tuple[str, dict[str, str]]]:
    """What the probes of barriers numbered above ``after`` added to ``proc``'s attempt counters, read from its
    log: one (metric, labels) per increment. Each ended attempt counts in :data:`ATTEMPTS` under its result and
    the probe's profile; each that DefaultPreemption's PostFilter ran for (its message is in the attempt's
    FitError), in :data:`PREEMPTIONS` as well."""
    out: list[tuple[str, dict[str, str]]] = []
    for pod, log in read_logs([proc.log_path], {namespace}).items():
        m = PROBE_NAME.match(pod.split("/", 1)[1])
        if m is None or int(m.group(1)) <= after:
            continue
        for a in log.attempts:
            result = "scheduled" if a.bound_to else "error" if a.error else \
                "unschedulable" if a.failure is not None else None
            if result is not None:
                out.append((ATTEMPTS, {"result": result, "profile": proc.profiles[0]}))
            if result == "unschedulable" and PREEMPTION_MESSAGE in (a.failure or ""):
                out.append((PREEMPTIONS, {}))
    return out


class SyncBarrier:
    def __init__(self, core: Any, node: str = SYNC_NODE, devices: Devices | None = None) -> None:
        self.core = core
        self.node = node
        self.count = 0
        self.devices = devices
        self._guarded = node != SYNC_NODE  # a cluster schedgate did not make gets no cluster-wide policy
        self._room: bool | None = None  # the sync node's room for probes, as last set (None: not yet)

    def wait(self, schedulers: Iterable[Scheduler], ns: Namespace, timeout: float = 15.0) -> float:
        """Seconds until each scheduler judged its probe against the newest token; one that does not within
        ``timeout`` is warned of (a black box fails)."""
        started = time.monotonic()
        token = uuid.uuid4().hex[:12]
        schedulers = list(schedulers)
        dra = self.devices is not None and self.devices.in_use
        bound = dra or any(getattr(p, "black_box_scheduler", False) for p in schedulers)
        if not self._guarded:
            guard_sync_node(self.core.api_client, self.node, ns.name)
            self._guarded = True
        self._ensure_node(token, room=bound)
        self.count += 1
        if dra:
            self._publish_sync_devices(token, len(schedulers))
        probes: list[tuple[str, Pod]] = []
        claims: list[str] = []
        for i, proc in enumerate(schedulers):
            profile = proc.profiles[0]
            name = f"sync-{self.count}-{proc.name}"[:63].rstrip("-")
            b = (make_pod(name).scheduler(profile).require_label(SYNC_KEY, token).tolerate_everything()
                 .label(*SYNC_TENANT["pod"]).request("cpu", "0").request("memory", "0"))
            if not getattr(proc, "black_box_scheduler", False):
                b = b.request(SYNC_RESOURCE, "1")
            if dra:
                claims.append(self._probe_claim(ns, name, i))
                b = b.manifest({"spec": {"resourceClaims": [{"name": "sync", "resourceClaimName": name}]}})
            probes.append((profile, b.create(ns)))
        try:
            for (profile, probe), proc in zip(probes, schedulers, strict=True):
                try:
                    wait_for(probe, self._judged(bound), timeout=timeout)
                except (WaitTimeout, WrongOutcome) as e:
                    first = str(e).splitlines()[0]
                    if getattr(proc, "black_box_scheduler", False):  # binding the probe is its only sign of life
                        last = (proc.log_tail(1) or ["<empty>"])[0].strip()[:300]
                        raise ComponentError(f"scheduler {profile} never bound its probe pod {ns.name}/{probe.name}: "
                                             f"{first}; last log line: {last} (log: {proc.log_path})") from None
                    warnings.warn(f"schedgate: scheduler {profile} did not confirm it is in sync: {first}",
                                  stacklevel=3)
        finally:
            for _, probe in probes:
                probe.delete()
            for claim in claims:
                ignore_not_found(self._res.delete_namespaced_resource_claim, claim, ns.name)
        return time.monotonic() - started

    def _judged(self, bound: bool) -> FnMatcher:
        """The probe's signal: bound to the sync node, or (never bound) refused there as too many pods."""

        def check(pod: dict[str, Any]) -> Check:
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                return MATCH if node == self.node else fail(f"probe bound to {node!r}, not the sync node")
            cond = pod_condition(pod) or {}
            if not bound and cond.get("status") == "False" and IN_SYNC in (cond.get("message") or ""):
                return MATCH
            return pending(str(cond.get("message") or "not judged yet"))

        return FnMatcher("bound to the sync node" if bound else f"refused on the sync node ({IN_SYNC})", check)

    @property
    def _res(self) -> Any:
        return k8s.ResourceV1Api(self.core.api_client)

    def _device(self, i: int) -> str:
        return f"s{self.count}-{i}"

    def _publish_sync_devices(self, token: str, count: int) -> None:
        """The sync node's slice with a device per scheduler, then the class that selects by ``token``."""
        res = self._res
        name = f"{self.node}-{SYNC_DRIVER}"
        cur = ignore_not_found(read_json, res.read_resource_slice, name)
        body: dict[str, Any] = {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name, "labels": dict(MANAGED)},
            "spec": {"driver": SYNC_DRIVER, "nodeName": self.node,
                     "pool": {"name": self.node, "resourceSliceCount": 1,
                              "generation": 1 + (cur["spec"]["pool"]["generation"] if cur else 0)},
                     "devices": [{"name": self._device(i),
                                  "attributes": {"token": {"string": token}, "slot": {"int": i}}}
                                 for i in range(count)]}}
        if cur is None:
            res.create_resource_slice(body)
        else:
            body["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
            res.replace_resource_slice(name, body)
        selector = f'device.driver == "{SYNC_DRIVER}" && device.attributes["{SYNC_DRIVER}"].token == "{token}"'
        cls: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
               "metadata": {"name": SYNC_CLASS, "labels": dict(MANAGED)},
               "spec": {"selectors": [{"cel": {"expression": selector}}]}}
        have = ignore_not_found(read_json, res.read_device_class, SYNC_CLASS)
        if have is None:
            res.create_device_class(cls)
        else:
            cls["metadata"]["resourceVersion"] = have["metadata"]["resourceVersion"]
            res.replace_device_class(SYNC_CLASS, cls)

    def _probe_claim(self, ns: Namespace, name: str, i: int) -> str:
        """A claim for scheduler ``i``'s sync device (by name: no other probe competes for it)."""
        self._res.create_namespaced_resource_claim(ns.name, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "labels": dict(MANAGED)},
            "spec": {"devices": {"requests": [{"name": "sync", "exactly": {
                "deviceClassName": SYNC_CLASS,
                "selectors": [{"cel": {"expression": f'device.attributes["{SYNC_DRIVER}"].slot == {i}'}}]}}]}}})
        return name

    def _ensure_node(self, token: str, room: bool) -> None:
        """The sync node, labelled with ``token``; with ``room`` for probes to bind, else none (pods 0)."""
        labels = {SYNC_KEY: token, SYNC_TENANT["node"][0]: SYNC_TENANT["node"][1]}
        have = ignore_not_found(read_json, self.core.read_node, self.node)
        if have is None:
            self.core.create_node({"apiVersion": "v1", "kind": "Node",
                                   "metadata": {"name": self.node, "labels": labels}, "spec": {"unschedulable": True}})
            self._room = None
        if self._room != room:  # an allocatable change requeues pods: only when the kind of barrier changes
            space = {"cpu": "1", "memory": "1Gi", "pods": "16" if room else "0", SYNC_RESOURCE: "1000"}
            self.core.patch_node_status(self.node, {"status": {
                "capacity": space, "allocatable": space,
                "conditions": [ready_condition("schedgate's scheduler-sync node")]}}, _content_type=MERGE)
            self._room = room
        # Cordoned, and cleared of the taints new nodes get: only sync probes are judged here. The taint a node
        # lifecycle controller gives a cordoned node stays: taken off, it comes back, and each time the
        # schedulers hear a taint change, which requeues every pod a taint or a cordon kept out (kind).
        # No kubernetes.io/hostname (taken off a node an older schedgate made): a topology spread constraint on it
        # counts every node with the key, cordoned or not, and the sync node would be a domain holding no pod.
        cordon = [t for t in ((have or {}).get("spec") or {}).get("taints") or [] if t.get("key") == CORDON_TAINT]
        spec = {"unschedulable": True, "taints": cordon or None}
        self.core.patch_node(self.node, {"metadata": {"labels": {**labels, HOSTNAME: None}}, "spec": spec},
                             _content_type=MERGE)
