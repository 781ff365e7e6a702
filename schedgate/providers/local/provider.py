"""The local provider: a real control plane as processes on loopback, nodes as API objects (whose pods
live when the definition has a node agent).

Creation steps: PKI, etcd and kube-apiserver; the scheduler under test's RBAC;
the definition's nodes; controllers and both schedulers; the first cache
sync. The one rollback stops every process and removes the run folder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client as k8s

from schedgate.cluster import SYNC_NODE, SYSTEM_NAMESPACE, ApiOnlyNodes, Cluster
from schedgate.cluster.guard import install_sync_guard
from schedgate.kube.api import import_api_classes_meanwhile
from schedgate.objects.builders import PLACEHOLDER_IMAGE
from schedgate.providers.base import ClusterRequest, Started, binaries, create_in_steps, first_sync, log, write_info
from schedgate.providers.local.controlplane import LocalControlPlane, under_test_user
from schedgate.providers.rbac import grant, user_subject
from schedgate.runtime.kwok import ensure_kwok
from schedgate.runtime.procs import Component, RunDir
from schedgate.runtime.scheduler import Scheduler
from schedgate.spec.cluster import ClusterDefinition
from schedgate.spec.schedconfig import SchedulerConfig


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
    def schedulers(self) -> Mapping[str, Scheduler]:
        return self.cp.schedulers

    @property
    def resource_scale(self) -> Mapping[str, float]:
        return {}

    def components(self) -> Sequence[Component]:
        return self.cp.components()

    def start_scheduler(self, config: SchedulerConfig, binary: Path | None, api_server: str | None) -> Scheduler:
        lease = config.lease_name
        grant(self.cp.api_client(), lease, user_subject(under_test_user(lease)), lease, config.shared_pools,
              black_box=config.black_box is not None)
        return self.cp.add_scheduler(config, Path(binary or self.default_binary), api_server)

    def stop_scheduler(self, scheduler: Scheduler) -> None:
        self.cp.remove_scheduler(scheduler)

    def restart_apiserver(self) -> float:
        return self.cp.restart_api()

    @property
    def api_endpoint(self) -> tuple[str, int]:
        return ("127.0.0.1", self.cp.api_port)


class LocalProvider:
    name = "local"
    makes_clusters = True
    publishes_devices = True
    runs_black_boxes = True
    adds_nodes = True
    kubelets_only = False

    def cannot_run(self, definition: ClusterDefinition) -> str | None:
        return None

    def preflight(self, req: ClusterRequest) -> None:
        return None  # what it needs is checked with the request (files, binary) and by the toolchain

    def create(self, req: ClusterRequest, reaped: list[str]) -> Started:
        return _Creation(req, reaped).run()


class _Creation:
    """One local cluster being made: its steps share these attributes."""

    cluster: Cluster

    def __init__(self, req: ClusterRequest, reaped: list[str]) -> None:
        self.req = req
        self.reaped = reaped
        self.bins = binaries(req.bin_dir)
        self.binary = Path(req.scheduler_binary or self.bins.kube_scheduler)
        gates = req.definition.gates
        if gates:  # before anything starts: a gate or API version the pinned version has not is one line
            gates.check(self.bins.feature_gates() if gates.feature_gates else {}, self.bins.kubernetes_version)
        agent = req.definition.agent
        kwok = ensure_kwok() if agent is not None else None  # built (once) before anything starts
        self.dir = RunDir.create(keep=req.keep)
        self.cp = LocalControlPlane(bins=self.bins, run=self.dir, under_test=req.scheduler_config,
                                    scheduler_binary=self.binary, nodes=len(req.definition.nodes()), gates=gates,
                                    agent=agent, kwok=kwok)

    def run(self) -> Started:
        req = self.req
        log.info("cluster %r in %s", req.definition.name, self.dir.path)
        import_api_classes_meanwhile()  # while etcd and kube-apiserver start
        create_in_steps([  # each step's name is its key in the cluster's timings
            ("etcd and kube-apiserver", self.cp.start_api),
            ("RBAC for the scheduler under test", self.rbac),
            (f"{len(req.definition.nodes())} nodes", self.nodes),
            ("controllers and schedulers", self.cp.start_schedulers),
            ("first sync of every scheduler", lambda: first_sync(self.cluster, self.req, 15)),
            ("run info", lambda: write_info(self.dir.path, req, self.cluster)),
        ], self.rollback, self.cp.timings)
        return Started(cluster=self.cluster, stop=self.stop, run_dir=self.dir.path, reaped=self.reaped)

    def rbac(self) -> None:
        install_sync_guard(self.cp.api_client(), SYNC_NODE, SYSTEM_NAMESPACE)  # loads while the rest starts
        config = self.req.scheduler_config
        grant(self.cp.api_client(), config.lease_name, user_subject(under_test_user(config.lease_name)),
              config.lease_name, config.shared_pools, black_box=config.black_box is not None)

    def nodes(self) -> None:
        api = self.cp.api_client()
        nodes = ApiOnlyNodes(k8s.CoreV1Api(api), runs_pods=self.cp.agent is not None)
        backend = LocalBackend(cp=self.cp, nodes=nodes, default_binary=self.binary)
        self.cluster = Cluster(definition=self.req.definition, kubeconfig=self.cp.admin_kubeconfig, api=api,
                               kubernetes_version=self.bins.kubernetes_version, backend=backend,
                               timings=self.cp.timings)
        self.cluster.apply_nodes()

    def rollback(self) -> None:
        self.cp.stop()
        self.dir.keep = False
        self.dir.close()

    def stop(self) -> None:
        if not self.req.keep:
            self.cp.stop()
        self.dir.close()
