"""The kind provider: the same definitions on real kubelets in Docker.

One control-plane node (kind's) plus one worker per node of the definition,
registered under the definition's node name (a kubeadm JoinConfiguration
patch), with its labels and taints. A kubelet reports its
machine's real CPUs and memory (faking them breaks its cpuset cgroups), so
every pod's cpu and memory requests are scaled by real/defined node size
(:func:`resource_scale`; the ratios every scoring strategy compares stay as the
definition has them). GPUs are advertised by patching node status, as a device
plugin would, and re-patched whenever a kubelet restart drops them.

The node image is built here (``scripts/kind-image``: no registry), kind runs
through ``kind/bin/docker`` where the engine refuses ``--privileged``, and the
scheduler under test runs in the cluster as a Deployment with its own
ServiceAccount, RBAC and lease (:class:`PodScheduler`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from schedgate.definitions import ClusterDefinition
from schedgate.errors import ComponentError, SchedgateError

KIND_API = "kind.x-k8s.io/v1alpha4"
PROJECT = Path(__file__).resolve().parent.parent
DEFINITION_ANNOTATION = "schedgate.io/definition"


def cluster_name(definition: ClusterDefinition) -> str:
    return f"schedgate-{definition.name}"[:40].rstrip("-")


def definition_digest(definition: ClusterDefinition, image_id: str) -> str:
    """What a reusable cluster must match: the nodes as defined, and the node image."""
    nodes = [[n.name, sorted(n.labels.items()), [t.to_api() for t in n.taints], sorted(n.capacity.items())]
             for n in definition.nodes()]
    return hashlib.sha256(json.dumps([nodes, image_id], sort_keys=True).encode()).hexdigest()[:16]


# What a kubelet may set on its own Node (k8s.io/kubelet's IsKubeletLabel): any label outside the
# kubernetes.io and k8s.io namespaces, these keys, and the kubelet.kubernetes.io and node.kubernetes.io
# namespaces. kind registers workers through their kubelet's --node-labels, and a kubelet given any
# other kubernetes.io label refuses to start, so those are set through the API instead.
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch", "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch", "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region"})
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def kubelet_may_set(key: str) -> bool:
    """Whether a kubelet accepts ``key`` in ``--node-labels``."""
    namespace = key.split("/", 1)[0] if "/" in key else ""
    if not any(namespace == ns or namespace.endswith("." + ns) for ns in ("kubernetes.io", "k8s.io")):
        return True
    return key in KUBELET_LABELS or any(namespace == ns or namespace.endswith("." + ns)
                                        for ns in KUBELET_LABEL_NAMESPACES)


def kind_config(definition: ClusterDefinition, name: str, image: str, *, cgroup_v1: bool) -> dict[str, Any]:
    """The kind cluster configuration for a definition: a worker per node, under the node's name.

    Labels a kubelet may not set on itself are left out; the cluster sets them through the API
    (``Cluster.apply_nodes``), as it resets every node to the definition.
    """
    nodes: list[dict[str, Any]] = [{"role": "control-plane", "image": image}]
    for spec in definition.nodes():
        registration: dict[str, Any] = {"name": spec.name}
        if spec.taints:
            registration["taints"] = [t.to_api() for t in spec.taints]
        nodes.append({
            "role": "worker",
            "image": image,
            "labels": {k: v for k, v in spec.labels.items() if k != "kubernetes.io/hostname" and kubelet_may_set(k)},
            "kubeadmConfigPatches": [yaml.safe_dump({"kind": "JoinConfiguration",
                                                     "nodeRegistration": registration})],
        })
    doc: dict[str, Any] = {"kind": "Cluster", "apiVersion": KIND_API, "name": name, "nodes": nodes}
    if cgroup_v1:
        # Kubernetes 1.35+ refuses cgroup v1 unless told otherwise.
        doc["kubeadmConfigPatches"] = [yaml.safe_dump({"kind": "KubeletConfiguration", "failCgroupV1": False})]
    return doc


def resource_scale(definition: ClusterDefinition, real: dict[str, float]) -> dict[str, float]:
    """Per resource, real/defined size of the largest node: what pod requests are multiplied by.

    ``real`` is the smallest allocatable (cpu in cores, memory in bytes) among the workers.
    """
    from schedgate.quantity import parse_quantity

    out: dict[str, float] = {}
    for r in ("cpu", "memory"):
        defined = max((parse_quantity(n.allocatable[r]) for n in definition.nodes() if r in n.allocatable), default=0)
        if defined and r in real and real[r] < defined:
            out[r] = real[r] / defined
    return out


def host_cgroup_v1() -> bool:
    return not Path("/sys/fs/cgroup/cgroup.controllers").exists()


# -- tools -----------------------------------------------------------------


@dataclass
class KindTools:
    """The kind CLI, kubectl and the docker wrapper, as ``scripts/node-binaries`` builds them."""

    project: Path = PROJECT
    bin_dir: Path | None = None
    env: dict[str, str] = field(default_factory=dict)

    def prepare(self) -> KindTools:
        docker_engine = self.project / "scripts" / "docker-engine"
        if not docker_engine.exists():
            raise SchedgateError(f"{docker_engine}: missing; the kind provider needs schedgate's scripts/")
        if shutil.which("docker") is None and not _runs([str(docker_engine)]):
            raise SchedgateError("--provider kind: no docker command and scripts/docker-engine could not install it")
        if not _runs(["docker", "info"]):
            raise SchedgateError("--provider kind: no Docker engine answers (start one with `make docker`)")
        raise_inotify_limits()
        out = subprocess.run([str(self.project / "scripts" / "node-binaries")], capture_output=True, text=True)
        if out.returncode != 0:
            raise SchedgateError(f"scripts/node-binaries failed: {_last(out.stderr)}")
        self.bin_dir = Path(out.stdout.strip().splitlines()[-1])
        path = f"{self.project / 'kind' / 'bin'}:{self.bin_dir}:{os.environ.get('PATH', '')}"
        self.env = {**os.environ, "PATH": path}
        return self

    def run(self, *argv: str, check: bool = True, timeout: float = 600, stdin: bytes | None = None,
            what: str = "") -> subprocess.CompletedProcess[str]:
        out = subprocess.run(list(argv), capture_output=True, text=stdin is None, env=self.env, timeout=timeout,
                             input=stdin)
        if check and out.returncode != 0:
            err = out.stderr if isinstance(out.stderr, str) else out.stderr.decode(errors="replace")
            raise ComponentError(f"{what or ' '.join(argv[:3])} failed: {_last(err)}")
        return out


# Every kind node's kubelet (cAdvisor) and systemd take inotify instances; with the
# usual default of 128 per user, nodes past the fourth or so fail with
# "inotify_init: too many open files" and never become Ready.
INOTIFY = {"max_user_instances": 1024, "max_user_watches": 524288}


def raise_inotify_limits() -> None:
    for key, want in INOTIFY.items():
        path = Path("/proc/sys/fs/inotify") / key
        try:
            have = int(path.read_text())
        except (OSError, ValueError):
            continue
        if have >= want:
            continue
        try:
            path.write_text(f"{want}\n")
        except OSError:
            raise SchedgateError(f"fs.inotify.{key} is {have}; kind clusters of several nodes need {want}: "
                                 f"sysctl -w fs.inotify.{key}={want}") from None


def _runs(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _last(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else "(no output)"


def node_image(project: Path = PROJECT) -> tuple[str, str]:
    """The node image for the pinned version (built if missing): (name, image ID).

    ``$SCHEDGATE_KIND_IMAGE`` names another image already in the engine (e.g. one built for a test).
    """
    override = os.environ.get("SCHEDGATE_KIND_IMAGE")
    if override:
        got = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", override], capture_output=True, text=True)
        if got.returncode != 0:
            raise SchedgateError(f"SCHEDGATE_KIND_IMAGE={override}: no such image in the Docker engine")
        return override, got.stdout.strip()
    out = subprocess.run([str(project / "scripts" / "kind-image")], capture_output=True, text=True)
    if out.returncode != 0:
        raise SchedgateError(f"scripts/kind-image failed: {_last(out.stderr)}")
    name = out.stdout.strip().splitlines()[-1]
    got = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", name], capture_output=True, text=True)
    if got.returncode != 0:
        raise SchedgateError(f"scripts/kind-image printed {name!r}, which the Docker engine does not have")
    return name, got.stdout.strip()


def kind_clusters(tools: KindTools) -> list[str]:
    out = tools.run("kind", "get", "clusters", check=False)
    return [c for c in (out.stdout or "").split() if c]


def node_containers(tools: KindTools, name: str) -> Iterator[tuple[str, str]]:
    """(container name, IPv4 address) of each node of cluster ``name``."""
    out = tools.run("docker", "ps", "-a", "--filter", f"label=io.x-k8s.kind.cluster={name}",
                    "--format", "{{.Names}}", what="docker ps")
    for c in out.stdout.split():
        ip = tools.run("docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", c,
                       what="docker inspect").stdout.split()
        yield c, ip[0] if ip else ""


def wait_until(check: Any, what: str, timeout: float) -> None:
    """Poll ``check()`` until it is true (for things with no watch: docker, kind); hard deadline."""
    import threading

    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not check():
        if time.monotonic() > deadline:
            raise ComponentError(f"{what}: not done after {timeout:.0f}s")
        pause.wait(0.5)


# -- the scheduler under test, in the cluster -------------------------------

SCHEDULER_NAMESPACE = "kube-system"
SECURE_PORT = 10259  # kind's own scheduler; ours run on the host network from FIRST_PORT up
FIRST_PORT = 10300


@dataclass
class PodScheduler:
    """A kube-scheduler Deployment (one replica) with the same face as a local scheduler process.

    ``start``/``stop`` scale it to one and zero replicas; ``kill`` deletes its
    pod with no grace period and scales to zero, as a crash that is not
    restarted; health and metrics go through the API server's pod proxy to
    the scheduler's secure port (``/healthz`` and ``/metrics`` are always
    allowed); a container restart the harness did not ask for is a death.
    """

    name: str
    config: Any  # SchedulerConfig
    effective: Any  # EffectiveConfig
    config_path: Path
    image: str
    api: Any
    node: str
    run_dir: Path
    port: int = SECURE_PORT
    expected_exit: bool = False
    _restarts: int = 0
    server: str | None = None  # reach the API server here (e.g. through a proxy) instead of in-cluster
    crash: Any = None  # (pod name) -> None: SIGKILL the pod's containers, as a crash (no lease release)

    @property
    def profiles(self) -> list[str]:
        return list(self.config.profile_names)

    @property
    def deployment(self) -> str:
        return f"schedgate-scheduler-{self.name}"[:63].rstrip("-")

    @property
    def returncode(self) -> int | None:
        return None if self.alive() else 1

    @property
    def proc(self) -> PodScheduler:
        return self

    @property
    def log(self) -> Path:
        return self.log_path or self.run_dir / f"{self.name}.log"

    def manifests(self) -> list[dict[str, Any]]:
        labels = {"app.kubernetes.io/name": "schedgate-scheduler", "schedgate.io/scheduler": self.name,
                  "app.kubernetes.io/managed-by": "schedgate"}
        cm: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": self.deployment, "namespace": SCHEDULER_NAMESPACE, "labels": labels},
              "data": {"config.yaml": yaml.safe_dump(self.effective.doc, sort_keys=False)}}
        if self.server:
            cm["data"]["kubeconfig"] = yaml.safe_dump(routed_kubeconfig(self.server), sort_keys=False)
        sa = {"apiVersion": "v1", "kind": "ServiceAccount",
              "metadata": {"name": self.deployment, "namespace": SCHEDULER_NAMESPACE, "labels": labels}}
        container = {
            "name": "kube-scheduler", "image": self.image, "imagePullPolicy": "Never",
            "command": ["/usr/local/bin/kube-scheduler", "--config=/etc/schedgate/config.yaml",
                        f"--secure-port={self.port}",
                        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", "--v=2"],
            "volumeMounts": [{"name": "config", "mountPath": "/etc/schedgate", "readOnly": True}],
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
        }
        dep = {"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": self.deployment, "namespace": SCHEDULER_NAMESPACE, "labels": labels},
               "spec": {"replicas": 1, "strategy": {"type": "Recreate"},
                        "selector": {"matchLabels": {"schedgate.io/scheduler": self.name}},
                        "template": {"metadata": {"labels": labels}, "spec": {
                            "serviceAccountName": self.deployment, "nodeName": self.node,
                            # On the node's network: it reaches schedgate's extender on the Docker host.
                            "hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet",
                            "priorityClassName": "system-cluster-critical",
                            "tolerations": [{"operator": "Exists"}],
                            "containers": [container],
                            "volumes": [{"name": "config", "configMap": {"name": self.deployment}}]}}}}
        return [cm, sa, dep]

    def subject(self) -> dict[str, str]:
        return {"kind": "ServiceAccount", "name": self.deployment, "namespace": SCHEDULER_NAMESPACE}

    # -- lifecycle ---------------------------------------------------------
    def _apps(self) -> Any:
        from kubernetes import client

        return client.AppsV1Api(self.api)

    def _core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self.api)

    def launch(self) -> None:
        """Create the ConfigMap, ServiceAccount and Deployment; a Deployment of the same name is replaced
        (a retired scheduler of an earlier test may have left one with another config and port)."""
        from kubernetes import utils

        if self._deployment_exists():
            self.remove()
        for obj in self.manifests():
            try:
                utils.create_from_dict(self.api, obj)  # type: ignore[no-untyped-call]
            except utils.FailToCreateError as e:
                if not all(getattr(x, "status", None) == 409 for x in e.api_exceptions):
                    raise
        self._scale(1)

    def _deployment_exists(self) -> bool:
        try:
            self._apps().read_namespaced_deployment(self.deployment, SCHEDULER_NAMESPACE)
        except Exception as e:  # noqa: BLE001
            if getattr(e, "status", None) == 404:
                return False
            raise
        return True

    def remove(self) -> None:
        """Delete the Deployment and its ConfigMap and wait until its pods are gone."""
        self.expected_exit = True
        self._apps().delete_namespaced_deployment(self.deployment, SCHEDULER_NAMESPACE,
                                                  propagation_policy="Foreground", grace_period_seconds=0)
        try:
            self._core().delete_namespaced_config_map(self.deployment, SCHEDULER_NAMESPACE)
        except Exception as e:  # noqa: BLE001
            if getattr(e, "status", None) != 404:
                raise
        for pod in self._pods():
            self._core().delete_namespaced_pod(pod["metadata"]["name"], SCHEDULER_NAMESPACE, grace_period_seconds=0)
        wait_until(lambda: not self._pods() and not self._deployment_exists(),
                   f"scheduler {self.name} removed", 120)

    def _scale(self, replicas: int) -> None:
        self._apps().patch_namespaced_deployment_scale(self.deployment, SCHEDULER_NAMESPACE,
                                                       {"spec": {"replicas": replicas}})

    def _pods(self) -> list[dict[str, Any]]:
        from schedgate.api import read_json

        return read_json(self._core().list_namespaced_pod, SCHEDULER_NAMESPACE,
                         label_selector=f"schedgate.io/scheduler={self.name}").get("items") or []

    def _running(self) -> dict[str, Any] | None:
        for p in self._pods():
            if (p.get("metadata") or {}).get("deletionTimestamp"):
                continue
            if (p.get("status") or {}).get("phase") == "Running":
                return p
        return None

    def wait_healthy(self, timeout: float = 120.0) -> float:
        t0 = time.monotonic()

        def healthy() -> bool:
            pod = self._running()
            if pod is None:
                return False
            try:
                return self._proxy(pod, "healthz").strip() == "ok"
            except Exception:  # noqa: BLE001 — not up yet
                return False

        wait_until(healthy, f"scheduler {self.name} (Deployment {self.deployment}) /healthz", timeout)
        self._restarts = self._restart_count()
        return time.monotonic() - t0

    def start(self, timeout: float = 120.0) -> float:
        self.expected_exit = False
        self.launch()
        return self.wait_healthy(timeout)

    def stop(self) -> None:
        self.expected_exit = True
        self.save_log()
        self._scale(0)
        wait_until(lambda: not self._pods(), f"scheduler {self.name} pods gone", 120)

    def kill(self) -> None:
        """A crash that is not restarted: SIGKILL first (a terminated scheduler would release its lease,
        a killed one leaves it to expire), then no replica and the pod gone."""
        self.expected_exit = True
        self.save_log()
        if self.crash is not None:
            for p in self._pods():
                self.crash(p["metadata"]["name"])
        self._scale(0)
        for p in self._pods():
            self._core().delete_namespaced_pod(p["metadata"]["name"], SCHEDULER_NAMESPACE, grace_period_seconds=0)
        wait_until(lambda: not self._pods(), f"scheduler {self.name} pods gone", 120)

    def _restart_count(self) -> int:
        pod = self._running()
        if pod is None:
            return 0
        return sum(int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("containerStatuses") or [])

    def alive(self) -> bool:
        pod = self._running()
        if pod is None:
            return False
        return all(c.get("ready") for c in (pod.get("status") or {}).get("containerStatuses") or [{}])

    def died(self) -> bool:
        if self.expected_exit:
            return False
        return not self.alive() or self._restart_count() > self._restarts

    def is_down(self) -> bool:
        return not self.alive()

    # -- observation --------------------------------------------------------
    def _proxy(self, pod: dict[str, Any], path: str) -> str:
        name = pod["metadata"]["name"]
        out = self._core().connect_get_namespaced_pod_proxy_with_path(
            f"https:{name}:{self.port}", SCHEDULER_NAMESPACE, path, _request_timeout=5)
        return str(out)

    def metrics_text(self) -> str:
        pod = self._running()
        if pod is None:
            raise ComponentError(f"scheduler {self.name}: no running pod to read /metrics from")
        return self._proxy(pod, "metrics")

    def metrics(self) -> Any:
        from schedgate.metrics import parse_metrics

        return parse_metrics(self.metrics_text())

    def wait_for_metrics(self, accept: Any, description: str, timeout: float = 15.0) -> Any:
        from schedgate.scheduler import poll_metrics

        return poll_metrics(self, accept, description, timeout)

    def logs(self) -> str:
        pod = self._running() or next(iter(self._pods()), None)
        if pod is None:
            return ""
        try:
            return str(self._core().read_namespaced_pod_log(pod["metadata"]["name"], SCHEDULER_NAMESPACE,
                                                             _request_timeout=10))
        except Exception as e:  # noqa: BLE001
            return f"(log not readable: {e})"

    def save_log(self) -> Path:
        """Write the container's log to the run folder (the last one read stays when the pod is gone)."""
        path = self.run_dir / f"{self.name}.log"
        text = self.logs()
        if text:
            path.write_text(text)
        return path

    @property
    def log_path(self) -> Path | None:
        return self.save_log()

    def log_tail(self, lines: int = 30) -> list[str]:
        return self.logs().splitlines()[-lines:]


