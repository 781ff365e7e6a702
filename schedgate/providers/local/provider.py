"""The local provider: a real control plane as processes on loopback, nodes as API objects (whose pods
live when the definition has a node agent).

Creation steps: PKI, etcd and kube-apiserver; the scheduler under test's RBAC;
the definition's nodes; controllers and both schedulers; the first cache
sync. The one rollback stops every process and removes the run folder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client as k8s

from schedgate.cluster import SYNC_NODE, SYSTEM_NAMESPACE, ApiOnlyNodes, Cluster
from schedgate.cluster.abilities import Ability, running
from schedgate.cluster.audit import AUDIT_LOG, READ_LIMIT
from schedgate.cluster.guard import install_sync_guard
from schedgate.errors import ComponentError, SchedgateError
from schedgate.kube.api import import_api_classes_meanwhile
from schedgate.objects.builders import PLACEHOLDER_IMAGE
from schedgate.objects.pods import Namespace, wait_default_service_accounts, write_api_server_namespaces
from schedgate.providers.base import (
    ClusterRequest,
    Started,
    binaries,
    create_in_steps,
    first_sync,
    log,
    made,
    write_info,
)
from schedgate.providers.local.controlplane import LocalControlPlane, under_test_user
from schedgate.providers.rbac import grant, user_subject
from schedgate.runtime.blackbox import BlackBoxProcess
from schedgate.runtime.kwok import ensure_kwok
from schedgate.runtime.procs import Component, RunDir
from schedgate.runtime.scheduler import Scheduler, SchedulerProcess
from schedgate.spec.agent import agent_unmet
from schedgate.spec.cluster import ClusterDefinition
from schedgate.spec.schedconfig import SchedulerConfig

# API-only nodes made here (with the node agent's pods run), devices published by schedgate, black boxes
# as processes beside the control plane.
LOCAL = frozenset({Ability.MAKES_CLUSTERS, Ability.ADDS_NODES, Ability.PUBLISHES_DEVICES, Ability.RUNS_BLACK_BOXES})


@dataclass
class LocalBackend:
    """What a local cluster can do: start and stop schedulers, restart its API server, be proxied."""

    cp: LocalControlPlane
    nodes: ApiOnlyNodes
    default_binary: Path
    name: str = "local"
    pod_image: str = PLACEHOLDER_IMAGE
    extender_host: str = "127.0.0.1"
    extra_nodes: tuple[str, ...] = ()

    @property
    def abilities(self) -> frozenset[Ability]:
        return running(self, LOCAL, self.nodes.abilities)

    @property
    def schedulers(self) -> Mapping[str, Scheduler]:
        return self.cp.schedulers

    @property
    def resource_scale(self) -> Mapping[str, float]:
        return {}

    def components(self) -> Sequence[Component]:
        return self.cp.components()

    def start_scheduler(self, config: SchedulerConfig, binary: Path | None, api_server: str | None,
                        nodes: int) -> Scheduler:
        lease = config.lease_name
        grant(self.cp.api_client(), lease, user_subject(under_test_user(lease)), lease, config.shared_pools,
              black_box=config.black_box is not None)
        try:
            return self.cp.add_scheduler(config, Path(binary or self.default_binary), api_server, nodes)
        except BaseException:  # one that never started is no scheduler of this cluster's: nothing revives it later
            left = self.cp.schedulers.get(config.profile_names[0])
            if left is not None:
                self.cp.remove_scheduler(left)
            raise

    def stop_scheduler(self, scheduler: Scheduler) -> None:
        self.cp.remove_scheduler(scheduler)

    def reroute_scheduler(self, scheduler: Scheduler, api_server: str | None) -> None:
        if not isinstance(scheduler, SchedulerProcess | BlackBoxProcess):
            raise ComponentError(f"scheduler {scheduler.name} is no process of this cluster's")
        self.cp.write_kubeconfig(scheduler.kubeconfig.stem, api_server)  # {identity}.kubeconfig
        if scheduler.alive():
            scheduler.stop()
            scheduler.start()

    def restart_apiserver(self) -> float:
        return self.cp.restart_api()

    def audit_lines(self) -> list[str]:
        path = self.cp.run.path / AUDIT_LOG
        if not path.exists():
            return []
        with path.open("rb") as f:  # its last READ_LIMIT bytes (the first line may be cut: removals skips it)
            f.seek(max(0, path.stat().st_size - READ_LIMIT))
            return f.read().decode(errors="replace").splitlines()

    @property
    def api_endpoint(self) -> tuple[str, int]:
        return ("127.0.0.1", self.cp.api_port)


class LocalProvider:
    name = "local"
    abilities = LOCAL

    def cannot_run(self, definition: ClusterDefinition) -> str | None:
        return agent_unmet(definition, "local")

    def preflight(self, req: ClusterRequest) -> None:
        """The rest it needs is checked with the request (files, binary) and by the toolchain."""
        unmet = agent_unmet(req.definition, "local")
        if unmet:
            raise SchedgateError(unmet)

    def create(self, req: ClusterRequest, reaped: list[str]) -> Started:
        return _create(req, reaped)


@dataclass
class LocalContext:
    """What one local cluster's creation steps share, passed to each as kind passes its actions an
    ActionContext: the request, its run folder and control plane (made before the first step: nothing
    runs yet), and the cluster (None until its nodes are made)."""

    req: ClusterRequest
    reaped: list[str]
    binary: Path
    kubernetes_version: str
    dir: RunDir
    cp: LocalControlPlane
    cluster: Cluster | None = None
    service_accounts: Future[None] | None = None  # the controller manager's first work, waited for last


# The controller manager makes every namespace's default ServiceAccount while the schedulers sync.
_MEANWHILE = ThreadPoolExecutor(max_workers=2, thread_name_prefix="schedgate-start")


def _context(req: ClusterRequest, reaped: list[str]) -> LocalContext:
    """Everything checked and built before anything starts: a gate or API version the pinned version has
    not is one line, kwok is built (once) for a definition with a node agent."""
    bins = binaries(req.bin_dir)
    binary = Path(req.scheduler_binary or bins.kube_scheduler)
    gates = req.definition.gates
    if gates:
        gates.check(bins.feature_gates() if gates.feature_gates else {}, bins.kubernetes_version)
    agent = req.definition.agent
    kwok = ensure_kwok() if agent is not None else None
    run = RunDir.create(keep=req.keep)
    cp = LocalControlPlane(bins=bins, run=run, under_test=req.scheduler_config, scheduler_binary=binary,
                           nodes=len(req.definition.nodes()), gates=gates, agent=agent, kwok=kwok)
    return LocalContext(req, reaped, binary, bins.kubernetes_version, run, cp)


def _create(req: ClusterRequest, reaped: list[str]) -> Started:
    c = _context(req, reaped)
    log.info("cluster %r in %s", req.definition.name, c.dir.path)
    import_api_classes_meanwhile()  # while etcd and kube-apiserver start
    create_in_steps([  # each step's name is its key in the cluster's timings
        ("etcd and kube-apiserver", lambda c: c.cp.start_api()),
        ("RBAC for the scheduler under test", rbac),  # this and the nodes inside the hooks' second
        (f"{len(req.definition.nodes())} nodes", nodes),
        ("kube-apiserver ready", lambda c: c.cp.wait_api_ready()),
        ("controllers and schedulers", controllers),
        ("first sync of every scheduler", lambda c: first_sync(made(c.cluster, "the cluster"), c.req, 15)),
        ("every namespace's default ServiceAccount", lambda c: made(c.service_accounts, "the wait").result()),
        ("run info", lambda c: write_info(c.dir.path, c.req, made(c.cluster, "the cluster"))),
    ], c, rollback, c.cp.timings)
    return Started(cluster=made(c.cluster, "the cluster"), stop=lambda: stop(c), run_dir=c.dir.path,
                   reaped=reaped)


def controllers(c: LocalContext) -> None:
    c.cp.start_schedulers()
    # A cluster that is up has every namespace's default ServiceAccount (a pod in default is refused without
    # it): the controller manager makes them while the schedulers sync, and the start waits for them last.
    c.service_accounts = _MEANWHILE.submit(wait_default_service_accounts, c.cp.api_client(), 30)


def rbac(c: LocalContext) -> None:
    install_sync_guard(c.cp.api_client(), SYNC_NODE, SYSTEM_NAMESPACE)  # loads while the rest starts
    core = k8s.CoreV1Api(c.cp.api_client())
    Namespace.create_own(core, SYSTEM_NAMESPACE)  # the first sync's probes go there
    write_api_server_namespaces(core)  # the last step then finds the ServiceAccounts made
    config = c.req.scheduler_config
    grant(c.cp.api_client(), config.lease_name, user_subject(under_test_user(config.lease_name)),
          config.lease_name, config.shared_pools, black_box=config.black_box is not None)


def nodes(c: LocalContext) -> None:
    api = c.cp.api_client()
    backend = LocalBackend(cp=c.cp, nodes=ApiOnlyNodes(k8s.CoreV1Api(api), agent=c.cp.agent is not None),
                           default_binary=c.binary)
    c.cluster = Cluster(definition=c.req.definition, kubeconfig=c.cp.admin_kubeconfig, api=api,
                        kubernetes_version=c.kubernetes_version, backend=backend, timings=c.cp.timings)
    c.cluster.nodes.reset()


def rollback(c: LocalContext) -> None:
    c.cp.stop()
    c.dir.keep = False
    c.dir.close()


def stop(c: LocalContext) -> None:
    if not c.req.keep:
        c.cp.stop()
    c.dir.close()
