"""The Docker host of a kind cluster: one runner for every docker, kind, kubectl and crictl call.

:class:`Host` runs each command as an argument list with its own environment
(schedgate's kind, kubectl and docker wrapper first on ``PATH``), never through
a shell and never by changing this process's environment. The kind lifecycle
itself is pytest-kubernetes' (:class:`KindManager`), run through the same
runner.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient
from pytest_kubernetes.options import ClusterOptions
from pytest_kubernetes.providers import KindManagerBase

from schedgate.errors import ComponentError, SchedgateError
from schedgate.kube.poll import poll_until
from schedgate.providers.kind.config import kind_error, last_line
from schedgate.runtime.commands import run_group
from schedgate.spec.shipped import shipped

# Every kind node's kubelet (cAdvisor) and systemd take inotify instances; with the
# usual default of 128 per user, nodes past the fourth or so fail with
# "inotify_init: too many open files" and never become Ready.
INOTIFY = {"max_user_instances": 1024, "max_user_watches": 524288}


@dataclass
class Host:
    """The machine's Docker engine and schedgate's node tools (``scripts/node-binaries`` builds them)."""

    # PYTHON: the interpreter schedgate runs in, for scripts that ask it for the pinned version's ldflags.
    env: dict[str, str] = field(default_factory=lambda: {"PYTHON": sys.executable, **os.environ})
    bin_dir: Path | None = None

    # -- the one runner --------------------------------------------------------
    def run(self, *argv: str, check: bool = True, timeout: float = 600, stdin: bytes | None = None,
            what: str = "") -> subprocess.CompletedProcess[str]:
        """Run ``argv``; with ``check`` a failure raises ComponentError with the command's last error line."""
        try:
            out = run_group(list(argv), self.env, timeout, stdin)
        except FileNotFoundError:
            raise ComponentError(f"{what or argv[0]}: {argv[0]} not found") from None
        except subprocess.TimeoutExpired:
            raise ComponentError(f"{what or ' '.join(argv[:3])}: no answer after {timeout:.0f}s") from None
        done = subprocess.CompletedProcess(out.args, out.returncode, out.stdout.decode(errors="replace"),
                                           out.stderr.decode(errors="replace"))
        if check and done.returncode != 0:
            raise ComponentError(f"{what or ' '.join(argv[:3])} failed: {last_line(done.stderr)}")
        return done

    def ok(self, *argv: str, timeout: float = 120) -> bool:
        """Whether ``argv`` runs and exits 0."""
        try:
            return self.run(*argv, check=False, timeout=timeout).returncode == 0
        except ComponentError:
            return False

    def tool(self, name: str) -> str:
        """The full path of a node tool (kind, kubectl, kubeadm) as this host's PATH finds it."""
        found = shutil.which(name, path=self.env.get("PATH"))
        if found is None:
            raise ComponentError(f"{name}: not found on schedgate's PATH ({self.env.get('PATH')})")
        return found

    # -- setting up ------------------------------------------------------------
    def prepare(self) -> Host:
        """Docker answering, inotify limits raised, node tools built and first on this host's PATH."""
        docker_engine = shipped("scripts/docker-engine")
        if not docker_engine.exists():
            raise SchedgateError(f"{docker_engine}: missing; the kind provider needs schedgate's scripts/")
        if shutil.which("docker", path=self.env.get("PATH")) is None and not self.ok(str(docker_engine)):
            raise SchedgateError("--provider kind: no docker command and scripts/docker-engine could not install it")
        if not self.ok("docker", "info"):
            raise SchedgateError("--provider kind: no Docker engine answers (start one with `make docker`)")
        raise_inotify_limits()
        out = self.run(str(shipped("scripts/node-binaries")), check=False, timeout=3600)
        if out.returncode != 0:
            raise SchedgateError(f"scripts/node-binaries failed: {last_line(out.stderr)}")
        self.bin_dir = Path(out.stdout.strip().splitlines()[-1])
        self.env["PATH"] = f"{shipped('kind/bin')}:{self.bin_dir}:{self.env.get('PATH', '')}"
        return self

    # -- images ------------------------------------------------------------------
    def image_id(self, image: str) -> str | None:
        out = self.run("docker", "image", "inspect", "-f", "{{.Id}}", image, check=False)
        return out.stdout.strip() if out.returncode == 0 else None

    def node_image(self) -> tuple[str, str]:
        """The node image for the pinned version (built if missing): (name, image ID).

        ``$SCHEDGATE_KIND_IMAGE`` names another image already in the engine (e.g. one built for a test).
        """
        override = os.environ.get("SCHEDGATE_KIND_IMAGE")
        if override:
            got = self.image_id(override)
            if got is None:
                raise SchedgateError(f"SCHEDGATE_KIND_IMAGE={override}: no such image in the Docker engine")
            return override, got
        out = self.run(str(shipped("scripts/kind-image")), check=False, timeout=3600)
        if out.returncode != 0:
            raise SchedgateError(f"scripts/kind-image failed: {last_line(out.stderr)}")
        name = out.stdout.strip().splitlines()[-1]
        got = self.image_id(name)
        if got is None:
            raise SchedgateError(f"scripts/kind-image printed {name!r}, which the Docker engine does not have")
        return name, got

    def scheduler_image(self, binary: Path) -> str:
        """An image holding ``binary`` as /usr/local/bin/kube-scheduler, tagged by its content."""
        return self.binary_image(binary, "kube-scheduler")

    def binary_image(self, binary: Path, name: str) -> str:
        """``schedgate/<name>:<content hash>`` holding ``binary`` as /usr/local/bin/<name> (made if missing)."""
        h = hashlib.sha256()
        with open(binary, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        tag = f"schedgate/{name}:{h.hexdigest()[:12]}"
        if self.image_id(tag) is None:
            self.run(str(shipped("scripts/binary-image")), str(binary), tag, f"/usr/local/bin/{name}",
                     what=f"scripts/binary-image {binary}")
        return tag

    def load_image(self, cluster: str, image: str) -> None:
        """``docker save`` + ``kind load image-archive``: works whatever the engine's image store."""
        archive = Path(os.environ.get("TMPDIR", "/tmp")) / f"schedgate-image-{os.getpid()}.tar"
        try:
            self.run("docker", "save", "-o", str(archive), image, what=f"docker save {image}")
            self.run("kind", "load", "image-archive", str(archive), "--name", cluster,
                     what=f"kind load image-archive {image}")
        finally:
            archive.unlink(missing_ok=True)

    def pause_image(self) -> str:
        """The sandbox image every node holds (kubeadm's pinned pause): what scenario pods run."""
        out = self.run(self.tool("kubeadm"), "config", "images", "list", what="kubeadm config images list")
        for line in out.stdout.split():
            if "/pause:" in line:
                return line
        raise ComponentError("kubeadm config images list names no pause image")

    # -- clusters and their nodes ----------------------------------------------
    def clusters(self) -> list[str]:
        out = self.run("kind", "get", "clusters", check=False)
        return [c for c in (out.stdout or "").split() if c]

    def create_cluster(self, config: Path, kubeconfig: Path) -> None:
        """``kind create cluster --config`` through pytest-kubernetes; kind's error in one line."""
        try:
            KindManager(self, config, kubeconfig).create(
                ClusterOptions(kubeconfig_path=kubeconfig, provider_config=config, cluster_timeout=900), timeout=300)
        except subprocess.CalledProcessError as e:
            err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else str(e.stderr)
            raise ComponentError(f"kind create cluster ({config}) failed: {kind_error(err)}") from None
        except RuntimeError as e:
            raise ComponentError(f"kind create cluster ({config}): {e}") from None

    def delete_cluster(self, name: str, kubeconfig: Path) -> None:
        """``kind delete cluster``, then every container still labelled as a node of ``name``: one whose
        ``docker run`` was under way when a creation was interrupted is made after kind listed the nodes."""
        self.run("kind", "delete", "cluster", "--name", name, "--kubeconfig", str(kubeconfig), check=False)

        def none_left() -> bool:
            left = self.run("docker", "ps", "-aq", "--filter", f"label=io.x-k8s.kind.cluster={name}",
                            check=False).stdout.split()
            if left:
                self.run("docker", "rm", "-f", "-v", *left, check=False)
            return not left

        poll_until(none_left, f"no container of kind cluster {name} left", 120, interval=1.0, error=ComponentError)

    def export_logs(self, name: str, dest: Path) -> None:
        self.run("kind", "export", "logs", str(dest), "--name", name, check=False, timeout=300)

    def node_containers(self, name: str) -> Iterator[tuple[str, str]]:
        """(container name, IPv4 address) of each node of cluster ``name``."""
        out = self.run("docker", "ps", "-a", "--filter", f"label=io.x-k8s.kind.cluster={name}",
                       "--format", "{{.Names}}", what="docker ps")
        for c in out.stdout.split():
            ip = self.run("docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", c,
                          what="docker inspect").stdout.split()
            yield c, ip[0] if ip else ""

    def node_container_map(self, name: str, core: Any) -> dict[str, str]:
        """Node name -> kind container, matched by the node's InternalIP (node names are the definition's)."""
        by_ip = {ip: c for c, ip in self.node_containers(name)}
        out = {}
        for n in core.list_node().items:
            ip = next((a.address for a in n.status.addresses or [] if a.type == "InternalIP"), "")
            if ip in by_ip:
                out[n.metadata.name] = by_ip[ip]
        return out

    def gateway(self) -> str:
        """The Docker host's IPv4 address on kind's network: where node-network pods reach schedgate's servers."""
        out = self.run("docker", "network", "inspect", "kind", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}",
                       what="docker network inspect kind")
        for gw in out.stdout.split():
            if "." in gw:
                return gw
        raise ComponentError(f"kind's Docker network has no IPv4 gateway ({out.stdout.strip()!r})")

    # -- inside a node ------------------------------------------------------------
    def crictl(self, container: str, *argv: str, check: bool = True) -> list[str]:
        """``crictl`` on node ``container``: its output's words (IDs); [] if it failed unchecked."""
        out = self.run("docker", "exec", container, "crictl", *argv, what=f"crictl {argv[0]} on {container}",
                       timeout=120, check=check)
        return out.stdout.split() if out.returncode == 0 else []

    def kill_pod_containers(self, container: str, namespace: str, pod: str) -> None:
        """SIGKILL every container of a pod on node ``container`` (``crictl stop --timeout 0``)."""
        for sandbox in self.crictl(container, "pods", "-q", "--name", pod, "--namespace", namespace):
            ids = self.crictl(container, "ps", "-q", "--pod", sandbox)
            if ids:
                self.crictl(container, "stop", "--timeout", "0", *ids)

    def restart_kubelet(self, container: str) -> None:
        """Restart a node's kubelet: it re-registers a deleted Node object and re-reads its capacity."""
        self.run("docker", "exec", container, "systemctl", "restart", "kubelet", what=f"restart kubelet on {container}")

    def restart_apiserver(self, container: str, api: ApiClient) -> float:
        """Stop the control plane's kube-apiserver container; its kubelet starts the static pod's container
        again. Returns the seconds from the stop until a new container runs and ``/readyz`` answers."""

        def running() -> list[str]:
            return self.crictl(container, "ps", "-q", "--name", "kube-apiserver", "--state", "running", check=False)

        before = running()
        if not before:
            raise ComponentError(f"no running kube-apiserver container on {container} (crictl ps)")
        t0 = time.monotonic()
        self.crictl(container, "stop", *before)

        def ready() -> bool:
            now = running()
            if not now or set(now) & set(before):
                return False
            try:
                r = api.call_api("GET", f"{api.configuration.host}/readyz", _request_timeout=2)
                r.read()  # type: ignore[no-untyped-call]
            except Exception:  # noqa: BLE001 — not serving yet
                return False
            return bool(r.status == 200 and (r.data or b"").strip() == b"ok")

        poll_until(ready, f"kube-apiserver on {container} back after crictl stop", 180, error=ComponentError)
        return time.monotonic() - t0