@dataclass
class StaticScheduler(PodScheduler):
    """kind's own kube-scheduler (a static pod, profile default-scheduler): observed, never started or stopped."""

    pod_name: str = ""

    def _pods(self) -> list[dict[str, Any]]:
        from schedgate.api import read_json

        try:
            return [read_json(self._core().read_namespaced_pod, self.pod_name, SCHEDULER_NAMESPACE)]
        except Exception:  # noqa: BLE001 — gone or not yet there
            return []

    def launch(self) -> None:
        return None

    def start(self, timeout: float = 120.0) -> float:
        return 0.0

    def stop(self) -> None:
        raise ComponentError("kind's default scheduler is a static pod; schedgate does not stop it")

    kill = stop


# -- the provider ------------------------------------------------------------


def _kind_name(name: str) -> str:
    return "".join(c if c.isalnum() or c == "-" else "-" for c in name)


def _image_exists(image: str) -> bool:
    return _runs(["docker", "image", "inspect", image])


def preflight(req: Any, reuse: bool) -> str | None:
    """Cheap checks before anything is built, created or written: each problem is one line.

    Returns the cluster name when it is fixed (``--reuse-cluster``), else None (a per-run name).
    """
    if shutil.which("docker") is not None and not _runs(["docker", "info"]):
        raise SchedgateError("--provider kind: no Docker engine answers"
                             + (f" at DOCKER_HOST={os.environ['DOCKER_HOST']}" if os.environ.get("DOCKER_HOST") else "")
                             + " (start one with `make docker`)")
    override = os.environ.get("SCHEDGATE_KIND_IMAGE")
    if override and shutil.which("docker") is not None and not _image_exists(override):
        raise SchedgateError(f"SCHEDGATE_KIND_IMAGE={override}: no such image in the Docker engine "
                             "(unset it to build schedgate's node image: make kind-image)")
    if req.scheduler_image and not _image_exists(req.scheduler_image):
        raise SchedgateError(f"--scheduler-image {req.scheduler_image}: no such image in the Docker engine "
                             "(build it or `docker load` it first; nothing is pulled)")
    if not reuse:
        return None
    name = _kind_name(cluster_name(req.definition))
    # kind names its node containers <cluster>-control-plane, <cluster>-worker, <cluster>-worker2, ...
    # and labels them with the cluster; any other container under such a name blocks `kind create`.
    out = subprocess.run(["docker", "ps", "-a", "--filter", f"name=^/{name}-(control-plane|worker[0-9]*)$",
                          "--format", '{{.Names}}\t{{.Label "io.x-k8s.kind.cluster"}}'],
                         capture_output=True, text=True)
    for line in out.stdout.splitlines():
        container, _, owner = line.partition("\t")
        if owner != name:
            raise SchedgateError(f"--reuse-cluster: the name {name} is taken: Docker container {container} exists "
                                 f"and is not a node of kind cluster {name}; remove it (docker rm -f {container}) "
                                 "or rename the definition")
    return name


