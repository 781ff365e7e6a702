"""The kind provider: the same definitions on real kubelets in Docker.

One control-plane node (kind's) plus one worker per node of the definition,
registered under the definition's node name, with its labels and taints
(:mod:`.config`). A kubelet reports its machine's real CPUs and memory, so
pod cpu and memory requests are scaled by real/defined node size; GPUs are
advertised by patching node status, as a device plugin would; DRA devices by
schedgate's driver on each node (:mod:`.dra`). The scheduler under test runs in
the cluster as a Deployment (:mod:`.scheduler`).

Creation steps: node tools and node image, binaries, the run folder, a reused
cluster checked (or recreated), ``kind create cluster``, every node Ready, the
scheduler image loaded and started, the DRA driver (with devices only), the
nodes as defined, the first sync. The one rollback exports a new cluster's
node logs, deletes it and removes the run folder (a reused cluster that was
not made by this run is left alone).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from schedgate.cluster import Cluster, KubeletNodes
from schedgate.errors import ComponentError, SchedgateError
from schedgate.kube.api import new_client, read_json
from schedgate.kube.poll import poll_until
from schedgate.providers.base import (
    ClusterRequest,
    Started,
    create_in_steps,
    first_sync,
    resource_scale,
    smallest_allocatable,
    write_info,
)
from schedgate.providers.kind.backend import KindBackend
from schedgate.providers.kind.config import (
    DEFINITION_ANNOTATION,
    cluster_name,
    definition_digest,
    host_cgroup_v1,
    kind_config,
    kind_name,
    too_large,
)
from schedgate.providers.kind.dra import DriverSlices, deploy_driver
from schedgate.providers.kind.host import Host
from schedgate.providers.kind.scheduler import StaticScheduler
from schedgate.runtime.interrupts import interrupts_deferred
from schedgate.runtime.procs import RunDir
from schedgate.runtime.toolchain import Binaries, ensure_binaries
from schedgate.spec.agent import agent_only_local
from schedgate.spec.cluster import ClusterDefinition
from schedgate.spec.schedconfig import default_scheduler_config

log = logging.getLogger("schedgate")


class KindProvider:
    name = "kind"
    makes_clusters = True
    publishes_devices = True  # through schedgate's DRA driver on the nodes, which prepares the claims
    runs_black_boxes = True  # as a process on this machine with a token of its own, as on an existing cluster
    adds_nodes = False
    kubelets_only = True

    def cannot_run(self, definition: ClusterDefinition) -> str | None:
        return too_large(definition) or agent_only_local(definition, "kind")

    def preflight(self, req: ClusterRequest) -> None:
        """Each problem one line, before anything is built, created or written."""
        big = too_large(req.definition) or agent_only_local(req.definition, "kind")
        if big:
            raise SchedgateError(big)
        host = Host()
        docker = shutil.which("docker", path=host.env.get("PATH")) is not None
        if docker and not host.ok("docker", "info"):
            at = f" at DOCKER_HOST={host.env['DOCKER_HOST']}" if host.env.get("DOCKER_HOST") else ""
            raise SchedgateError(f"--provider kind: no Docker engine answers{at} (start one with `make docker`)")
        override = host.env.get("SCHEDGATE_KIND_IMAGE")
        if override and docker and host.image_id(override) is None:
            raise SchedgateError(f"SCHEDGATE_KIND_IMAGE={override}: no such image in the Docker engine "
                                 "(unset it to build schedgate's node image: make kind-image)")
        if req.scheduler_image and host.image_id(req.scheduler_image) is None:
            raise SchedgateError(f"--scheduler-image {req.scheduler_image}: no such image in the Docker engine "
                                 "(build it or `docker load` it first; nothing is pulled)")
        if req.reuse:
            _name_is_free_or_ours(host, kind_name(cluster_name(req.definition)))

    def create(self, req: ClusterRequest, reaped: list[str]) -> Started:
        return _Creation(req, reaped).run()


def _name_is_free_or_ours(host: Host, name: str) -> None:
    """kind names its node containers <cluster>-control-plane, <cluster>-worker, ... and labels them with the
    cluster; any other container under such a name blocks ``kind create``."""
    out = host.run("docker", "ps", "-a", "--filter", f"name=^/{name}-(control-plane|worker[0-9]*)$",
                   "--format", '{{.Names}}\t{{.Label "io.x-k8s.kind.cluster"}}', check=False)
    for line in out.stdout.splitlines():
        container, _, owner = line.partition("\t")
        if owner != name:
            raise SchedgateError(f"--reuse-cluster: the name {name} is taken: Docker container {container} exists "
                                 f"and is not a node of kind cluster {name}; remove it (docker rm -f {container}) "
                                 "or rename the definition")


class _Creation:
    """One kind cluster being made (or reused): its steps share these attributes."""

    bins: Binaries
    image: str
    digest: str
    dir: RunDir
    name: str
    api: k8s.ApiClient
    backend: KindBackend
    cluster: Cluster

    def __init__(self, req: ClusterRequest, reaped: list[str]) -> None:
        self.req = req
        self.reaped = reaped
        self.reuse = req.reuse
        self.host = Host()
        self.created = False
        self.timings: dict[str, float] = {}

    @property
    def kubeconfig(self) -> Path:
        return self.dir.path / "kubeconfig"

    def run(self) -> Started:
        create_in_steps([
            ("kind: Docker and the node tools", self.host.prepare),
            ("kind: node image", self.node_image),
            ("pinned binaries", self.binaries),
            ("run folder", self.run_folder),
            ("kind: a reused cluster checked", self.check_reused),
            ("kind: create cluster", self.create_cluster),
            ("kind: every node Ready", self.nodes_ready),
            ("kind: the scheduler under test in the cluster", self.start_scheduler),
            ("kind: the DRA driver on every node", self.start_dra_driver),
            ("kind: nodes as defined", self.nodes_as_defined),
            ("first sync of every scheduler", lambda: first_sync(self.cluster, self.req, 60)),
            ("run info", lambda: write_info(self.dir.path, self.req, self.cluster)),
        ], self.rollback, self.timings)
        log.info("kind: cluster %s ready", self.name)
        return Started(cluster=self.cluster, stop=self.stop, run_dir=self.dir.path, reaped=self.reaped)

    # -- steps -------------------------------------------------------------------
    def node_image(self) -> None:
        self.image, image_id = self.host.node_image()
        self.digest = definition_digest(self.req.definition, image_id)
        log.info("kind: node image %s (%s)", self.image, image_id[:19])

    def binaries(self) -> None:
        self.bins = ensure_binaries()
        gates = self.req.definition.gates
        if gates:  # before the cluster: a gate or API version the pinned version has not is one line
            gates.check(self.bins.feature_gates() if gates.feature_gates else {}, self.bins.kubernetes_version)

    def run_folder(self) -> None:
        self.dir = RunDir.create(keep=self.req.keep or self.reuse)
        base = kind_name(cluster_name(self.req.definition) + (f"-{self.req.worker}" if self.req.worker else ""))
        self.name = base if self.reuse else kind_name(f"{base}-{self.dir.path.name[-6:].lower()}")
        # What the reaper needs to delete the cluster after a crash: its name, our PATH, its kubeconfig.
        (self.dir.path / "kind-cluster").write_text(f"{self.name}\n{self.host.env['PATH']}\n{self.kubeconfig}\n")

    def check_reused(self) -> None:
        if not (self.reuse and self.name in self.host.clusters()):
            return
        self.host.run("kind", "export", "kubeconfig", "--name", self.name, "--kubeconfig", str(self.kubeconfig))
        core = k8s.CoreV1Api(self._client())
        cp = core.read_node(f"{self.name}-control-plane")
        have = (getattr(cp.metadata, "annotations", None) or {}).get(DEFINITION_ANNOTATION)
        if have is None:
            raise SchedgateError(f"--reuse-cluster: a kind cluster named {self.name} exists and schedgate did not "
                                 f"make it; delete it (kind delete cluster --name {self.name}) or rename the "
                                 "definition")
        if have != self.digest:
            log.info("kind: cluster %s was made for another definition or image (%s != %s); recreating it",
                     self.name, have, self.digest)
            self.host.delete_cluster(self.name, self.kubeconfig)
        else:
            log.info("kind: reusing cluster %s", self.name)

    def create_cluster(self) -> None:
        if self.name in self.host.clusters():
            return
        cfg = kind_config(self.req.definition, self.name, self.image, cgroup_v1=host_cgroup_v1())
        path = self.dir.path / "kind-config.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        log.info("kind: creating cluster %s (%d nodes)", self.name, len(cfg["nodes"]))
        self.created = True
        self.host.create_cluster(path, self.kubeconfig)

    def nodes_ready(self) -> None:
        core = k8s.CoreV1Api(self._client())
        names = [n.name for n in self.req.definition.nodes()]

        def ready() -> bool:
            items = read_json(core.list_node).get("items") or []
            ok = {n["metadata"]["name"] for n in items if any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (n.get("status") or {}).get("conditions") or [])}
            return all(n in ok for n in names)

        poll_until(ready, f"nodes {', '.join(names)} Ready", 600, error=ComponentError)
        # kind's control plane is not a node of the definition: cordoned instead of tainted, it shows in
        # scheduling messages as the sync node does ("were unschedulable"), never as an untolerated taint.
        core.patch_node(f"{self.name}-control-plane",
                        {"metadata": {"annotations": {DEFINITION_ANNOTATION: self.digest}},
                         "spec": {"unschedulable": True, "taints": None}})

    def start_scheduler(self) -> None:
        req, api = self.req, self._client()
        core = k8s.CoreV1Api(api)
        image = req.scheduler_image or self.host.scheduler_image(Path(req.scheduler_binary or self.bins.kube_scheduler))
        self.host.load_image(self.name, image)
        control_plane = f"{self.name}-control-plane"
        containers = self.host.node_container_map(self.name, core)
        self.backend = KindBackend(
            host=self.host, cluster=self.name, api=api, run_dir=self.dir.path, kubeconfig=self.kubeconfig,
            scheduler_image=image, pod_image=self.host.pause_image(), extender_host=self.host.gateway(),
            api_endpoint=(_internal_ip(core, control_plane), 6443), containers=containers,
            nodes=KubeletNodes(core, "kind", recreate=lambda node: self.host.restart_kubelet(containers[node])),
            run=self.dir, programs=self.bins.programs,
            scheduler_args=tuple(self.req.definition.gates.feature_gates_flag()))
        self.backend.schedulers["default-scheduler"] = StaticScheduler(
            name="kube-scheduler", config=default_scheduler_config(), effective=None,
            config_path=self.dir.path / "kube-scheduler.config.yaml", image="", api=api, node=control_plane,
            run_dir=self.dir.path / "logs", pod_name=f"kube-scheduler-{control_plane}")
        self.backend.start_scheduler(req.scheduler_config, None, None)

    def start_dra_driver(self) -> None:
        """Only for a definition with devices: a cluster without them runs exactly what it did."""
        d = self.req.definition
        if not (d.device_classes or any(n.devices for n in d.nodes())):
            return
        if self.host.bin_dir is None:
            raise ComponentError("kind: scripts/node-binaries gave no folder for the DRA plugin")
        image = self.host.binary_image(self.host.bin_dir / "schedgate-dra-plugin", "schedgate-dra-plugin")
        self.host.load_image(self.name, image)
        deploy_driver(self.api, image, [n.name for n in d.nodes()])
        self.backend.device_publisher = DriverSlices(self.api)
        log.info("kind: DRA driver %s running on %d node(s)", image, len(d.nodes()))

    def nodes_as_defined(self) -> None:
        core = k8s.CoreV1Api(self.api)
        defined = {n.name for n in self.req.definition.nodes()}
        self.backend.resource_scale = resource_scale(self.req.definition, smallest_allocatable(
            n for n in read_json(core.list_node).get("items") or [] if n["metadata"]["name"] in defined))
        if self.backend.resource_scale:
            log.info("kind: pod requests scaled to the real nodes: %s",
                     ", ".join(f"{r} x{f:.4f}" for r, f in self.backend.resource_scale.items()))
        self.cluster = Cluster(definition=self.req.definition, kubeconfig=self.kubeconfig, api=self.api,
                               kubernetes_version=self.bins.kubernetes_version, backend=self.backend,
                               timings=self.timings)
        self.cluster.apply_nodes()

    # -- the one rollback, and the end ----------------------------------------------
    def rollback(self) -> None:
        """Under :func:`interrupts_deferred`: a second Ctrl-C while kind deletes the nodes would leave some."""
        with interrupts_deferred():
            self._rollback()

    def _rollback(self) -> None:
        if not hasattr(self, "dir"):
            return  # nothing was made yet
        if hasattr(self, "backend"):
            self.backend.stop_black_boxes()
        if self.created or not self.reuse:
            if self.created:
                logs = self.dir.path.parent / f"schedgate-kind-logs-{self.name}"
                self.host.export_logs(self.name, logs)
                log.info("kind: cluster %s failed to come up; node logs in %s", self.name, logs)
            self.host.delete_cluster(self.name, self.kubeconfig)
        self.dir.keep = False
        self.dir.close()

    def stop(self) -> None:
        with interrupts_deferred():
            self.backend.save_logs()
            if not self.req.keep:  # a reused cluster stays; the black boxes of this run do not
                self.backend.stop_black_boxes()
            if not (self.req.keep or self.reuse):
                self.host.delete_cluster(self.name, self.kubeconfig)
                self.dir.close()

    def _client(self) -> k8s.ApiClient:
        if not hasattr(self, "api"):
            self.api = new_client(self.kubeconfig)
        return self.api


def _internal_ip(core: Any, node: str) -> str:
    """A node's address on kind's Docker network (where the host reaches its API server directly)."""
    for a in core.read_node(node).status.addresses or []:
        if a.type == "InternalIP":
            return str(a.address)
    raise ComponentError(f"node {node} reports no InternalIP")

