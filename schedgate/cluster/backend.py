"""What a provider's running cluster offers the :class:`~schedgate.cluster.Cluster` facade.

Every provider's backend is a :class:`Backend`; what else it can do is its ``abilities`` and the
optional interfaces of :mod:`schedgate.cluster.abilities` it implements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from schedgate.cluster.abilities import Ability
from schedgate.cluster.nodes import NodeBackend
from schedgate.runtime.procs import Component
from schedgate.runtime.scheduler import Scheduler


@runtime_checkable
class Backend(Protocol):
    """Every provider: its name, its nodes, the schedulers by profile, what a death fails."""

    @property
    def name(self) -> str: ...

    @property
    def nodes(self) -> NodeBackend: ...

    @property
    def abilities(self) -> frozenset[Ability]:
        """What this cluster can do (:func:`schedgate.cluster.abilities.running`)."""

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
        """Nodes the provider adds beside the definition's, cordoned like the sync node."""

    @property
    def resource_scale(self) -> Mapping[str, float]:
        """Per resource, what pod requests are multiplied by where real nodes differ from the definition."""

    def components(self) -> Sequence[Component]:
        """Every part of the system under test whose death fails the running test."""
