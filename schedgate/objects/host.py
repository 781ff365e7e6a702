"""What pods, namespaces and events need of the cluster they live in.

:class:`schedgate.cluster.Cluster` provides it; the objects layer knows
nothing else of clusters or providers.
"""

from __future__ import annotations

from typing import Any, Protocol

from schedgate.objects.builders import PodBuilder


class PodHost(Protocol):
    # Typed as Any: the API takes plain dict manifests, which the client's stubs do not model.
    @property
    def core(self) -> Any: ...

    @property
    def events_api(self) -> Any: ...

    def check_health(self) -> None:
        """Raise if a component of the system under test died (fails a wait at once)."""

    def control_plane_down(self) -> bool:
        """Whether the API server or what it needs died (nothing can be cleaned up through it)."""

    def pod_manifest(self, builder: PodBuilder) -> dict[str, Any]:
        """The builder's manifest as this cluster runs it (image, requests scaled to real nodes)."""

    def settle(self) -> None:
        """Before a pod is created, deleted or annotated: wait until every scheduler has seen the node
        edits made so far, so it never judges the pod on a node state the test has already changed."""