ROUTED_KUBECONFIG = "/etc/schedgate/kubeconfig"
_SA = "/var/run/secrets/kubernetes.io/serviceaccount"


def routed_kubeconfig(server: str) -> dict[str, Any]:
    """A kubeconfig with the pod's own service-account credentials that reaches the API server at
    ``server`` (e.g. a proxy on the Docker host); ``kubernetes`` is a name the serving certificate carries."""
    return {"apiVersion": "v1", "kind": "Config", "current-context": "routed",
            "clusters": [{"name": "routed", "cluster": {"server": server, "certificate-authority": f"{_SA}/ca.crt",
                                                        "tls-server-name": "kubernetes"}}],
            "users": [{"name": "sa", "user": {"tokenFile": f"{_SA}/token"}}],
            "contexts": [{"name": "routed", "context": {"cluster": "routed", "user": "sa"}}]}


def pause_image(tools: KindTools) -> str:
    """The sandbox image every node holds (kubeadm's pinned pause): what scenario pods run."""
    assert tools.bin_dir is not None
    out = tools.run(str(tools.bin_dir / "kubeadm"), "config", "images", "list", what="kubeadm config images list")
    for line in out.stdout.split():
        if "/pause:" in line:
            return line
    raise ComponentError("kubeadm config images list names no pause image")


