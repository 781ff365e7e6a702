"""What a provider, and a cluster it started, can do: one list (:class:`Ability`), asked one way.

- A provider declares what it can do for any definition (``Provider.abilities``), read before anything
  starts: whether a scenario file runs there or is skipped with the reason.
- A running cluster's backend answers for this cluster (``Backend.abilities``, asked through
  ``Cluster.can``): its nodes' abilities (a node agent runs pods, kubelets admit them, API-only nodes
  can be added) and every optional interface below it implements.
- An ability that is something to call is an optional interface, as e2e-framework's cluster providers
  have them: a protocol the backend implements exactly when it has the ability. ``Cluster.use`` gives the
  backend as that interface, or says in one line that the provider cannot::

      cluster.use(RestartsApiServer).restart_apiserver()
      # NotHere: the existing provider cannot restart its API server
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Protocol, runtime_checkable

from schedgate.errors import NotHere
from schedgate.runtime.scheduler import Scheduler
from schedgate.spec.schedconfig import SchedulerConfig


class Ability(enum.StrEnum):
    """One thing a provider or a running cluster may be able to do; the value completes "it cannot …"."""

    # Declared by a provider, for any definition (read before a cluster starts).
    MAKES_CLUSTERS = "make a cluster of any definition"
    PUBLISHES_DEVICES = "publish a definition's devices as ResourceSlices"
    RUNS_BLACK_BOXES = "run a black-box scheduler"
    # One control plane serves every scheduler configuration: the scheduler under test is replaced in it
    # (kind: a static pod in seconds, where a control plane takes half a minute). Without it a cluster is
    # started per configuration.
    SWAPS_SCHEDULERS = "replace the scheduler under test in a running cluster"
    # Its nodes' (a provider declares ADDS_NODES when some definition's nodes can be added; a running
    # cluster has it when its nodes can).
    ADDS_NODES = "add a node (a Node object with no kubelet behind it)"
    RUNS_PODS = "run the pods bound to its nodes"
    ADMITS_PODS = "check a bound pod against its node (a kubelet's admission)"
    # Optional interfaces (below): the backend has the ability exactly when it implements the interface.
    STARTS_SCHEDULERS = "start more schedulers"
    REROUTES_SCHEDULERS = "put a proxy before its schedulers"
    RESTARTS_API_SERVER = "restart its API server"
    EXPOSES_API_SERVER = "name its API server's address for a proxy in front of it"
    EXPORTS_LOGS = "export node logs"
    AUDITS_REQUESTS = "read its API server's audit log"


NODE_ABILITIES = frozenset({Ability.ADDS_NODES, Ability.RUNS_PODS, Ability.ADMITS_PODS})


@runtime_checkable
class StartsSchedulers(Protocol):
    def start_scheduler(self, config: SchedulerConfig, binary: Path | None, api_server: str | None,
                        nodes: int) -> Scheduler:
        """Start a scheduler for ``config``'s profiles with its own identity, RBAC and lease; with
        ``api_server`` its kubeconfig names that address (a proxy) instead of the API server's own. ``nodes``: how
        many it will see now, which decides its log flags (:func:`~schedgate.objects.schedlog.log_flags`)."""

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


INTERFACES: dict[type, Ability] = {
    StartsSchedulers: Ability.STARTS_SCHEDULERS, ReroutesSchedulers: Ability.REROUTES_SCHEDULERS,
    RestartsApiServer: Ability.RESTARTS_API_SERVER, ExposesApiServer: Ability.EXPOSES_API_SERVER,
    ExportsLogs: Ability.EXPORTS_LOGS, AuditsRequests: Ability.AUDITS_REQUESTS,
}


def running(backend: object, declared: frozenset[Ability], nodes: frozenset[Ability]) -> frozenset[Ability]:
    """A running cluster's abilities: what its provider ``declared`` for any definition (less the nodes'
    abilities, which are ``nodes``': this cluster's), and the optional interfaces ``backend`` implements."""
    return (declared - NODE_ABILITIES) | nodes | frozenset(
        a for interface, a in INTERFACES.items() if isinstance(backend, interface))


def cannot(provider: str, ability: Ability) -> NotHere:
    """The one line a refusal gives: ``the kind provider cannot restart its API server``."""
    return NotHere(f"the {provider} provider cannot {ability}")