class KindManager(KindManagerBase):  # type: ignore[misc]
    """pytest-kubernetes' kind lifecycle (options, kubeconfig, create-then-ready) with every command run
    by :class:`Host`: argument lists and the host's own environment instead of a shell string and
    ``os.environ``, and readiness asked of our kubectl without its fixed one-second sleeps."""

    def __init__(self, host: Host, config: Path, kubeconfig: Path) -> None:
        self._host = host
        super().__init__(provider_config=str(config), kubeconfig=kubeconfig)

    # pytest-kubernetes 0.9's public surface (create, ready, delete, kubeconfig, cluster_name) has no say in
    # how a command runs: its _exec runs a shell string with os.environ (and its env=os.environ.update(...)
    # passes None while changing this process's environment), and _exec_path is shutil.which on that PATH.
    # These two overrides are the whole wrapper: kind from the host's PATH, run as an argument list in a
    # process group of its own (Ctrl-C) with the host's environment. Everything else is its public API.
    @property
    def _exec_path(self) -> Path:
        return Path(self._host.tool("kind"))

    def _exec(self, arguments: list[str], additional_env: dict[str, str] | None = None,
              timeout: int | None = None) -> subprocess.CompletedProcess[bytes]:
        argv = [str(self._exec_path), *arguments]
        done = run_group(argv, {**self._host.env, **(additional_env or {})},
                         timeout or self._cluster_options.cluster_timeout)
        if done.returncode != 0:
            raise subprocess.CalledProcessError(done.returncode, argv, done.stdout, done.stderr)
        return done

    def ready(self, timeout: int = 20) -> bool:
        kubeconfig = self.kubeconfig
        if kubeconfig is None or not kubeconfig.exists() or not kubeconfig.stat().st_size:
            return False
        kubectl = [self._host.tool("kubectl"), "--kubeconfig", str(kubeconfig)]

        def serving() -> bool:
            readyz = self._host.run(*kubectl, "get", "--raw", "/readyz", check=False, timeout=10)
            sa = self._host.run(*kubectl, "get", "sa", "default", "-n", "default", "-o", "json", check=False,
                                timeout=10)
            return readyz.returncode == 0 and sa.returncode == 0 and json.loads(sa.stdout).get("kind") == \
                "ServiceAccount"

        try:
            poll_until(serving, "kind cluster ready", timeout, interval=1.0)
        except AssertionError:
            return False
        return True


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
