"""Cluster providers by name, and the one entry point that starts a cluster.

    started = start_cluster(ClusterRequest(provider="local", definition=..., scheduler_config=...))
    started.cluster ...; started.stop()

``local`` (processes on loopback, API-only nodes), ``kind`` (real kubelets in Docker) and ``existing``
(a cluster somebody else runs, through its kubeconfig) are here;
a provider is a :class:`~schedgate.providers.base.Provider` registered in :data:`PROVIDERS`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TextIO

from schedgate.cluster.abilities import Ability
from schedgate.errors import SchedgateError
from schedgate.providers.base import ClusterRequest, Provider, Started, read_info, write_info
from schedgate.providers.existing import ExistingProvider
from schedgate.providers.kind import KindProvider
from schedgate.providers.local import LocalProvider
from schedgate.runtime.progress import shown_on
from schedgate.runtime.reap import reap_orphans
from schedgate.spec.files import check_executable

REGISTRY: dict[str, Provider] = {p.name: p for p in (LocalProvider(), KindProvider(), ExistingProvider())}
PROVIDERS = tuple(REGISTRY)


def provider(name: str) -> Provider:
    try:
        return REGISTRY[name]
    except KeyError:
        raise SchedgateError(f"--provider {name!r}: unknown provider (known: {', '.join(PROVIDERS)})") from None


def start_cluster(req: ClusterRequest, out: TextIO | None = None) -> Started:
    """Check the request, reap what crashed runs left, and create the cluster with the provider it names.

    Progress goes to the ``schedgate`` logger, and also to ``out`` if given."""
    p = provider(req.provider)
    if req.feature_gates:  # the option's gates over the definition's, for every component of this cluster
        req = replace(req, definition=replace(req.definition,
                                              gates=req.definition.gates.with_option(req.feature_gates)))
    if req.scheduler_binary is not None:
        check_executable(req.scheduler_binary, "--scheduler-binary")
    box = req.scheduler_config.black_box
    if box is not None and Ability.RUNS_BLACK_BOXES not in p.abilities:
        raise SchedgateError(f"{box.source}: the {p.name} provider cannot run a BlackBoxScheduler")
    p.preflight(req)
    with shown_on(out):
        reaped = reap_orphans(kubeconfig=req.kubeconfig)
        return p.create(req, reaped)


__all__ = ["PROVIDERS", "REGISTRY", "ClusterRequest", "Provider", "Started", "provider", "read_info",
           "start_cluster", "write_info"]
