"""Cluster providers: how a definition and a scheduler under test become a running cluster.

A :class:`Provider` checks a :class:`ClusterRequest` cheaply (``preflight``:
one-line errors before anything is built or started) and creates the cluster
as a list of named steps with one rollback (:func:`create_in_steps`): when a
step fails, what was made so far is taken down again, unless the user asked
to keep it. What the running cluster can do is its
:class:`~schedgate.cluster.backend.Backend`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from schedgate.cluster import Cluster, ComponentDied
from schedgate.cluster.abilities import Ability
from schedgate.cluster.apiserver import read_feature_gates
from schedgate.errors import ComponentError
from schedgate.runtime.binaries import resolve
from schedgate.runtime.progress import ticking
from schedgate.runtime.reap import own_file
from schedgate.runtime.toolchain import Binaries
from schedgate.spec.cluster import ClusterDefinition
from schedgate.spec.quantity import parse_quantity
from schedgate.spec.schedconfig import SchedulerConfig

log = logging.getLogger("schedgate")


@dataclass(frozen=True)
class ClusterRequest:
    provider: str
    definition: ClusterDefinition
    scheduler_config: SchedulerConfig
    scheduler_binary: Path | None = None
    bin_dir: Path | None = None
    keep: bool = False
    scheduler_image: str | None = None  # kind: an image already built (default: one made from the binary)
    reuse: bool = False  # kind: keep one cluster across runs, recreated when the definition or image drifted
    kubeconfig: Path | None = None  # existing: the cluster to run in
    context: str | None = None  # existing: the kubeconfig's context (default: its current one)
    allow_fake_gpus: bool = False  # existing: may change the GPU count of nodes that report real GPUs
    scheduler_running: bool = False  # existing: the scheduler under test already runs there; start none
    worker: str = ""  # pytest-xdist's worker (gw0, …): kind clusters are named per worker
    feature_gates: tuple[tuple[str, bool], ...] = ()  # --feature-gates: over every definition's own


@dataclass
class Started:
    """A running cluster, the folder of its run, and how to stop it."""

    cluster: Cluster
    stop: Callable[[], None]
    run_dir: Path
    reaped: list[str]
    # Where the provider can: give the running control plane another definition's feature gates, API versions
    # and node agent (the nodes are then replaced as for any definition: ``Cluster.redefine``).
    reconfigure: Callable[[ClusterDefinition], None] | None = None


class Provider(Protocol):
    name: str
    # What it can do for any definition (:mod:`schedgate.cluster.abilities`), read before anything starts.
    # Without MAKES_CLUSTERS (existing: one cluster as it is) a file that needs another definition or profile
    # is skipped; without ADDS_NODES a file that adds nodes is. What a cluster it started can do is its
    # backend's ``abilities``.
    abilities: frozenset[Ability]

    def cannot_run(self, definition: ClusterDefinition) -> str | None:
        """Why this provider cannot make a cluster of ``definition`` on this machine, in one line; ``None``
        when it can. Decided from the definition alone, before anything is built or started."""

    def preflight(self, req: ClusterRequest) -> None:
        """Cheap checks before anything is built, created or written; each problem is one line."""

    def create(self, req: ClusterRequest, reaped: list[str]) -> Started:
        """Make the cluster (see :func:`create_in_steps`) with the scheduler under test running in it."""


C = TypeVar("C")
T = TypeVar("T")
Step = tuple[str, Callable[[C], object]]


def create_in_steps(steps: Sequence[Step[C]], context: C, rollback: Callable[[C], None],
                    timings: dict[str, float]) -> None:
    """Run ``steps`` in order, each given ``context`` (what the steps share, as kind's actions share an
    ActionContext: the request, and what each earlier step made), logging each and timing it into
    ``timings`` (and ``total``).

    When one fails (or the run is interrupted), ``rollback`` takes down what the context says was made,
    and the failure goes on to the caller.
    """
    t0 = time.monotonic()
    name = ""
    try:
        for name, do in steps:
            log.info("%s (%.1fs)", name, time.monotonic() - t0)
            started = time.monotonic()
            with ticking(name):
                do(context)
            timings[name] = time.monotonic() - started
    except BaseException:
        log.info("creation failed at %r; taking down what was made", name)
        rollback(context)
        raise
    timings["total"] = time.monotonic() - t0


def made(value: T | None, what: str) -> T:
    """What an earlier creation step made (a context's field); asked for before that step ran, one line."""
    if value is None:
        raise ComponentError(f"cluster creation: {what} is not made yet (a step ran before the one that makes it)")
    return value


def first_sync(cluster: Cluster, req: ClusterRequest, timeout: float) -> None:
    """Every scheduler binds a probe pod (the cluster's first sync). A black box under test is up once it
    has: it has its file's start timeout for that, and one that exits first is a start failure, not a test's."""
    box = req.scheduler_config.black_box
    try:
        cluster.sync_schedulers(box.start_timeout if box else timeout)
    except ComponentDied:
        raise ComponentError("; ".join(cluster.died()) + " before it bound its probe pod") from None
    # A scheduler that exited before the barrier began was not waited for (it waits on running ones only).
    if dead := cluster.died():
        raise ComponentError("; ".join(dead) + " before it bound its probe pod")


INFO = "info.json"


def write_info(run: Path, req: ClusterRequest, cluster: Cluster) -> None:
    """What ``schedgate status`` shows about a run: provider, definition, scheduler, how to reach it."""
    info = {"provider": req.provider, "cluster": req.definition.name, "definition": req.definition.source,
            "scheduler_config": req.scheduler_config.source, "profiles": sorted(cluster.schedulers),
            "kubeconfig": str(cluster.kubeconfig), "kubernetes": cluster.kubernetes_version,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "kept": req.keep}
    if req.definition.gates or req.provider == "existing":
        # The gates the API server has on, as its /metrics says: on a cluster schedgate did not make, all
        # it can tell of them (a scrape of the API server's metrics takes a moment, so only then).
        info["feature_gates_on"] = sorted(name for name, on in read_feature_gates(cluster.api).items() if on)
    (run / INFO).write_text(json.dumps(info, indent=1) + "\n")


def read_info(run: Path) -> dict[str, Any]:
    """What :func:`write_info` wrote in a run folder of this user's (``{}`` if nothing readable)."""
    text = own_file(run, INFO, 1024 * 1024)
    try:
        info = json.loads(text) if text else {}
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


def binaries(bin_dir: Path | None) -> Binaries:
    """The pinned binaries: built into the cache, the prebuilt ones of ``--bin-dir``, or envtest's
    (``KUBEBUILDER_ASSETS``), each checked against the pin (see :mod:`schedgate.runtime.binaries`)."""
    return resolve(bin_dir)


def resource_scale(definition: ClusterDefinition, real: dict[str, float]) -> dict[str, float]:
    """Per resource, real/defined size of the largest node: what pod requests are multiplied by.

    ``real`` is the smallest allocatable (cpu in cores, memory in bytes) among the workers.
    """
    out: dict[str, float] = {}
    for r in ("cpu", "memory"):
        defined = max((parse_quantity(n.allocatable[r]) for n in definition.nodes() if r in n.allocatable), default=0)
        if defined and r in real and real[r] < defined:
            out[r] = real[r] / defined
    return out


def smallest_allocatable(nodes: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """The smallest allocatable cpu (cores) and memory (bytes) among ``nodes`` (Node objects as JSON)."""
    real: dict[str, float] = {}
    for n in nodes:
        for r in ("cpu", "memory"):
            v = parse_quantity(((n.get("status") or {}).get("allocatable") or {}).get(r, "0"))
            real[r] = min(real.get(r, v), v)
    return real