def start_kind(req: Any, reaped: list[str], out: Any, reuse: bool = False) -> Any:
    """Create (or reuse) a kind cluster for ``req`` and start the scheduler under test in it."""
    from kubernetes import client as k8s
    from kubernetes import config as kube_config

    from schedgate.cluster import Cluster
    from schedgate.procs import RunDir
    from schedgate.providers import Started, write_info
    from schedgate.rbac import grant
    from schedgate.toolchain import ensure_binaries

    t0 = time.monotonic()

    def say(msg: str) -> None:
        if out is not None:
            print(f"schedgate: {msg} ({time.monotonic() - t0:.1f}s)", file=out, flush=True)

    say("kind: checking Docker and building node tools if needed")
    name = preflight(req, reuse)
    tools = KindTools().prepare()
    image, image_id = node_image()
    say(f"kind: node image {image} ({image_id[:19]})")
    bins = ensure_binaries(out)
    timings: dict[str, float] = {}
    run = RunDir.create(keep=req.keep or reuse)
    digest = definition_digest(req.definition, image_id)
    name = name or _kind_name(f"{cluster_name(req.definition)}-{run.path.name[-6:].lower()}")
    kubeconfig = run.path / "kubeconfig"
    (run.path / "kind-cluster").write_text(f"{name}\n{tools.env['PATH']}\n{kubeconfig}\n")
    created = False
    try:
        if reuse and name in kind_clusters(tools):
            tools.run("kind", "export", "kubeconfig", "--name", name, "--kubeconfig", str(kubeconfig))
            api = kube_config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
            core = k8s.CoreV1Api(api)
            cp = core.read_node(f"{name}-control-plane")
            have = (getattr(cp.metadata, "annotations", None) or {}).get(DEFINITION_ANNOTATION)
            if have is None:
                raise SchedgateError(f"--reuse-cluster: a kind cluster named {name} exists and schedgate did not "
                                     f"make it; delete it (kind delete cluster --name {name}) or rename the "
                                     "definition")
            if have != digest:
                say(f"kind: cluster {name} was made for another definition or image ({have} != {digest}); "
                    "recreating it")
                delete_cluster(tools, name, kubeconfig)
            else:
                say(f"kind: reusing cluster {name}")
        if name not in kind_clusters(tools):
            cfg = kind_config(req.definition, name, image, cgroup_v1=host_cgroup_v1())
            cfg_path = run.path / "kind-config.yaml"
            cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
            say(f"kind: creating cluster {name} ({len(cfg['nodes'])} nodes)")
            created = True
            _create_with_pytest_kubernetes(tools, cfg_path, kubeconfig)
            timings["kind create"] = time.monotonic() - t0
        api = kube_config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
        core = k8s.CoreV1Api(api)
        _wait_nodes_ready(core, [n.name for n in req.definition.nodes()], 600)
        # kind's control plane is not a node of the definition: cordoned instead of tainted, it shows in
        # scheduling messages as the sync node does ("were unschedulable"), never as an untolerated taint.
        core.patch_node(f"{name}-control-plane", {"metadata": {"annotations": {DEFINITION_ANNOTATION: digest}},
                                                  "spec": {"unschedulable": True, "taints": None}})
        say("kind: every node Ready")
        timings["nodes ready"] = time.monotonic() - t0
        # The scheduler under test: an image of the binary, loaded into the nodes, run as a Deployment.
        sched_image = req.scheduler_image or _scheduler_image(tools, Path(req.scheduler_binary or bins.kube_scheduler))
        _load_image(tools, name, sched_image)
        node = f"{name}-control-plane"
        schedulers: dict[str, PodScheduler] = {}
        default = StaticScheduler(name="kube-scheduler", config=_default_config(), effective=None,
                                  config_path=run.path / "kube-scheduler.config.yaml", image="", api=api, node=node,
                                  run_dir=run.path / "logs", pod_name=f"kube-scheduler-{node}")
        schedulers["default-scheduler"] = default

        ports: list[int] = []

        def launch(config: Any, binary: Path | None, server: str | None = None) -> PodScheduler:
            img = sched_image if binary is None else _scheduler_image(tools, Path(binary))
            if binary is not None:
                _load_image(tools, name, img)
            lease = config.lease_name
            effective = config.effective(kubeconfig=ROUTED_KUBECONFIG if server else "", lease=lease)
            path = effective.write(run.path / f"{lease}.config.yaml")
            s = PodScheduler(name=lease, config=config, effective=effective, config_path=path, image=img, api=api,
                             node=node, run_dir=run.path / "logs", port=FIRST_PORT + len(ports), server=server)
            s.crash = lambda pod: kill_pod_containers(tools, node, SCHEDULER_NAMESPACE, pod)
            ports.append(s.port)
            grant(api, f"sa-{lease}", s.subject(), lease, config.shared_pools)
            s.start()
            for p in config.profile_names:
                schedulers[p] = s
            return s

        def retire(s: Any) -> None:
            s.save_log()
            s.remove()
            for p in s.profiles:
                if schedulers.get(p) is s:
                    del schedulers[p]

        say("kind: starting the scheduler under test in the cluster")
        launch(req.scheduler_config, None)
        timings["scheduler"] = time.monotonic() - t0
        cluster = Cluster(provider="kind", definition=req.definition, kubeconfig=kubeconfig, api=api,
                          kubernetes_version=bins.kubernetes_version, schedulers=schedulers,
                          components=lambda: [s for s in {id(x): x for x in schedulers.values()}.values()
                                              if not isinstance(s, StaticScheduler)],
                          launcher=launch, retirer=retire, api_only_nodes=False, timings=timings,
                          pod_image=pause_image(tools), extender_host=docker_gateway(tools),
                          extra_nodes=(f"{name}-control-plane",),
                          api_endpoint=(_internal_ip(core, node), 6443))
        containers = node_container_map(tools, name, core)
        cluster.node_restarter = lambda node: restart_kubelet(tools, containers[node])
        cluster.apiserver_restarter = lambda: restart_apiserver(tools, containers[f"{name}-control-plane"], api)
        cluster.export_logs = lambda dest: tools.run("kind", "export", "logs", str(dest), "--name", name,
                                                     check=False, timeout=300)
        cluster.resource_scale = resource_scale(req.definition, _smallest_worker(core, req.definition))
        if cluster.resource_scale:
            say("kind: pod requests scaled to the real nodes: " + ", ".join(
                f"{r} x{f:.4f}" for r, f in cluster.resource_scale.items()))
        cluster.apply_nodes()
        timings["first-sync"] = cluster.sync_schedulers(timeout=60)
        timings["total"] = time.monotonic() - t0
        say(f"kind: cluster {name} ready")
        write_info(run.path, req, cluster)
    except BaseException:
        if created or not reuse:
            if created:
                logs = run.path.parent / f"schedgate-kind-logs-{name}"
                tools.run("kind", "export", "logs", str(logs), "--name", name, check=False, timeout=300)
                say(f"kind: cluster {name} failed to come up; node logs in {logs}")
            delete_cluster(tools, name, kubeconfig)
        run.keep = False
        run.close()
        raise

    def stop() -> None:
        for s in {id(x): x for x in schedulers.values()}.values():
            if not isinstance(s, StaticScheduler):
                s.save_log()
        if not (req.keep or reuse):
            delete_cluster(tools, name, kubeconfig)
            run.close()

    return Started(cluster=cluster, stop=stop, run_dir=run.path, reaped=reaped)


