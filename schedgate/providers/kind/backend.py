"""What a running kind cluster can do, for the cluster facade."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes import client as k8s

from schedgate.cluster.abilities import Ability, running
from schedgate.cluster.audit import READ_LIMIT
from schedgate.cluster.nodes import NodeBackend
from schedgate.errors import ComponentError
from schedgate.kube.api import create_or_keep
from schedgate.providers.identity import cluster_ca, identity_name, token_kubeconfig, token_kubeconfig_text
from schedgate.providers.kind.config import AUDIT_LOG_PATH
from schedgate.providers.kind.controlplane import ControlPlane
from schedgate.providers.kind.dra import DriverSlices
from schedgate.providers.kind.host import Host
from schedgate.providers.kind.scheduler import (
    CLUSTER_CA,
    FIRST_PORT,
    IN_POD_KUBECONFIG,
    SCHEDULER_NAMESPACE,
    PodScheduler,
    StaticScheduler,
)
from schedgate.providers.rbac import grant
from schedgate.runtime.blackbox import BlackBoxProcess
from schedgate.runtime.procs import Component, Proc, RunDir
from schedgate.runtime.scheduler import Scheduler, distinct, forget
from schedgate.spec.schedconfig import SchedulerConfig

# kwok nodes made in the cluster (a definition's kubelet workers cannot be added), devices published as
# on local (by schedgate's DRA driver on kubelet workers), black boxes as processes on this machine with a
# token of their own, as on an existing cluster; the scheduler under test a static pod, replaced in place.
KIND = frozenset({Ability.MAKES_CLUSTERS, Ability.ADDS_NODES, Ability.PUBLISHES_DEVICES, Ability.RUNS_BLACK_BOXES,
                  Ability.SWAPS_SCHEDULERS})


@dataclass
class KindBackend:
    """What a kind cluster can do: start schedulers in it, restart its API server, be proxied, export logs,
    publish devices through its DRA driver. A kube-scheduler runs on the control plane (a static pod); a black
    box runs as a process on this machine under a ServiceAccount token of its own, as on an existing cluster."""

    host: Host
    cluster: str
    api: k8s.ApiClient
    run_dir: Path
    kubeconfig: Path
    scheduler_image: str
    nodes: NodeBackend  # kwok nodes (ApiOnlyNodes), or kubelet workers (KubeletNodes)
    pod_image: str
    extender_host: str
    api_endpoint: tuple[str, int]
    containers: dict[str, str]
    resource_scale: dict[str, float] = field(default_factory=dict)
    run: RunDir | None = None  # where black boxes run, and their logs
    programs: Mapping[str, Path] = field(default_factory=dict)  # what a black box may name bare
    scheduler_args: tuple[str, ...] = ()  # more flags of every scheduler it starts (the definition's gates)
    schedulers: dict[str, Scheduler] = field(default_factory=dict)
    # schedgate's DRA driver on the nodes (only where the definition has devices).
    device_publisher: DriverSlices | None = None
    agent: Proc | None = None  # kwok, beside the cluster, on its kwok nodes
    name: str = "kind"
    _ports: list[int] = field(default_factory=list)
    _loaded: set[str] = field(default_factory=set)  # scheduler images loaded into the cluster since it started

    @property
    def abilities(self) -> frozenset[Ability]:
        return running(self, KIND, self.nodes.abilities)

    @property
    def control_plane(self) -> str:
        return f"{self.cluster}-control-plane"

    @property
    def extra_nodes(self) -> tuple[str, ...]:
        return ()  # kind's control plane registers no Node

    def audit_lines(self) -> list[str]:
        """The API server's audit log, read in the control-plane container (its last READ_LIMIT bytes; none
        before the first entry is written)."""
        done = self.host.run("docker", "exec", self.control_plane, "sh", "-c",
                             f'test ! -e {AUDIT_LOG_PATH} || tail -c {READ_LIMIT} {AUDIT_LOG_PATH}',
                             what="kind: read the API server's audit log", timeout=60)
        return done.stdout.splitlines()

    def plane(self) -> ControlPlane:
        return ControlPlane(self.host, self.control_plane, self.api_endpoint[0])

    def components(self) -> Sequence[Component]:
        out: list[Component] = [self.agent] if self.agent else []
        for s in distinct(self.schedulers):
            if isinstance(s, BlackBoxProcess):
                out += [s.proc] if s.proc else []
            elif isinstance(s, PodScheduler) and not isinstance(s, StaticScheduler):
                out.append(s)
        return out

    def start_scheduler(self, config: SchedulerConfig, binary: Path | None, api_server: str | None,
                        nodes: int) -> Scheduler:
        if config.black_box is not None:
            return self._start_black_box(config, api_server)
        img = self.scheduler_image
        if binary is not None:
            img = self.host.scheduler_image(Path(binary))
            if img != self.scheduler_image and img not in self._loaded:  # once per cluster: 2 s a load here
                self.host.load_image(self.cluster, img)
                self._loaded.add(img)
        lease = config.lease_name
        effective = config.effective(kubeconfig=IN_POD_KUBECONFIG, lease=lease)
        path = effective.write(self.run_dir / f"{lease}.config.yaml")
        s = PodScheduler(name=lease, config=config, effective=effective, config_path=path, image=img,
                         node=self.plane(), run_dir=self.run_dir / "logs", port=FIRST_PORT + len(self._ports),
                         extra_args=self.scheduler_args, nodes=nodes)
        self._ports.append(s.port)
        core = k8s.CoreV1Api(self.api)
        create_or_keep(core.create_namespaced_service_account, SCHEDULER_NAMESPACE,
                       {"metadata": {"name": s.deployment, "labels": {"app.kubernetes.io/managed-by": "schedgate"}}})
        grant(self.api, f"sa-{lease}", s.subject(), lease, config.shared_pools)
        s.kubeconfig = self._pod_kubeconfig(s, api_server)
        try:
            s.start()
        except BaseException:  # its manifest gone: the kubelet would restart a scheduler that never started
            s.stop()
            raise
        for p in config.profile_names:
            self.schedulers[p] = s
        return s

    def _start_black_box(self, config: SchedulerConfig, api_server: str | None) -> BlackBoxProcess:
        """A program on this machine, as on an existing cluster: a ServiceAccount of its own, the black box's
        least-privilege ClusterRole and its one lease, a bound token; the API server through kind's port
        on this machine (or a proxy's address, the server's certificate still checked)."""
        if self.run is None:
            raise ComponentError("kind: no run folder to start a black-box scheduler in")
        lease, core = config.lease_name, k8s.CoreV1Api(self.api)
        identity = identity_name(lease)
        create_or_keep(core.create_namespaced_service_account, SCHEDULER_NAMESPACE,
                       {"metadata": {"name": identity, "labels": {"app.kubernetes.io/managed-by": "schedgate"}}})
        grant(self.api, identity, {"kind": "ServiceAccount", "name": identity, "namespace": SCHEDULER_NAMESPACE},
              lease, black_box=True)
        kubeconfig = self._box_kubeconfig(identity, self.run.path / f"{identity}.kubeconfig", api_server)
        box = BlackBoxProcess(name=lease, config=config, kubeconfig=kubeconfig, run=self.run, built=self.programs)
        box.start(box.spec.start_timeout)
        for p in config.profile_names:
            self.schedulers[p] = box
        return box

    def _pod_kubeconfig(self, s: PodScheduler, api_server: str | None) -> str:
        """A static pod's kubeconfig: on the node's network the API server is on loopback; a proxy's address
        names the server by the name its certificate carries."""
        return token_kubeconfig_text(k8s.CoreV1Api(self.api), s.deployment, SCHEDULER_NAMESPACE, ca=CLUSTER_CA,
                                     server=api_server or "https://127.0.0.1:6443",
                                     tls_server_name="kubernetes" if api_server else None)

    def _box_kubeconfig(self, identity: str, path: Path, api_server: str | None) -> Path:
        """A black box's kubeconfig: kind's port on this machine, or a proxy's address (the certificate still
        checked, under the control plane's address)."""
        assert self.run is not None
        return token_kubeconfig(
            k8s.CoreV1Api(self.api), identity, SCHEDULER_NAMESPACE,
            server=api_server or str(self.api.configuration.host),
            ca=cluster_ca(self.api, self.run.path / "cluster-ca.crt"), path=path,
            tls_server_name=self.api_endpoint[0] if api_server else None)

    def reroute_scheduler(self, scheduler: Scheduler, api_server: str | None) -> None:
        """Its kubeconfig naming ``api_server`` (a proxy on this machine, which the control plane reaches at
        the Docker network's gateway) or the API server's own address again; restarted if it runs."""
        if isinstance(scheduler, BlackBoxProcess):
            self._box_kubeconfig(identity_name(scheduler.name), scheduler.kubeconfig, api_server)
        elif isinstance(scheduler, PodScheduler) and not isinstance(scheduler, StaticScheduler):
            scheduler.kubeconfig = self._pod_kubeconfig(scheduler, api_server)
        else:
            raise ComponentError(f"scheduler {scheduler.name} was not started by schedgate on kind")
        if scheduler.alive():
            scheduler.stop()
            scheduler.start()

    def stop_scheduler(self, scheduler: Scheduler) -> None:
        if isinstance(scheduler, BlackBoxProcess):
            scheduler.stop()
        elif not isinstance(scheduler, PodScheduler) or isinstance(scheduler, StaticScheduler):
            raise ComponentError(f"scheduler {scheduler.name} was not started by schedgate on kind")
        else:
            scheduler.stop()
        forget(self.schedulers, scheduler)

    def stop_black_boxes(self) -> None:
        """Before the cluster goes: a black box would otherwise go on calling a deleted API server."""
        for s in distinct(self.schedulers):
            if isinstance(s, BlackBoxProcess):
                s.stop()

    def restart_apiserver(self) -> float:
        return self.host.restart_apiserver(self.control_plane, self.api)

    def export_logs(self, dest: Path) -> None:
        self.host.export_logs(self.cluster, dest)

    def save_logs(self) -> None:
        for s in distinct(self.schedulers):
            if isinstance(s, PodScheduler) and not isinstance(s, StaticScheduler):
                s.save_log()
