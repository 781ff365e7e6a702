"""A running cluster as scenarios see it, whichever provider started it.

Scenario code talks to :class:`Cluster` and :class:`~schedgate.objects.pods.Namespace` only: node
pools by name, node edits, schedulers by profile, namespaces per test. What
differs between providers sits behind :class:`~schedgate.cluster.backend.Backend`.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from kubernetes import client as k8s

from schedgate.cluster import gpus
from schedgate.cluster.abilities import INTERFACES, Ability, RestartsApiServer, StartsSchedulers, cannot
from schedgate.cluster.backend import Backend
from schedgate.cluster.devices import Devices
from schedgate.cluster.leases import Lease, exited_over_restart
from schedgate.cluster.nodes import Nodes
from schedgate.cluster.sync import SYNC_NODE, SyncBarrier
from schedgate.errors import ComponentError, SchedgateError
from schedgate.objects.builders import PodBuilder
from schedgate.objects.pods import Namespace, Pod
from schedgate.objects.schedlog import log_flags
from schedgate.runtime.health import summarize_failure
from schedgate.runtime.scheduler import Scheduler, distinct
from schedgate.spec.cluster import ClusterDefinition
from schedgate.spec.quantity import scaled
from schedgate.spec.schedconfig import SchedulerConfig

SYSTEM_NAMESPACE = "schedgate-system"
C = TypeVar("C")


class ComponentDied(AssertionError):
    """A component of the system under test exited while a test was running."""


@dataclass
class Cluster:
    """A started cluster: API access, node pools, schedulers by profile."""

    definition: ClusterDefinition
    kubeconfig: Path
    api: k8s.ApiClient
    kubernetes_version: str
    backend: Backend
    timings: dict[str, float] = field(default_factory=dict)
    # Where the cache barrier's node and probes live (a run in a cluster schedgate did not make names its own).
    sync_node: str = SYNC_NODE
    system_namespace_name: str = SYSTEM_NAMESPACE

    def __repr__(self) -> str:
        return f"Cluster({self.provider}, {self.definition.name}, {len(self.node_names)} nodes)"

    def __post_init__(self) -> None:
        # Typed as Any: the API takes plain dict manifests, which the client's stubs do not model.
        self.core: Any = k8s.CoreV1Api(self.api)
        self.events_api: Any = k8s.EventsV1Api(self.api)
        self.nodes = Nodes(self.core, self.definition, self.backend.nodes, devices=Devices.of(self.api, self.backend))
        self.barrier = SyncBarrier(self.core, self.sync_node, self.nodes.devices,
                                   own=lambda: [*self.node_names, *self.nodes.added],
                                   before=self.backend.nodes.before_edit)
        self._system_ns: Namespace | None = None
        self._stale_ok = False
        self.groups_unseen = False  # a PodGroup was written since the last cache barrier

    # -- what the provider offers ----------------------------------------------
    @property
    def provider(self) -> str:
        return self.backend.name

    @property
    def schedulers(self) -> Mapping[str, Scheduler]:
        return self.backend.schedulers

    def can(self, ability: Ability) -> bool:
        """Whether this cluster has ``ability`` (:mod:`schedgate.cluster.abilities`)."""
        return ability in self.backend.abilities

    def use(self, interface: type[C]) -> C:
        """The backend as ``interface`` (an optional interface of :mod:`schedgate.cluster.abilities`), or
        one line naming what this provider cannot do. (mypy refuses a protocol as ``type[C]``,
        python/mypy#4717: hence the ignores at the calls.)"""
        if not isinstance(self.backend, interface):
            raise cannot(self.provider, INTERFACES[interface])
        return self.backend

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
        """Nodes the scheduler sees: the definition's, any a test added, any the provider adds, and the sync
        node while a black box runs (cordoned, as a provider's own are: "node(s) were unschedulable")."""
        return len(self.node_names) + len(self.nodes.added) + int(self.barrier.made) + len(self.backend.extra_nodes)

    # -- schedulers --------------------------------------------------------
    def start_scheduler(self, config: SchedulerConfig, binary: Path | None = None, *,
                        api_server: str | None = None) -> Scheduler:
        """Start another scheduler process for ``config``'s profiles, with its own identity and lease.

        With ``api_server`` (``https://host:port``, e.g. an :class:`~schedgate.faults.apiproxy.ApiProxy`), its
        kubeconfig names that address instead of the API server's own, with the same credentials and CA.
        """
        starter = self.use(StartsSchedulers)  # type: ignore[type-abstract]
        taken = sorted(set(config.profile_names) & set(self.schedulers))
        if taken:
            raise ComponentError(f"profile(s) {taken} are already served by a running scheduler")
        return starter.start_scheduler(config, binary, api_server, self.node_count())

    def stop_scheduler(self, proc: Scheduler) -> None:
        starter = self.use(StartsSchedulers)  # type: ignore[type-abstract]
        starter.stop_scheduler(proc)

    def scheduler(self, profile: str) -> Scheduler:
        try:
            return self.schedulers[profile]
        except KeyError:
            raise SchedgateError(f"no running scheduler serves profile {profile!r} "
                                 f"(running: {sorted(self.schedulers)})") from None

    def restart_apiserver(self, settle: float = 20.0) -> tuple[float, list[str]]:
        """Stop the API server and start it again (same address, same data).

        A kube-scheduler that elects a leader and cannot renew its lease within ``renewDeadline`` exits
        ("Leaderelection lost") for its supervisor to restart it. After the API server is back, each
        scheduler is watched until it has renewed its lease or exited; one that exited is restarted,
        as its supervisor would. Returns the seconds the API server was gone and the schedulers restarted.
        """
        restarter = self.use(RestartsApiServer)  # type: ignore[type-abstract]
        down = restarter.restart_apiserver()
        back = datetime.now(UTC)
        restarted = []
        for s in distinct(self.schedulers):
            if exited_over_restart(self.api, s, back, settle):
                s.start()
                restarted.append(s.name)
        return down, restarted

    # -- health ------------------------------------------------------------
    def died(self, control_plane_only: bool = False) -> list[str]:
        """Every component that exited without the harness asking it to (one line each)."""
        schedulers = {id(getattr(s, "proc", None) or s) for s in distinct(self.schedulers)}
        out = []
        for p in self.backend.components():
            if control_plane_only and id(p) in schedulers:
                continue
            if p.died():
                how = f"exited with code {p.returncode}" if not p.alive() else "was restarted by its supervisor"
                out.append(f"{p.name} {how}: {summarize_failure(p.log_tail(400))} (log: {p.log})")
        return out

    def control_plane_down(self) -> bool:
        """A part of the control plane (not a scheduler, which ``revive`` restarts) died: the cluster is lost."""
        return bool(self.died(control_plane_only=True))

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
        self.groups_unseen = False  # the last test's groups went with its namespace
        if self.nodes.reset() or revived or self.nodes.unseen:  # unseen: nodes replaced by another definition's
            self.sync_schedulers()
        return revived

    # -- leader election ---------------------------------------------------
    def lease_holder(self, lease: str) -> str | None:
        """The identity holding a scheduler's leader-election lease (``None`` if free or absent)."""
        return Lease(self.api, lease).holder()

    def wait_lease_taken(self, lease: str, *, not_by: str | None, timeout: float = 60.0) -> str:
        """Wait until someone other than ``not_by`` holds ``lease`` (watched); returns the new holder."""
        return Lease(self.api, lease, self.check_health).wait_taken(not_by, timeout)

    # -- pods --------------------------------------------------------------
    def pod_manifest(self, builder: PodBuilder) -> dict[str, Any]:
        """The builder's pod as this cluster runs it: its image, requests scaled to real nodes."""
        body = builder.obj(image=self.backend.pod_image)
        for c in body["spec"]["containers"]:
            for section in ("requests", "limits"):
                res = c["resources"].get(section) or {}
                for r, f in self.backend.resource_scale.items():
                    if r in res:
                        res[r] = scaled(res[r], f, r)
        return body

    def gpus_in_use(self, node: str) -> int:
        return gpus.gpus_in_use(self.core, node)

    def gpus_allocatable(self, node: str) -> int:
        return gpus.gpus_allocatable(self.core, node)

    def whole_free_nodes(self, nodes: Iterable[str], size: int = 8) -> list[str]:
        """Nodes with ``size`` GPUs (allocatable, or devices published) and none in use."""
        return [n for n in nodes if gpus.whole_free(self.core, self.nodes.devices, n, size)]

    def allocated_devices(self, pod: Pod) -> list[str]:
        """The pod's claims' devices in claim order: its node's by name, any other pool's as ``pool/name``."""
        raw, devices = pod.read_raw() or {}, self.nodes.devices
        node = (raw.get("spec") or {}).get("nodeName")
        return [d if p == node else f"{p}/{d}" for _, p, d in devices.allocated(pod.ns.name, raw)] if devices else []

    # -- nodes (edits are ``cluster.nodes``'s, undone before the next test) ----------
    def redefine(self, definition: ClusterDefinition) -> None:
        """Run on another definition's nodes from now on (a control plane reused for a small cluster)."""
        self.nodes.redefine(definition)
        self.definition = definition
        self._relog()

    def _relog(self) -> None:
        """Restart each scheduler whose log flags were chosen for a cluster on the other side of
        :data:`~schedgate.objects.schedlog.SCORED_UP_TO` nodes: one started for a small cluster logged every
        node's score per plugin on the 320-node fleet (872,094 lines, 180 MB half-way: a third of the file's time
        on kind went to reading them), and one started for the fleet would log no scores for the next file."""
        count = self.node_count()
        for s in distinct(self.schedulers):
            was = getattr(s, "nodes", None)
            if not isinstance(was, int) or getattr(s, "fixed_flags", False) or log_flags(was) == log_flags(count):
                continue
            s.nodes = count  # type: ignore[attr-defined]
            if not s.is_down():
                s.stop()
                s.start()

    # -- scheduler cache barrier --------------------------------------------
    def sync_schedulers(self, timeout: float = 15.0) -> float:
        """Wait until every running scheduler has seen every node and pod change made so far (see
        :mod:`schedgate.cluster.sync`); returns the seconds it took."""
        groups, self.nodes.unseen, self.groups_unseen = self.groups_unseen, False, False
        running = [s for s in distinct(self.schedulers) if not s.is_down()]
        return self.barrier.wait(running, self.system_namespace(), timeout, groups=groups)

    def changed(self, kind: str) -> None:
        """An object of ``kind`` was written: a PodGroup, which schedulers hear on a watch of its own, is
        waited for (:meth:`settle`) before the next pod change."""
        if kind == "PodGroup":
            self.groups_unseen = True

    def settle(self) -> None:
        """If a node edit (or a PodGroup change) was made since the last sync, wait until every scheduler
        has seen it.

        Called before each pod is created, deleted or annotated: a scheduler hears nodes, PodGroups and pods
        on separate watches, in no guaranteed order, so without it a scheduler may judge the pod on the
        node (or in the group) as it was before the edit. Inside :meth:`stale_ok` it does nothing."""
        if (self.nodes.unseen or self.groups_unseen) and not self._stale_ok:
            self.sync_schedulers()

    @contextlib.contextmanager
    def stale_ok(self) -> Iterator[None]:
        """Pod changes in this block do not wait for node edits to be seen: for a test that means to
        race the schedulers' caches."""
        was, self._stale_ok = self._stale_ok, True
        try:
            yield
        finally:
            self._stale_ok = was

    # -- namespaces ----------------------------------------------------------
    def system_namespace(self) -> Namespace:
        if self._system_ns is None:
            self._system_ns = Namespace.create(self, self.system_namespace_name, exist_ok=True)
        return self._system_ns

    def new_namespace(self, hint: str) -> Namespace:
        base = "".join(c if c.isalnum() else "-" for c in hint.lower()).strip("-")[:40].strip("-") or "t"
        return Namespace.create(self, f"{base}-{uuid.uuid4().hex[:5]}")