def _internal_ip(core: Any, node: str) -> str:
    """A node's address on kind's Docker network (where the host reaches its API server directly)."""
    for a in core.read_node(node).status.addresses or []:
        if a.type == "InternalIP":
            return str(a.address)
    raise ComponentError(f"node {node} reports no InternalIP")


def _smallest_worker(core: Any, definition: ClusterDefinition) -> dict[str, float]:
    from schedgate.quantity import parse_quantity

    names = {n.name for n in definition.nodes()}
    real: dict[str, float] = {}
    for n in core.list_node().items:
        if n.metadata.name not in names:
            continue
        for r in ("cpu", "memory"):
            v = parse_quantity((n.status.allocatable or {}).get(r, "0"))
            real[r] = min(real.get(r, v), v)
    return real


def docker_gateway(tools: KindTools) -> str:
    """The Docker host's IPv4 address on kind's network: where node-network pods reach schedgate's servers."""
    out = tools.run("docker", "network", "inspect", "kind", "-f",
                    "{{range .IPAM.Config}}{{.Gateway}} {{end}}", what="docker network inspect kind")
    for gw in out.stdout.split():
        if "." in gw:
            return gw
    raise ComponentError(f"kind's Docker network has no IPv4 gateway ({out.stdout.strip()!r})")


