"""A running cluster as scenarios see it, whichever provider started it.

Scenario code talks to :class:`Cluster` and :class:`Namespace` only: node
pools by name, node operations, schedulers by profile, namespaces per test.
"""

from __future__ import annotations

import json
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from schedgate.api import read_json
from schedgate.definitions import GPU, ClusterDefinition, NodeSpec, Taint
from schedgate.errors import ComponentError
from schedgate.procs import Component
from schedgate.scheduler import distinct
from schedgate.waits import MATCH, Check, WaitTimeout, WrongOutcome, pending, scheduled_on, wait_for, wait_for_items

if TYPE_CHECKING:
    from schedgate.builders import Pod, PodBuilder
    from schedgate.events import EventLog
    from schedgate.schedconfig import SchedulerConfig
    from schedgate.scheduler import Scheduler

SYNC_NODE = "schedgate-sync"
SYNC_KEY = "schedgate.io/sync"
SYSTEM_NAMESPACE = "schedgate-system"
_MERGE = "application/merge-patch+json"
# Taints the API server adds to a new node until a node-lifecycle controller clears them.
_ADMISSION_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


class ComponentDied(AssertionError):
    """A component of the system under test exited while a test was running."""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Cluster:
    """A started cluster: API access, node pools, schedulers by profile."""

    provider: str
    definition: ClusterDefinition
    kubeconfig: Path
    api: k8s.ApiClient
    kubernetes_version: str
    schedulers: Mapping[str, Scheduler]
    components: Callable[[], Sequence[Component]]
    launcher: Callable[[SchedulerConfig, Path | None, str | None], Scheduler] | None = None
    retirer: Callable[[Scheduler], None] | None = None
    api_only_nodes: bool = True
    # Kubelet-backed nodes (kind): how to bring back a deleted Node (restart its kubelet).
    node_restarter: Callable[[str], None] | None = None
    # Stop the API server and start it again on the same address and data; returns the seconds it was gone.
    apiserver_restarter: Callable[[], float] | None = None
    # Where schedgate reaches the API server (host, port), for a proxy in front of it (schedgate.apiproxy).
    api_endpoint: tuple[str, int] | None = None
    # Kubelet-backed nodes of another size than defined: pod cpu/memory requests are multiplied by these.
    resource_scale: dict[str, float] = field(default_factory=dict)
    # The address schedgate's own servers (the extender) listen on, as the schedulers reach it.
    extender_host: str = "127.0.0.1"
    # Nodes the provider adds beside the definition's (kind's control plane), cordoned like the sync node.
    extra_nodes: tuple[str, ...] = ()
    # Providers with real nodes: write their logs (kind export logs) into a folder.
    export_logs: Callable[[Path], object] | None = None
    pod_image: str = "schedgate.invalid/placeholder:0"
    timings: dict[str, float] = field(default_factory=dict)
    _touched: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    _sync_count: int = 0

    def __repr__(self) -> str:
        return f"Cluster({self.provider}, {self.definition.name}, {len(self.node_names)} nodes)"

    def __post_init__(self) -> None:
        # Typed as Any: the API takes plain dict manifests, which the client's stubs do not model.
        self.core: Any = k8s.CoreV1Api(self.api)
        self.events_api: Any = k8s.EventsV1Api(self.api)

    # -- topology ----------------------------------------------------------
    def pool(self, name: str) -> list[str]:
        """Node names of a pool in the definition (e.g. ``cluster.pool("gpu-net")``)."""
        return self.definition.pool(name).node_names()

    def nodes_except(self, *pools: str) -> list[str]:
        return [n.name for n in self.definition.nodes() if n.pool not in pools]

    @property
    def node_names(self) -> list[str]:
        return [n.name for n in self.definition.nodes()]

    def node_count(self) -> int:
        """Nodes the scheduler sees: the definition's, the sync node and any the provider adds.

        The sync node and a provider's own nodes are cordoned: in "0/N nodes are
        available" they count as "node(s) were unschedulable", never as taints or affinity.
        """
        return len(self.node_names) + 1 + len(self.extra_nodes)

    def start_scheduler(self, config: SchedulerConfig, binary: Path | None = None, *,
                        api_server: str | None = None) -> Scheduler:
        """Start another scheduler process for ``config``'s profiles, with its own identity and lease.

        With ``api_server`` (``https://host:port``, e.g. an :class:`~schedgate.apiproxy.ApiProxy`), its
        kubeconfig names that address instead of the API server's own, with the same credentials and CA.
        """
        if self.launcher is None:
            raise ComponentError(f"the {self.provider} provider cannot start more schedulers")
        taken = sorted(set(config.profile_names) & set(self.schedulers))
        if taken:
            raise ComponentError(f"profile(s) {taken} are already served by a running scheduler")
        return self.launcher(config, binary, api_server)

    def restart_apiserver(self, settle: float = 20.0) -> tuple[float, list[str]]:
        """Stop the API server and start it again (same address, same data).

        A kube-scheduler that cannot renew its lease within ``renewDeadline`` (10 s by default) exits
        ("Leaderelection lost") for its supervisor to restart it. After the API server is back, each
        scheduler is watched until it has renewed its lease or exited; one that exited is restarted,
        as its supervisor would. Returns the seconds the API server was gone and the schedulers restarted.
        """
        if self.apiserver_restarter is None:
            raise ComponentError(f"the {self.provider} provider cannot restart its API server")
        down = self.apiserver_restarter()
        back = datetime.now(UTC)
        restarted = []
        for s in distinct(self.schedulers):
            # died(): also one whose own supervisor restarted it already (kind: a container restart).
            if self._renewed_or_exited(s, back, settle) and not s.died():
                continue
            s.start()
            restarted.append(s.name)
        return down, restarted

    def _renewed_or_exited(self, s: Scheduler, since: datetime, timeout: float) -> bool:
        """True once ``s`` renewed its lease after ``since``; False once it has exited."""

        def settled(items: list[dict[str, Any]]) -> Check:
            if s.is_down():
                return MATCH
            for i in items:
                renew = (i.get("spec") or {}).get("renewTime") or ""
                if renew and datetime.fromisoformat(renew.replace("Z", "+00:00")) >= since:
                    return MATCH
            return pending(f"scheduler {s.name} has not renewed its lease since {since:%H:%M:%S}")

        wait_for_items(_Lease(self, s.name, health=False), settled,
                       f"lease {s.name} renewed or its scheduler exited", timeout)
        return not s.is_down()

    def stop_scheduler(self, proc: Scheduler) -> None:
        if self.retirer is not None:
            self.retirer(proc)

    def scheduler(self, profile: str) -> Scheduler:
        try:
            return self.schedulers[profile]
        except KeyError:
            raise KeyError(f"no running scheduler serves profile {profile!r} "
                           f"(running: {sorted(self.schedulers)})") from None

    # -- health ------------------------------------------------------------
    def died(self) -> list[str]:
        out = []
        for p in self.components():
            if not p.alive() and not p.expected_exit:
                out.append(f"{p.name} exited with code {p.returncode}; log tail: "
                           f"{' | '.join(p.log_tail(3))} (log: {p.log})")
        return out

    def check_health(self) -> None:
        dead = self.died()
        if dead:
            raise ComponentDied("component died during the test: " + "; ".join(dead))

    def revive(self) -> list[str]:
        """Restart schedulers that died (a test may kill one on purpose); returns their names."""
        revived = []
        for s in distinct(self.schedulers):
            if s.is_down():
                s.start()
                revived.append(s.name)
        return revived

    def catch_up(self) -> list[str]:
        """Before a test: dead schedulers restarted, nodes as defined, every scheduler in sync.

        Returns the schedulers that had to be restarted."""
        revived = self.revive()
        if self.apply_nodes() or revived:
            self.sync_schedulers()
        return revived

    # -- leader election ---------------------------------------------------
    def lease_holder(self, lease: str) -> str | None:
        """The identity holding a scheduler's leader-election lease (``None`` if free or absent)."""
        from schedgate.schedconfig import LEASE_NAMESPACE

        try:
            doc = read_json(k8s.CoordinationV1Api(self.api).read_namespaced_lease, lease, LEASE_NAMESPACE)
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        holder: str | None = (doc.get("spec") or {}).get("holderIdentity") or None
        return holder

    def wait_lease_taken(self, lease: str, *, not_by: str | None, timeout: float = 60.0) -> str:
        """Wait until someone other than ``not_by`` holds ``lease`` (watched); returns the new holder."""
        found: list[str] = []

        def taken(items: list[dict[str, Any]]) -> Check:
            for i in items:
                holder = (i.get("spec") or {}).get("holderIdentity")
                if holder and holder != not_by:
                    found.append(holder)
                    return MATCH
            return pending(f"held by {not_by!r}")

        wait_for_items(_Lease(self, lease), taken, f"lease {lease} held by a new identity", timeout)
        return found[0]

    # -- pods --------------------------------------------------------------
    def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return read_json(self.core.read_namespaced_pod, name, namespace)
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def delete_pod(self, namespace: str, name: str) -> None:
        try:
            self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        except ApiException as e:
            if e.status != 404:
                raise

    def gpus_in_use(self, node: str) -> int:
        pods = self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
        used = 0
        for p in pods:
            if p.status and p.status.phase in ("Succeeded", "Failed"):
                continue
            for c in p.spec.containers:
                req = (c.resources.requests or {}) if c.resources else {}
                used += int(req.get(GPU, "0"))
        return used

    def gpus_allocatable(self, node: str) -> int:
        n = self.core.read_node(node)
        return int((n.status.allocatable or {}).get(GPU, "0"))

    def whole_free_nodes(self, nodes: Iterable[str], size: int = 8) -> list[str]:
        """Nodes with ``size`` allocatable GPUs and none in use."""
        return [n for n in nodes if self.gpus_allocatable(n) == size and self.gpus_in_use(n) == 0]

    # -- nodes -------------------------------------------------------------
    def _node(self, name: str) -> dict[str, Any] | None:
        try:
            return read_json(self.core.read_node, name)
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def _touch(self, node: str, what: str, key: str) -> None:
        self._touched.setdefault(node, set()).add((what, key))

    def label(self, node: str, key: str, value: str) -> None:
        self._touch(node, "label", key)
        self.core.patch_node(node, {"metadata": {"labels": {key: value}}}, _content_type=_MERGE)

    def unlabel(self, node: str, key: str) -> None:
        self._touch(node, "label", key)
        self.core.patch_node(node, {"metadata": {"labels": {key: None}}}, _content_type=_MERGE)

    def annotate(self, node: str, key: str, value: str | None) -> None:
        """Set (or with ``None`` remove) a node annotation, e.g. a capacity a plugin reads."""
        self._touch(node, "annotation", key)
        self.core.patch_node(node, {"metadata": {"annotations": {key: value}}}, _content_type=_MERGE)

    def taint(self, node: str, key: str, value: str = "", effect: str = "NoSchedule") -> None:
        self._touch(node, "taint", key)
        cur = self._node(node) or {}
        taints = [t for t in (cur.get("spec") or {}).get("taints") or [] if t.get("key") != key]
        taints.append(Taint(key, effect, value).to_api())
        self.core.patch_node(node, {"spec": {"taints": taints}}, _content_type=_MERGE)

    def untaint(self, node: str, key: str) -> None:
        self._touch(node, "taint", key)
        cur = self._node(node) or {}
        taints = [t for t in (cur.get("spec") or {}).get("taints") or [] if t.get("key") != key]
        self.core.patch_node(node, {"spec": {"taints": taints or None}}, _content_type=_MERGE)

    def set_gpus(self, node: str, count: int) -> None:
        """Change the node's GPU capacity and allocatable (e.g. a device going offline)."""
        if count < 0:
            raise ValueError(f"GPU count must be >= 0, got {count}")
        self._touch(node, "resource", GPU)
        if self.api_only_nodes:
            body = {"status": {"capacity": {GPU: str(count)}, "allocatable": {GPU: str(count)}}}
            self.core.patch_node_status(node, body, _content_type=_MERGE)
            return
        # A kubelet computes allocatable from capacity, from its own (possibly older) copy of the node:
        # patch capacity only and wait for the kubelet's allocatable, proof that it works from the new value.
        self.core.patch_node_status(node, {"status": {"capacity": {GPU: str(count)}}}, _content_type=_MERGE)
        self._wait_allocatable(node, {GPU: str(count)})

    def cordon(self, node: str) -> None:
        """Mark the node unschedulable (``kubectl cordon``); undone before the next test."""
        self._touch(node, "node", "cordoned")
        self.core.patch_node(node, {"spec": {"unschedulable": True}}, _content_type=_MERGE)

    def delete_node(self, node: str) -> None:
        self._touch(node, "node", "deleted")
        try:
            self.core.delete_node(node)
        except ApiException as e:
            if e.status != 404:
                raise

    def apply_nodes(self) -> bool:
        """Bring every node back to its definition; returns whether anything changed."""
        changed = False
        for spec in self.definition.nodes():
            changed |= self._reconcile(spec, self._touched.pop(spec.name, set()))
        return changed

    def _reconcile(self, spec: NodeSpec, touched: set[tuple[str, str]]) -> bool:
        cur = self._node(spec.name)
        changed = False
        if cur is None and not self.api_only_nodes:
            if self.node_restarter is None:
                raise ComponentError(f"node {spec.name} is gone and {self.provider} nodes cannot be recreated")
            self.node_restarter(spec.name)
            self._wait_node(spec.name)
            cur = self._node(spec.name)
        if cur is None:
            body = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": spec.name, "labels": dict(spec.labels)},
                    "spec": {"taints": [t.to_api() for t in spec.taints] or None}}
            cur = json.loads(self.core.create_node(body, _preload_content=False).data)
            changed = True
        labels = (cur.get("metadata") or {}).get("labels") or {}
        label_patch: dict[str, str | None] = {k: v for k, v in spec.labels.items() if labels.get(k) != v}
        label_patch.update({k: None for what, k in touched if what == "label" and k not in spec.labels})
        annotations = (cur.get("metadata") or {}).get("annotations") or {}
        stale = {k: None for what, k in touched if what == "annotation" and k in annotations}
        managed_taints = {t.key for t in spec.taints} | {k for what, k in touched if what == "taint"}
        if self.api_only_nodes:
            managed_taints |= set(_ADMISSION_TAINTS)
        cur_taints = (cur.get("spec") or {}).get("taints") or []
        want_taints = [t for t in cur_taints if t.get("key") not in managed_taints] + \
            [t.to_api() for t in spec.taints]
        meta_patch: dict[str, Any] = {}
        if label_patch:
            meta_patch["metadata"] = {"labels": label_patch}
        if stale:
            meta_patch.setdefault("metadata", {})["annotations"] = stale
        if _taint_set(cur_taints) != _taint_set(want_taints):
            meta_patch["spec"] = {"taints": want_taints or None}
        if (cur.get("spec") or {}).get("unschedulable"):
            meta_patch.setdefault("spec", {})["unschedulable"] = None
        if meta_patch:
            self.core.patch_node(spec.name, meta_patch, _content_type=_MERGE)
            changed = True
        status = cur.get("status") or {}
        managed_res = set(spec.capacity) | {k for what, k in touched if what == "resource"}
        sections: tuple[tuple[str, Mapping[str, str]], ...] = (("capacity", spec.capacity),
                                                               ("allocatable", spec.allocatable))
        if not self.api_only_nodes:
            # A kubelet reports cpu, memory and pods itself and copies capacity into allocatable:
            # only extended resources (GPUs) are advertised, as a device plugin would.
            managed_res = {r for r in managed_res if "/" in r}
            sections = (("capacity", spec.capacity),)
        status_patch: dict[str, Any] = {}
        for section, want in sections:
            have = status.get(section) or {}
            diff = {r: want.get(r) for r in managed_res if have.get(r) != want.get(r)}
            if diff:
                status_patch[section] = diff
        if self.api_only_nodes and not _ready(status):
            now = _now()
            status_patch["conditions"] = [{"type": "Ready", "status": "True", "reason": "SchedgateNode",
                                           "message": "API-only node kept Ready by schedgate",
                                           "lastHeartbeatTime": now, "lastTransitionTime": now}]
        if status_patch:
            self.core.patch_node_status(spec.name, {"status": status_patch}, _content_type=_MERGE)
            changed = True
        if not self.api_only_nodes and managed_res:
            self._wait_allocatable(spec.name, {r: spec.allocatable.get(r, "0") for r in managed_res})
        return changed

    def _wait_node(self, name: str, timeout: float = 120.0) -> None:
        def present(items: list[dict[str, Any]]) -> Check:
            return MATCH if any(i["metadata"]["name"] == name for i in items) else pending(f"node {name} absent")

        wait_for_items(_Nodes(self), present, f"node {name} registered again", timeout)

    def _wait_allocatable(self, name: str, want: dict[str, str], timeout: float = 60.0) -> None:
        """Wait until the kubelet has copied the patched capacity into allocatable."""
        def shown(items: list[dict[str, Any]]) -> Check:
            for i in items:
                if i["metadata"]["name"] == name:
                    have = (i.get("status") or {}).get("allocatable") or {}
                    diff = {r: have.get(r) for r, v in want.items() if have.get(r, "0") != v}
                    return MATCH if not diff else pending(f"allocatable {diff}, want {want}")
            return pending(f"node {name} absent")

        wait_for_items(_Nodes(self), shown, f"node {name} allocatable showing {want}", timeout)

    # -- scheduler cache barrier --------------------------------------------
    def sync_schedulers(self, timeout: float = 15.0) -> float:
        """Wait until every scheduler has seen every node and pod change made so far.

        A node watch delivers events in order, and so does a pod watch. The
        last write goes to the sync node (a label with a fresh token); a
        probe pod per scheduler, created after it, can bind only where that
        token is. Once each probe is bound, each scheduler has processed all
        earlier node and pod events. The sync node is cordoned so no other pod
        goes there; it shows in "0/N nodes are available" counts as one node
        that "were unschedulable", never mixed into taint or affinity counts.
        """
        started = time.monotonic()
        token = uuid.uuid4().hex[:12]
        self._ensure_sync_node(token)
        self._sync_count += 1
        probes: list[tuple[str, Pod]] = []
        from schedgate.builders import make_pod

        ns = self.system_namespace()
        procs = distinct(self.schedulers)
        for proc in procs:
            profile = proc.profiles[0]
            b = (make_pod(f"sync-{self._sync_count}-{proc.name}"[:63].rstrip("-"))
                 .scheduler(profile).require_label(SYNC_KEY, token).tolerate_everything()
                 .request("cpu", "0").request("memory", "0"))
            probes.append((profile, b.create(ns)))
        try:
            for profile, probe in probes:
                try:
                    wait_for(probe, scheduled_on([SYNC_NODE]), timeout=timeout)
                except (WaitTimeout, WrongOutcome) as e:
                    warnings.warn(f"schedgate: scheduler {profile} did not confirm it is in sync: "
                                  f"{str(e).splitlines()[0]}", stacklevel=2)
        finally:
            for _, probe in probes:
                probe.delete()
        return time.monotonic() - started

    def _ensure_sync_node(self, token: str) -> None:
        labels = {"kubernetes.io/hostname": SYNC_NODE, SYNC_KEY: token}
        if self._node(SYNC_NODE) is None:
            self.core.create_node({"apiVersion": "v1", "kind": "Node",
                                   "metadata": {"name": SYNC_NODE, "labels": labels},
                                   "spec": {"unschedulable": True}})
            now = _now()
            self.core.patch_node_status(SYNC_NODE, {"status": {
                "capacity": {"cpu": "1", "memory": "1Gi", "pods": "16"},
                "allocatable": {"cpu": "1", "memory": "1Gi", "pods": "16"},
                "conditions": [{"type": "Ready", "status": "True", "reason": "SchedgateNode",
                                "message": "schedgate's scheduler-sync node", "lastHeartbeatTime": now,
                                "lastTransitionTime": now}]}}, _content_type=_MERGE)
        # Cordoned, and cleared of the taints new nodes get: only sync probes go here.
        self.core.patch_node(SYNC_NODE, {"metadata": {"labels": labels},
                                         "spec": {"unschedulable": True, "taints": None}},
                             _content_type=_MERGE)

    # -- namespaces ----------------------------------------------------------
    _system_ns: Namespace | None = None

    def system_namespace(self) -> Namespace:
        if self._system_ns is None:
            self._system_ns = Namespace.create(self, SYSTEM_NAMESPACE, exist_ok=True)
        return self._system_ns

    def new_namespace(self, hint: str) -> Namespace:
        base = "".join(c if c.isalnum() else "-" for c in hint.lower()).strip("-")[:40].strip("-") or "t"
        return Namespace.create(self, f"{base}-{uuid.uuid4().hex[:5]}")


