"""What a provider's running cluster offers the :class:`~schedgate.cluster.Cluster` facade.

Every provider offers :class:`Backend`. Abilities not every provider has are
small protocols of their own, which the facade asks for by type; a missing
one is a clear error at the call (``the existing provider cannot restart its
API server``), never a silent no-op::

    cluster.capability(RestartsApiServer, "restart its API server").restart_apiserver()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from schedgate.cluster.nodes import NodeBackend
from schedgate.runtime.procs import Component
from schedgate.runtime.scheduler import Scheduler
from schedgate.spec.schedconfig import SchedulerConfig


@runtime_checkable
class Backend(Protocol):
    """Every provider: its name, its nodes, the schedulers by profile, what a death fails."""

    @property
    def name(self) -> str: ...

    @property
    def nodes(self) -> NodeBackend: ...

    @property
    def schedulers(self) -> Mapping[str, Scheduler]:
        """Every running scheduler, under each profile it serves."""

    @property
    def pod_image(self) -> str:
        """The image scenario pods run (a placeholder where no kubelet runs them)."""

    @property
    def extender_host(self) -> str:
        """The address schedgate's own servers (the extender) listen on, as the schedulers reach it."""

    @property
    def extra_nodes(self) -> tuple[str, ...]:
        """Nodes the provider adds beside the definition's (kind's control plane), cordoned like the sync node."""

    @property
    def resource_scale(self) -> Mapping[str, float]:
        """Per resource, what pod requests are multiplied by where real nodes differ from the definition."""

    def components(self) -> Sequence[Component]:
        """Every part of the system under test whose death fails the running test."""


@runtime_checkable
class StartsSchedulers(Protocol):
    def start_scheduler(self, config: SchedulerConfig, binary: Path | None, api_server: str | None) -> Scheduler:
        """Start a scheduler for ``config``'s profiles with its own identity, RBAC and lease; with
        ``api_server`` its kubeconfig names that address (a proxy) instead of the API server's own."""

    def stop_scheduler(self, scheduler: Scheduler) -> None:
        """Stop it for good and forget its profiles."""


@runtime_checkable
class ReroutesSchedulers(Protocol):
    def reroute_scheduler(self, scheduler: Scheduler, api_server: str | None) -> None:
        """Point ``scheduler``'s kubeconfig at ``api_server`` (a proxy; ``None``: the API server's own address)
        and, if it runs, restart it so that it reconnects there."""


@runtime_checkable
class RestartsApiServer(Protocol):
    def restart_apiserver(self) -> float:
        """Stop the API server and start it again (same address, same data); the seconds it was gone."""


@runtime_checkable
class ExposesApiServer(Protocol):
    @property
    def api_endpoint(self) -> tuple[str, int]:
        """Where schedgate reaches the API server (host, port), for a proxy in front of it."""


@runtime_checkable
class ExportsLogs(Protocol):
    def export_logs(self, dest: Path) -> None:
        """Write the nodes' own logs (kubelet, container runtime) into ``dest``."""


@runtime_checkable
class AuditsRequests(Protocol):
    def audit_lines(self) -> list[str]:
        """The API server's audit log so far, one JSON entry a line (pod deletions and evictions, by whom:
        :mod:`schedgate.cluster.audit`)."""