def _default_config() -> Any:
    from schedgate.schedconfig import default_scheduler_config

    return default_scheduler_config()


def _create_with_pytest_kubernetes(tools: KindTools, cfg_path: Path, kubeconfig: Path) -> None:
    """``kind create cluster`` through pytest-kubernetes (its KindManager), with our PATH and kubeconfig.

    Pitfalls covered here: it shells out through ``os.environ`` (so our kind,
    kubectl and docker wrapper must be first on PATH while it runs), passes
    neither ``--name`` nor ``--image`` with a config file (both are in ours),
    and its delete does not pass ``--kubeconfig`` (we delete ourselves).
    """
    from pytest_kubernetes.options import ClusterOptions
    from pytest_kubernetes.providers import KindManagerBase

    saved = os.environ.get("PATH", "")
    os.environ["PATH"] = tools.env["PATH"]
    try:
        mgr = KindManagerBase(provider_config=str(cfg_path), kubeconfig=kubeconfig)
        mgr.create(ClusterOptions(kubeconfig_path=kubeconfig, provider_config=cfg_path, cluster_timeout=900),
                   timeout=300)
    except subprocess.CalledProcessError as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else str(e.stderr)
        raise ComponentError(f"kind create cluster ({cfg_path}) failed: {kind_error(err)}") from None
    except RuntimeError as e:
        raise ComponentError(f"kind create cluster ({cfg_path}): {e}") from None
    finally:
        os.environ["PATH"] = saved


