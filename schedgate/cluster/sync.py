"""The black-box cache barrier: wait until every scheduler has seen every change made so far.

A node watch delivers events in order, and so does a pod watch. The last
write goes to one of the run's own nodes, the marker (a label,
``schedgate.io/barrier``, with a fresh token); a probe pod per scheduler,
created after it, requires that token. Once each scheduler has judged its
probe against the token, it has processed all earlier node and pod events.

The barrier must not change what it measures, and it has no node of its own:
a DaemonSet whose pods tolerate every taint (every node agent, CNI and log
shipper) gets a pod for every Node, cordoned, full or not, so a harness node
was a pod more than the cluster defines, Pending for ever; it also counted in
every "0/N nodes are available" and as a topology domain. A kube-scheduler's
probe asks for ``schedgate.io/sync``, which no node has, and once its
scheduler has seen the token the marker is the only node that passes its
node affinity, where it fails as "Insufficient schedgate.io/sync". That
reason in the probe's ``PodScheduled`` condition is the signal. A probe that
is never bound is never an assigned pod whose deletion frees room, so it
requeues no other pod, and it preempts nothing (no victim frees a resource
the node does not have). A profile without NodeAffinity cannot steer the
probe by the token: the signal then says only that the scheduler has seen
every pod event. With none of the run's nodes left there is no marker: the
probe's refusal (every node but others' fails its affinity; "no nodes
available" where there are none) is the signal.

No probe is ever bound to a node of the run: an admission policy
(:mod:`schedgate.cluster.guard`) refuses it, and that refusal is the signal
where the cluster has devices. ResourceSlices and DeviceClasses come on
watches of their own, so the barrier republishes the sync slice (one device
per scheduler, named anew each time, available on every node) and the sync
DeviceClass, whose selector holds the token, after every other device change;
each probe asks, by a ResourceClaim, for its device of that class, and asks
for nothing a node lacks, so DynamicResources (which judges a node after
NodeResourcesFit) allocates it on the marker only once its scheduler has seen
the newest slice and class, and so every earlier one; its bind is then
refused. The marker must have room for one pod more there. The refused bind
requeues other pods, as a deleted assigned pod does.

PodGroups come on a watch of their own too: after a PodGroup change (a step made, patched or deleted one:
a raised ``minCount`` a scheduler has not heard of lets a gang bind short), the probes are members of a
PodGroup made after it (policy ``basic``, no gang). A scheduler queues a member of a group it has not seen
apart, unjudged, so a probe judged means its group, and every PodGroup event before it, was heard.

A black box binds its probe (binding is the only sign of life it gives):
only where one runs does the barrier make a node of its own, the sync node
(cordoned, room for the probes only, in a tenant pool of its own), and the
policy lets schedgate's probes be bound there and nothing else.
"""

from __future__ import annotations

import re
import time
import uuid
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from kubernetes.client.exceptions import ApiException

from schedgate.cluster.devices import Devices
from schedgate.cluster.guard import POLICY, guard_sync_node
from schedgate.cluster.node_kinds import CORDON_TAINT
from schedgate.cluster.nodes import MERGE, ready_condition
from schedgate.cluster.sync_objects import (
    create_probe_claim,
    create_probe_group,
    delete_probe_claim,
    delete_probe_group,
    publish_sync_devices,
)
from schedgate.errors import ComponentError, NotHere
from schedgate.kube.api import ignore_not_found, read_json
from schedgate.kube.watch import MATCH, Check, FnMatcher, WaitTimeout, WrongOutcome, fail, pending, wait_for
from schedgate.objects.builders import make_pod
from schedgate.objects.matchers import pod_condition
from schedgate.objects.pods import Namespace, Pod
from schedgate.objects.schedlog import read_logs
from schedgate.runtime.scheduler import Scheduler
from schedgate.spec.cluster import HOSTNAME

SYNC_NODE = "schedgate-sync"
SYNC_KEY = "schedgate.io/sync"  # the sync node's own label (a DaemonSet of schedgate's keeps off it)
MARK_KEY = "schedgate.io/barrier"  # the token, on the marker
# The sync node is a tenant pool of its own and the probes its tenant, so a scheduler that keeps tenants
# to their pools (TenantFilter, tenant-id / schedgate.io/tenant-pool) admits them there too.
SYNC_TENANT = {"pod": ("tenant-id", "schedgate-sync"), "node": ("schedgate.io/tenant-pool", "schedgate-sync")}
SYNC_RESOURCE = "schedgate.io/sync"  # no node has it: a kube-scheduler's probe fits none, whatever the profile
ENDED = ("Succeeded", "Failed")
IN_SYNC = "Insufficient " + SYNC_RESOURCE  # NodeResourcesFit's reason on the marker, past the token's affinity
PROBE_NAME = re.compile(r"^sync-(\d+)-")  # sync-<barrier>-<scheduler>
ATTEMPTS, PREEMPTIONS = "scheduler_schedule_attempts_total", "scheduler_preemption_attempts_total"
PREEMPTION_MESSAGE = "preemption: "  # DefaultPreemption's PostFilter message, in the FitError it ran for