@dataclass
class _Nodes:
    """Every node, as a collection ``wait_for_items`` can list and watch."""

    cluster: Cluster

    def describe(self) -> str:
        return "nodes"

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return self.cluster.core.list_node, (), {}

    def check_health(self) -> None:
        return None


@dataclass
class _Lease:
    """One leader-election lease, as a collection ``wait_for_items`` can list and watch."""

    cluster: Cluster
    name: str
    health: bool = True  # fail the wait when a component dies

    def describe(self) -> str:
        return f"lease {self.name}"

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        from schedgate.schedconfig import LEASE_NAMESPACE

        return (k8s.CoordinationV1Api(self.cluster.api).list_namespaced_lease, (LEASE_NAMESPACE,),
                {"field_selector": f"metadata.name={self.name}"})

    def check_health(self) -> None:
        if self.health:
            self.cluster.check_health()


def _taint_set(taints: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(t.get("key", ""), t.get("value") or "", t.get("effect", "")) for t in taints}


def _ready(status: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


@dataclass
class Namespace:
    """A test's own namespace; its pods are force-deleted when the test ends."""

    cluster: Cluster
    name: str
    pods: list[Pod] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"Namespace({self.name})"

    @classmethod
    def create(cls, cluster: Cluster, name: str, exist_ok: bool = False) -> Namespace:
        body = {"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "schedgate"}}}
        try:
            cluster.core.create_namespace(body)
        except ApiException as e:
            if not (exist_ok and e.status == 409):
                raise
        return cls(cluster=cluster, name=name)

    def create_pod(self, builder: PodBuilder) -> Pod:
        from schedgate.builders import Pod

        body = builder.obj(image=self.cluster.pod_image)
        if self.cluster.resource_scale:
            from schedgate.quantity import scaled

            for c in body["spec"]["containers"]:
                for section in ("requests", "limits"):
                    res = c["resources"].get(section) or {}
                    for r, f in self.cluster.resource_scale.items():
                        if r in res:
                            res[r] = scaled(res[r], f, r)
        pod = Pod(ns=self, name=builder.name, builder=builder)
        self.cluster.core.create_namespaced_pod(self.name, body)
        self.pods.append(pod)
        return pod

    @property
    def events(self) -> EventLog:
        from schedgate.events import EventLog

        return EventLog(self)

    # Collection protocol, for waiting on every pod in the namespace.
    def describe(self) -> str:
        return f"pods in namespace {self.name}"

    def list_call(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return self.cluster.core.list_namespaced_pod, (self.name,), {}

    def check_health(self) -> None:
        if not self._cleaning:
            self.cluster.check_health()

    _cleaning: bool = False

    def clean(self, timeout: float = 30.0) -> None:
        """Force-delete every pod and wait until the API shows none, then delete the namespace."""
        self._cleaning = True  # cleaning needs only the API server, not the schedulers
        self.cluster.core.delete_collection_namespaced_pod(self.name, grace_period_seconds=0)

        def empty(items: list[dict[str, Any]]) -> Check:
            return MATCH if not items else pending(f"{len(items)} pods left")

        wait_for_items(self, empty, "empty", timeout)
        try:
            self.cluster.core.delete_namespace(self.name)
        except ApiException as e:
            if e.status != 404:
                raise