def kind_error(text: str) -> str:
    """kind's error in one line: its ``ERROR:`` line (a quoted command shortened) and the command's own output."""
    import re

    lines = [x.strip() for x in text.splitlines() if x.strip()]
    error = next((x for x in lines if x.startswith("ERROR:")), None)
    if error is None:
        return _last(text)
    error = re.sub(r'command "([^"]{0,40})[^"]*"', lambda m: f'command "{m.group(1)}..."', error)
    output = next((x for x in lines if x.startswith("Command Output:")), None)
    return f"{error}; {output}" if output else error


def delete_cluster(tools: KindTools, name: str, kubeconfig: Path) -> None:
    tools.run("kind", "delete", "cluster", "--name", name, "--kubeconfig", str(kubeconfig), check=False)


def _wait_nodes_ready(core: Any, names: list[str], timeout: float) -> None:
    from schedgate.api import read_json

    def ready() -> bool:
        items = read_json(core.list_node).get("items") or []
        ok = {n["metadata"]["name"] for n in items if any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in (n.get("status") or {}).get("conditions")
            or [])}
        return all(n in ok for n in names)

    wait_until(ready, f"nodes {', '.join(names)} Ready", timeout)


def _scheduler_image(tools: KindTools, binary: Path) -> str:
    h = hashlib.sha256()
    with open(binary, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    tag = f"schedgate/kube-scheduler:{h.hexdigest()[:12]}"
    if subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode != 0:
        tools.run(str(PROJECT / "scripts" / "binary-image"), str(binary), tag, "/usr/local/bin/kube-scheduler",
                  what=f"scripts/binary-image {binary}")
    return tag


def _load_image(tools: KindTools, name: str, image: str) -> None:
    """``docker save`` + ``kind load image-archive``: works whatever the engine's image store."""
    archive = Path(os.environ.get("TMPDIR", "/tmp")) / f"schedgate-image-{os.getpid()}.tar"
    try:
        tools.run("docker", "save", "-o", str(archive), image, what=f"docker save {image}")
        tools.run("kind", "load", "image-archive", str(archive), "--name", name,
                  what=f"kind load image-archive {image}")
    finally:
        archive.unlink(missing_ok=True)


def node_container_map(tools: KindTools, name: str, core: Any) -> dict[str, str]:
    """Node name -> kind container, matched by the node's InternalIP (node names are the definition's)."""
    by_ip = {ip: c for c, ip in node_containers(tools, name)}
    out = {}
    for n in core.list_node().items:
        ip = next((a.address for a in n.status.addresses or [] if a.type == "InternalIP"), "")
        if ip in by_ip:
            out[n.metadata.name] = by_ip[ip]
    return out


def crictl(tools: KindTools, container: str, *argv: str, check: bool = True) -> list[str]:
    """``crictl`` on node ``container``: its output's words (container or sandbox IDs); [] if it failed
    unchecked."""
    out = tools.run("docker", "exec", container, "crictl", *argv, what=f"crictl {argv[0]} on {container}",
                    timeout=120, check=check)
    return out.stdout.split() if out.returncode == 0 else []


def kill_pod_containers(tools: KindTools, container: str, namespace: str, pod: str) -> None:
    """SIGKILL every container of a pod on node ``container`` (``crictl stop --timeout 0``)."""
    for sandbox in crictl(tools, container, "pods", "-q", "--name", pod, "--namespace", namespace):
        ids = crictl(tools, container, "ps", "-q", "--pod", sandbox)
        if ids:
            crictl(tools, container, "stop", "--timeout", "0", *ids)


def restart_kubelet(tools: KindTools, container: str) -> None:
    """Restart a node's kubelet: it re-registers a deleted Node object and re-reads its capacity."""
    tools.run("docker", "exec", container, "systemctl", "restart", "kubelet", what=f"restart kubelet on {container}")


def restart_apiserver(tools: KindTools, container: str, api: Any) -> float:
    """Stop the control plane's kube-apiserver container; its kubelet starts the static pod's container again.

    Returns the seconds from the stop until a new container runs and ``/readyz`` answers through the
    host-mapped port.
    """

    def running() -> list[str]:
        return crictl(tools, container, "ps", "-q", "--name", "kube-apiserver", "--state", "running", check=False)

    before = running()
    if not before:
        raise ComponentError(f"no running kube-apiserver container on {container} (crictl ps)")
    t0 = time.monotonic()
    crictl(tools, container, "stop", *before)

    def ready() -> bool:
        now = running()
        if not now or set(now) & set(before):
            return False
        try:
            r = api.call_api("GET", f"{api.configuration.host}/readyz", _request_timeout=2)
            r.read()
        except Exception:  # noqa: BLE001 — not serving yet
            return False
        return bool(r.status == 200 and r.data.strip() == b"ok")

    wait_until(ready, f"kube-apiserver on {container} back after crictl stop", 180)
    return time.monotonic() - t0
