"""The kind provider: the same definitions in a kubeadm control plane, as users run one.

kind's one control-plane node runs the API server, etcd, the controller manager and the default
scheduler; the scheduler under test runs in the cluster as a static pod (:mod:`.scheduler`). The
definition's nodes are kwok nodes made in that cluster (:mod:`.kwok`): one control plane serves file
after file, its nodes replaced as the local provider replaces its own. A definition with ``nodeAgent:
{kind: kubelet}`` gets real kubelets instead, a kind worker per node under the node's name, with its labels
and taints (:mod:`.config`): a kubelet reports its machine's real CPUs and memory, so pod cpu and memory
requests are scaled by real/defined node size; GPUs are advertised by patching node status, as a device
plugin would; DRA devices by schedgate's driver on each node (:mod:`.dra`).

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

import yaml
from kubernetes import client as k8s

from schedgate.cluster import ApiOnlyNodes, Cluster, KubeletNodes
from schedgate.cluster.audit import policy_text
from schedgate.errors import ComponentError, SchedgateError
from schedgate.kube.api import create_or_keep, ignore_not_found, read_json
from schedgate.kube.poll import poll_until
from schedgate.providers.base import (
    ClusterRequest,
    Started,
    create_in_steps,
    first_sync,
    made,
    resource_scale,
    smallest_allocatable,
    write_info,
)
from schedgate.providers.kind.backend import KIND, KindBackend
from schedgate.providers.kind.config import (
    DEFINITION_RECORD,
    audit_patches,
    cluster_name,
    control_plane_patches,
    definition_digest,
    host_cgroup_v1,
    kind_config,
    kind_name,
    too_large,
)
from schedgate.providers.kind.context import KindContext
from schedgate.providers.kind.dra import DriverSlices, deploy_driver
from schedgate.providers.kind.host import Host
from schedgate.providers.kind.kwok import (
    controller_patches,
    grace_patches,
    remove_daemonsets,
    scale_down_addons,
    start_kwok,
)
from schedgate.providers.kind.replane import reconfigure
from schedgate.providers.kind.scheduler import StaticScheduler
from schedgate.runtime.interrupts import interrupts_deferred
from schedgate.runtime.kwok import ensure_kwok
from schedgate.runtime.pins import cache_root
from schedgate.runtime.procs import RunDir
from schedgate.runtime.toolchain import ensure_binaries
from schedgate.spec.agent import kubelet_nodes
from schedgate.spec.cluster import ClusterDefinition
from schedgate.spec.devices import counters_only_local
from schedgate.spec.schedconfig import default_scheduler_config

log = logging.getLogger("schedgate")


class KindProvider:
    name = "kind"
    abilities = KIND

    def cannot_run(self, definition: ClusterDefinition) -> str | None:
        return too_large(definition) or (counters_only_local(definition, "kind's kubelet workers")
                                         if kubelet_nodes(definition) else None)

    def preflight(self, req: ClusterRequest) -> None:
        """Each problem one line, before anything is built, created or written."""
        big = too_large(req.definition)
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
        return _create(req, reaped)


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


def _create(req: ClusterRequest, reaped: list[str]) -> Started:
    c = KindContext(req, reaped)
    create_in_steps([
        ("kind: Docker and the node tools", lambda c: c.host.prepare()),
        ("kind: node image", node_image),
        ("pinned binaries", binaries),
        ("run folder", run_folder),
        ("kind: a reused cluster checked", check_reused),
        ("kind: create cluster", create_cluster),
        ("kind: every node Ready", nodes_ready),
        ("kind: the scheduler under test in the cluster", start_scheduler),
        ("kind: the DRA driver on every node", start_dra_driver),
        ("kind: nodes as defined", nodes_as_defined),
        ("first sync of every scheduler", lambda c: first_sync(made(c.cluster, "the cluster"), c.req, 60)),
        ("run info", lambda c: write_info(made(c.dir, "the run folder").path, c.req, made(c.cluster, "the cluster"))),
    ], c, rollback, c.timings)
    log.info("kind: cluster %s ready", c.name)
    reconfigurable = not (c.kubelets or c.req.reuse or c.req.keep)  # a kubelet keeps the gates it started with
    return Started(cluster=made(c.cluster, "the cluster"), stop=lambda: stop(c), run_dir=made(c.dir, "").path,
                   reaped=reaped, reconfigure=(lambda d: reconfigure(c, d)) if reconfigurable else None)


# -- steps -------------------------------------------------------------------
def node_image(c: KindContext) -> None:
    c.image, image_id = c.host.node_image()
    c.digest = definition_digest(c.req.definition, image_id)
    log.info("kind: node image %s (%s)", c.image, image_id[:19])


def binaries(c: KindContext) -> None:
    c.bins = ensure_binaries()
    c.kwok = None if c.kubelets else ensure_kwok()
    gates = c.req.definition.gates
    if gates:  # before the cluster: a gate or API version the pinned version has not is one line
        gates.check(c.bins.feature_gates() if gates.feature_gates else {}, c.bins.kubernetes_version)


def run_folder(c: KindContext) -> None:
    c.dir = RunDir.create(keep=c.req.keep or c.req.reuse)
    base = kind_name(cluster_name(c.req.definition) + (f"-{c.req.worker}" if c.req.worker else ""))
    c.name = base if c.req.reuse else kind_name(f"{base}-{c.dir.path.name[-6:].lower()}")
    # What the reaper needs to delete the cluster after a crash: its name (it removes its containers with its
    # own docker; nothing else of a run folder is taken).
    (c.dir.path / "kind-cluster").write_text(f"{c.name}\n")


def check_reused(c: KindContext) -> None:
    name = c.cluster_name
    if not (c.req.reuse and name in c.host.clusters()):
        return
    c.host.run("kind", "export", "kubeconfig", "--name", name, "--kubeconfig", str(c.kubeconfig))
    core = k8s.CoreV1Api(c.client())
    record = ignore_not_found(read_json, core.read_namespaced_config_map, DEFINITION_RECORD, "kube-system") or {}
    have = (record.get("data") or {}).get("digest")
    if have is None:
        raise SchedgateError(f"--reuse-cluster: a kind cluster named {name} exists and schedgate did not "
                             f"make it; delete it (kind delete cluster --name {name}) or rename the "
                             "definition")
    if have != c.digest:
        log.info("kind: cluster %s was made for another definition or image (%s != %s); recreating it",
                 name, have, c.digest)
        c.host.delete_cluster(name, c.kubeconfig)
    else:
        log.info("kind: reusing cluster %s", name)


def create_cluster(c: KindContext) -> None:
    name = c.cluster_name
    if name in c.host.clusters():
        return
    d = c.req.definition
    policy = cache_root() / "kind" / "audit-policy.yaml"  # mounted into the control plane for as long as it lives
    policy.parent.mkdir(parents=True, exist_ok=True)
    if not policy.exists() or policy.read_text() != policy_text():
        policy.write_text(policy_text())
    cfg = kind_config(d, name, made(c.image, "the node image"), cgroup_v1=host_cgroup_v1(),
                      kubeadm_json_patches=control_plane_patches(d) + grace_patches(d.agent) + audit_patches()
                      + controller_patches(d),
                      audit_policy=policy)
    path = made(c.dir, "the run folder").path / "kind-config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    log.info("kind: creating cluster %s (%d nodes)", name, len(cfg["nodes"]))
    c.created = True
    c.host.create_cluster(path, c.kubeconfig)


def nodes_ready(c: KindContext) -> None:
    """kind's own: its kubelet workers Ready (kwok nodes are made later), the definition and image recorded (a
    reused cluster is checked against it), kind's add-ons kept off the definition's nodes; kwok started."""
    core = k8s.CoreV1Api(c.client())
    names = [n.name for n in c.req.definition.nodes() if c.kubelets]

    def ready() -> bool:
        items = read_json(core.list_node).get("items") or []
        ok = {n["metadata"]["name"] for n in items if any(
            x.get("type") == "Ready" and x.get("status") == "True"
            for x in (n.get("status") or {}).get("conditions") or [])}
        return all(n in ok for n in names)

    if names:
        poll_until(ready, f"nodes {', '.join(names)} Ready", 600, error=ComponentError)
    create_or_keep(core.create_namespaced_config_map, "kube-system", {"metadata": {
        "name": DEFINITION_RECORD, "labels": {"app.kubernetes.io/managed-by": "schedgate"}},
        "data": {"digest": c.digest}})
    scale_down_addons(c.client())
    if not c.kubelets:  # kwok on every node; the cluster's own DaemonSets would run on kwok nodes only
        remove_daemonsets(c.client())
        c.agent = start_kwok(made(c.dir, "the run folder"), made(c.kwok, "kwok"), c.kubeconfig, c.req.definition.agent)


def start_scheduler(c: KindContext) -> None:
    req, api, bins, run = c.req, c.client(), made(c.bins, "the pinned binaries"), made(c.dir, "the run folder")
    core = k8s.CoreV1Api(api)
    image = req.scheduler_image or c.host.scheduler_image(Path(req.scheduler_binary or bins.kube_scheduler))
    c.host.load_image(c.cluster_name, image)
    control_plane = f"{c.cluster_name}-control-plane"
    address = dict(c.host.node_containers(c.cluster_name)).get(control_plane)
    if not address:
        raise ComponentError(f"kind: container {control_plane} has no address on kind's network")
    containers = {**c.host.node_container_map(c.cluster_name, core), control_plane: control_plane}
    c.backend = KindBackend(
        host=c.host, cluster=c.cluster_name, api=api, run_dir=run.path, kubeconfig=c.kubeconfig,
        scheduler_image=image, pod_image=c.host.pause_image(), extender_host=c.host.gateway(),
        api_endpoint=(address, 6443), containers=containers,
        nodes=KubeletNodes(core, "kind", recreate=lambda node: c.host.restart_kubelet(containers[node]))
        if c.kubelets else ApiOnlyNodes(core, agent=True), agent=c.agent,
        run=run, programs=bins.programs, scheduler_args=tuple(req.definition.gates.feature_gates_flag()))
    default = StaticScheduler(name="kube-scheduler", config=default_scheduler_config(), effective=None,
                              config_path=run.path / "kube-scheduler.config.yaml", image="",
                              node=c.backend.plane(), run_dir=run.path / "logs")
    default.wait_healthy()  # kubeadm's, on the node's address (control_plane_patches)
    c.backend.schedulers["default-scheduler"] = default
    c.backend.start_scheduler(req.scheduler_config, None, None, len(req.definition.nodes()))


def start_dra_driver(c: KindContext) -> None:
    """Only for a definition with devices: a cluster without them runs exactly what it did."""
    d = c.req.definition
    if not c.kubelets or not (d.device_classes or any(n.devices for n in d.nodes())):
        return  # kwok nodes' devices are published by schedgate, as on local
    if c.host.bin_dir is None:
        raise ComponentError("kind: scripts/node-binaries gave no folder for the DRA plugin")
    image = c.host.binary_image(c.host.bin_dir / "schedgate-dra-plugin", "schedgate-dra-plugin")
    c.host.load_image(c.cluster_name, image)
    deploy_driver(c.client(), image, [n.name for n in d.nodes()])
    made(c.backend, "the scheduler under test").device_publisher = DriverSlices(c.client())
    log.info("kind: DRA driver %s running on %d node(s)", image, len(d.nodes()))


def nodes_as_defined(c: KindContext) -> None:
    core = k8s.CoreV1Api(c.client())
    backend = made(c.backend, "the scheduler under test")
    defined = {n.name for n in c.req.definition.nodes()}
    if c.kubelets:  # kwok nodes report what the definition says
        backend.resource_scale = resource_scale(c.req.definition, smallest_allocatable(
            n for n in read_json(core.list_node).get("items") or [] if n["metadata"]["name"] in defined))
    if backend.resource_scale:
        log.info("kind: pod requests scaled to the real nodes: %s",
                 ", ".join(f"{r} x{f:.4f}" for r, f in backend.resource_scale.items()))
    c.cluster = Cluster(definition=c.req.definition, kubeconfig=c.kubeconfig, api=c.client(),
                        kubernetes_version=made(c.bins, "the pinned binaries").kubernetes_version, backend=backend,
                        timings=c.timings)
    c.cluster.nodes.reset()


# -- the one rollback, and the end ----------------------------------------------
def rollback(c: KindContext) -> None:
    """What the context says was made, taken down: a new cluster's node logs exported, the cluster deleted
    (a reused one this run did not make stays), the run folder removed. Under :func:`interrupts_deferred`: a
    second Ctrl-C while kind deletes the nodes would leave some."""
    with interrupts_deferred():
        if c.dir is None:
            return  # nothing was made yet
        if c.backend is not None:
            c.backend.stop_black_boxes()
        if c.name is not None and (c.created or not c.req.reuse):
            if c.created:
                logs = c.dir.path.parent / f"schedgate-kind-logs-{c.name}"
                c.host.export_logs(c.name, logs)
                log.info("kind: cluster %s failed to come up; node logs in %s", c.name, logs)
            c.host.delete_cluster(c.name, c.kubeconfig)
        c.dir.keep = False
        c.dir.close()


def stop(c: KindContext) -> None:
    backend, run = made(c.backend, "the scheduler under test"), made(c.dir, "the run folder")
    with interrupts_deferred():
        backend.save_logs()
        if not c.req.keep:  # a reused cluster stays; the black boxes of this run do not
            backend.stop_black_boxes()
        if not (c.req.keep or c.req.reuse):
            c.host.delete_cluster(c.cluster_name, c.kubeconfig)
            run.close()