def is_sync_node(name: str) -> bool:
    """The sync node of a cluster schedgate made (``schedgate-sync``) or of a run in one it did not
    (``schedgate-sync-run``, beside the other's)."""
    return name == SYNC_NODE or name.startswith(SYNC_NODE + "-")


_ERR = re.compile(r'(?:"Failed to watch"|"Unhandled Error").*?\berr="((?:[^"\\]|\\.)*)"')
_NEVER = ("is forbidden", "could not find the requested resource")


def cannot_sync(log: list[str]) -> str | None:
    """Why a scheduler's informers can never sync, from its log's last lines: a list refused by RBAC (its
    identity lacks a role a plugin's informer needs) or of a resource the API server does not serve (a CRD
    not installed); None where the log says neither (a slow scheduler, or one that failed otherwise)."""
    for line in reversed(log):
        if (m := _ERR.search(line)) and any(n in m.group(1) for n in _NEVER):
            return m.group(1).replace('\\"', '"')[:400]
    return None


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
    def __init__(self, core: Any, node: str = SYNC_NODE, devices: Devices | None = None,
                 own: Callable[[], Iterable[str]] = tuple, before: Callable[[str, str], None] | None = None) -> None:
        self.core = core
        self.node = node  # the sync node's name, made only where a black box runs
        self.count = 0
        self.devices = devices
        self.own = own  # the run's nodes by name, whether or not they exist now: the marker is one of them
        self.before = before  # called before the token is written on a node (raises NotHere where it may not be)
        self.marker: str | None = None
        self.made = False  # whether the sync node exists (this barrier made it)
        # A cluster schedgate did not make gets no cluster-wide policy: a probe that fits there is bound.
        self._policy = node == SYNC_NODE
        self._guarded = not self._policy

    def wait(self, schedulers: Iterable[Scheduler], ns: Namespace, timeout: float = 15.0,
             groups: bool = False) -> float:
        """Seconds until each scheduler judged its probe against the newest token; one that does not within
        ``timeout`` is warned of (a black box fails). ``groups``: PodGroups changed since the last barrier, so
        the probes are members of a PodGroup made after them."""
        started = time.monotonic()
        token = uuid.uuid4().hex[:12]
        schedulers = list(schedulers)
        dra = self.devices is not None and self.devices.in_use
        black = any(getattr(p, "black_box_scheduler", False) for p in schedulers)
        if not self._guarded:
            guard_sync_node(self.core.api_client, self.node, ns.name)
            self._guarded = True
        if black:
            self._ensure_node(token)
            marker: str | None = self.node
        else:
            if self.made or self.count == 0:  # the black box that needed it is gone (or an older run's left it)
                ignore_not_found(self.core.delete_node, self.node)
                self.made = False
            marker = self._mark(token, room=dra)
        self.count += 1
        if dra:
            publish_sync_devices(self.core, self.count, token, len(schedulers))
        group = create_probe_group(self.core, ns.name, f"sync-{self.count}") if groups else None
        probes: list[tuple[str, Pod]] = []
        claims: list[str] = []
        for i, proc in enumerate(schedulers):
            profile = proc.profiles[0]
            name = f"sync-{self.count}-{proc.name}"[:63].rstrip("-")
            b = (make_pod(name).scheduler(profile).tolerate_everything()
                 .label(*SYNC_TENANT["pod"]).request("cpu", "0").request("memory", "0"))
            if marker is not None:
                b = b.require_label(MARK_KEY, token)
            if marker is None or not (black or dra):
                b = b.request(SYNC_RESOURCE, "1")
            if group is not None:
                b = b.manifest({"spec": {"schedulingGroup": {"podGroupName": group}}})
            if dra:
                claims.append(create_probe_claim(self.core, ns.name, name, i))
                b = b.manifest({"spec": {"resourceClaims": [{"name": "sync", "resourceClaimName": name}]}})
            probes.append((profile, b.create(ns)))
        signal = self._judged("bound" if black or (dra and marker and not self._policy) else
                              "refused" if dra and marker else "any" if marker is None else "insufficient", marker)
        try:
            for (profile, probe), proc in zip(probes, schedulers, strict=True):
                try:
                    wait_for(probe, signal, timeout=timeout)
                except (WaitTimeout, WrongOutcome) as e:
                    first = str(e).splitlines()[0]
                    if (why := cannot_sync(proc.log_tail(200))) is not None:  # it never will: no use going on
                        raise ComponentError(f"scheduler {profile} cannot sync its informers: {why} (log: "
                                             f"{proc.log_path})") from None
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
                delete_probe_claim(self.core, ns.name, claim)
            if group is not None:
                delete_probe_group(self.core, ns.name, group)
        return time.monotonic() - started

    def _mark(self, token: str, room: bool) -> str | None:
        """Write ``token`` on one of the run's nodes (the last marker while it lasts; with ``room``, one that
        has room for a pod more) and return its name; None where none of them exists (or has room)."""
        tried = [self.marker] if self.marker else []
        for name in [*tried, *sorted(set(self.own()) - set(tried))]:
            if room and not self._has_room(name):
                continue
            try:
                if self.before is not None:
                    self.before(name, f"set label {MARK_KEY}")
                self.core.patch_node(name, {"metadata": {"labels": {MARK_KEY: token}}}, _content_type=MERGE)
            except NotHere:
                continue
            except ApiException as e:
                if e.status != 404:
                    raise
                continue
            self.marker = name
            return name
        self.marker = None
        return None

    def _has_room(self, name: str) -> bool:
        node = ignore_not_found(read_json, self.core.read_node, name)
        if node is None:
            return False
        pods = read_json(self.core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={name}")
        held = [p for p in pods.get("items") or [] if (p.get("status") or {}).get("phase") not in ENDED]
        return len(held) < int(((node.get("status") or {}).get("allocatable") or {}).get("pods") or 0)

    def _judged(self, signal: str, marker: str | None) -> FnMatcher:
        """The probe's signal: ``bound`` to the marker (a black box's, on the sync node; or devices' where no
        policy refuses it), its bind ``refused`` by the policy (devices), refused on the marker as
        ``insufficient`` (past the token's affinity), or ``any`` refusal (no marker)."""

        def check(pod: dict[str, Any]) -> Check:
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                return MATCH if node == marker and signal == "bound" else fail(f"probe bound to {node!r}")
            cond = pod_condition(pod) or {}
            message = str(cond.get("message") or "")
            if cond.get("status") == "False" and (signal == "any" or POLICY in message
                                                  or (signal == "insufficient" and IN_SYNC in message)):
                return MATCH
            return pending(message or "not judged yet")

        want = {"bound": f"bound to {marker}", "refused": f"its bind refused by {POLICY}",
                "insufficient": f"refused on the marker ({IN_SYNC})", "any": "judged"}[signal]
        return FnMatcher(want, check)

    def _ensure_node(self, token: str) -> None:
        """The sync node, with room for probes to bind and the token on it."""
        labels = {SYNC_KEY: "true", MARK_KEY: token, SYNC_TENANT["node"][0]: SYNC_TENANT["node"][1]}
        have = ignore_not_found(read_json, self.core.read_node, self.node)
        if have is None:
            self.core.create_node({"apiVersion": "v1", "kind": "Node",
                                   "metadata": {"name": self.node, "labels": labels}, "spec": {"unschedulable": True}})
        if not self.made:
            space = {"cpu": "1", "memory": "1Gi", "pods": "16"}
            self.core.patch_node_status(self.node, {"status": {
                "capacity": space, "allocatable": space,
                "conditions": [ready_condition("schedgate's scheduler-sync node")]}}, _content_type=MERGE)
            self.made = True
        # Cordoned, and cleared of the taints new nodes get: only sync probes are judged here. The taint a node
        # lifecycle controller gives a cordoned node stays: taken off, it comes back, and each time the
        # schedulers hear a taint change, which requeues every pod a taint or a cordon kept out (kind).
        # No kubernetes.io/hostname: a topology spread constraint on it counts every node with the key, cordoned
        # or not, and the sync node would be a domain holding no pod.
        cordon = [t for t in ((have or {}).get("spec") or {}).get("taints") or [] if t.get("key") == CORDON_TAINT]
        spec = {"unschedulable": True, "taints": cordon or None}
        self.core.patch_node(self.node, {"metadata": {"labels": {**labels, HOSTNAME: None}}, "spec": spec},
                             _content_type=MERGE)
