"""The schedulers on kind: static pods on the control plane, as kubeadm runs its own kube-scheduler.

kind's control plane registers no Node (its kubelet runs standalone, :func:`.config.control_plane_patches`):
nothing of kind's machinery is a node a scenario's scheduler can choose, count as a topology domain or
run a DaemonSet's pod on. The kubelet runs its static pods all the same, so the scheduler under test is
one: its manifest, configuration and kubeconfig (its ServiceAccount's token, the same least-privilege
RBAC and own lease as on local) are written into the control-plane container and the kubelet starts it
on the node's network, where it reaches schedgate's extender on the Docker host. Health and
``/metrics`` are read from this machine at the container's address; its containers through ``crictl``; its
log from the file it writes as a local scheduler does (through ``schedgate-logto``: the runtime's log pipe
cost more CPU than the scheduler); once it is up, whether its process runs from this machine's ``/proc``
(:mod:`.hostproc`). A container restart the harness did not ask for is a death. kind's own kube-scheduler
(kubeadm's static pod) serves ``default-scheduler``, observed the same way and never started or stopped.
"""

from __future__ import annotations

import itertools
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from schedgate.errors import ComponentError
from schedgate.kube.poll import poll_until
from schedgate.objects.metrics import MetricsSnapshot, parse_metrics
from schedgate.objects.schedlog import log_flags
from schedgate.providers.kind.controlplane import ControlPlane
from schedgate.providers.kind.hostproc import container_pid, runs
from schedgate.providers.kind.logcopy import LogCopy
from schedgate.runtime.health import get
from schedgate.runtime.scheduler import poll_metrics
from schedgate.spec.schedconfig import EffectiveConfig, SchedulerConfig

SCHEDULER_NAMESPACE = "kube-system"
SECURE_PORT = 10259  # kind's own scheduler; ours run on the host network from FIRST_PORT up
FIRST_PORT = 10300
MANIFESTS = "/etc/kubernetes/manifests"  # the kubelet's static pod folder on kind's control plane
FILES = "/etc/schedgate"  # each scheduler's configuration and kubeconfig, in a folder of its own
IN_POD_KUBECONFIG = f"{FILES}/kubeconfig"
CLUSTER_CA = "/etc/kubernetes/pki/ca.crt"
LOGTO = "/usr/local/bin/schedgate-logto"  # on the node (scripts/kind-image), mounted at the same path
LOGS = "/var/log/schedgate-schedulers"  # each launch's log, on the node
ALLOWED_PATHS = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"
# Seconds one listing of a scheduler's containers answers whether it is alive or died, where its process is
# not seen in /proc. Each listing is a docker exec (60-100 ms here), and a test asks at every wait and
# barrier: asked afresh each time, they took a third of a conformance file's time on kind.
HEALTH_EVERY = 1.0

# How often a start or a stop looks: a listing of containers is a ``docker exec`` (about 0.1 s here), a look
# in /proc microseconds. At 0.5 s a perf turn spent 1.4-2.5 s starting its scheduler and 1.2-1.7 s stopping it.
CRI_POLL, PROC_POLL = 0.1, 0.02
LAUNCHES = itertools.count(1)  # static pods of schedgate's schedulers launched by this process


def _insecure() -> ssl.SSLContext:
    """The scheduler's serving certificate is its own, self-signed: health and metrics only, read-only."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


@dataclass
class PodScheduler:
    """A kube-scheduler static pod with the same face as a local scheduler process.

    ``start`` writes its files and manifest and waits for ``/healthz``; ``stop`` removes the manifest and
    waits until no container runs; ``kill`` SIGKILLs its containers first (a crash: no lease released)."""

    name: str
    config: SchedulerConfig
    effective: EffectiveConfig | None
    config_path: Path
    image: str
    node: ControlPlane
    run_dir: Path
    port: int = SECURE_PORT
    kubeconfig: str = ""  # its kubeconfig's text (a token of its ServiceAccount)
    expected_exit: bool = False
    _attempt: int = 0  # its container's restart count when it was last started
    _copy: LogCopy = field(default_factory=lambda: LogCopy(Path()), repr=False)  # its log in the run folder
    extra_args: tuple[str, ...] = ()  # more flags (the definition's --feature-gates)
    nodes: int = 0  # the nodes it sees when it starts: its log flags depend on it (schedlog.log_flags)
    _seen: tuple[float, list[dict[str, Any]]] | None = field(default=None, repr=False)  # (when, containers)
    # Its container's process on this machine and the container's id, once healthy (:mod:`.hostproc`): health
    # is then read from /proc, not listed through crictl.
    _pid: tuple[int, str] | None = field(default=None, repr=False)
    # This launch's number, unique in the run (:data:`LAUNCHES`): each launch is a static pod of its own name.
    # The kubelet starts a static pod only once the last one of the same name has finished terminating, which it
    # sees seconds after the containers have stopped: the same scheduler stopped at one test's end and started
    # at the next one's took 12 s to start here, against 1 s under another name.
    launch_number: int = 0

    @property
    def profiles(self) -> list[str]:
        return list(self.config.profile_names)

    @property
    def deployment(self) -> str:
        """Its static pod's name, and the name of its ServiceAccount and RBAC."""
        return f"schedgate-scheduler-{self.name}"[:63].rstrip("-")

    @property
    def static_name(self) -> str:
        """This launch's static pod, as the manifest names it."""
        return f"{self.deployment}-{self.launch_number}"

    @property
    def log_file(self) -> str:
        """This launch's log, in the container (a restart the kubelet makes appends to it)."""
        return f"{LOGS}/{self.static_name}.log"

    @property
    def pod(self) -> str:
        """The static pod's name as the kubelet runs it: the manifest's, then the node's."""
        return f"{self.static_name}-{self.node.container}"

    @property
    def returncode(self) -> int | None:
        return None if self.alive() else 1

    @property
    def proc(self) -> PodScheduler:
        return self

    @property
    def log(self) -> Path:
        return self.log_path or self.run_dir / f"{self.name}.log"

    @property
    def files(self) -> str:
        return f"{FILES}/{self.name}"

    def manifest(self) -> dict[str, Any]:
        labels = {"app.kubernetes.io/name": "schedgate-scheduler", "schedgate.io/scheduler": self.name,
                  "app.kubernetes.io/managed-by": "schedgate"}
        container = {
            "name": "kube-scheduler", "image": self.image, "imagePullPolicy": "Never",
            "command": [LOGTO, self.log_file, "/usr/local/bin/kube-scheduler", f"--config={FILES}/config.yaml",
                        f"--secure-port={self.port}", ALLOWED_PATHS, *log_flags(self.nodes), *self.extra_args],
            "volumeMounts": [{"name": "config", "mountPath": FILES, "readOnly": True},
                             {"name": "ca", "mountPath": CLUSTER_CA, "readOnly": True},
                             {"name": "logto", "mountPath": LOGTO, "readOnly": True},
                             {"name": "logs", "mountPath": LOGS}],
        }
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": self.static_name, "namespace": SCHEDULER_NAMESPACE, "labels": labels},
                "spec": {"hostNetwork": True, "terminationGracePeriodSeconds": 5, "containers": [container],
                         "volumes": [{"name": "config", "hostPath": {"path": self.files, "type": "Directory"}},
                                     {"name": "ca", "hostPath": {"path": CLUSTER_CA, "type": "File"}},
                                     {"name": "logto", "hostPath": {"path": LOGTO, "type": "File"}},
                                     {"name": "logs", "hostPath": {"path": LOGS, "type": "DirectoryOrCreate"}}]}}

    def subject(self) -> dict[str, str]:
        return {"kind": "ServiceAccount", "name": self.deployment, "namespace": SCHEDULER_NAMESPACE}

    # -- lifecycle ---------------------------------------------------------
    def launch(self) -> None:
        """Its configuration and kubeconfig, then the manifest of its next launch (one of an earlier test's, same
        file, is replaced: the kubelet stops that pod and starts this one)."""
        assert self.effective is not None, "kind's own scheduler is kubeadm's"
        self._seen = self._pid = None
        self.launch_number = next(LAUNCHES)
        self.node.write_all([(f"{self.files}/config.yaml", yaml.safe_dump(self.effective.doc, sort_keys=False)),
                             (f"{self.files}/kubeconfig", self.kubeconfig),
                             (f"{MANIFESTS}/{self.deployment}.yaml", yaml.safe_dump(self.manifest(), sort_keys=False))])

    def remove(self) -> None:
        """Its manifest and files gone, and no container of it running: its process seen gone in ``/proc``
        first where it is known, then its containers listed."""
        self.expected_exit = True
        pid, self._seen, self._pid = self._pid, None, None
        self.node.remove(f"{MANIFESTS}/{self.deployment}.yaml", self.files, self.log_file)
        what = f"scheduler {self.name} (static pod {self.pod}) stopped"
        if pid is not None:
            _until(lambda: not runs(*pid), what, interval=PROC_POLL)
        _until(lambda: not self._running(), what, interval=CRI_POLL)

    def _listed(self, fresh: bool = True) -> list[dict[str, Any]]:
        """Its containers, newest first; with ``fresh=False`` the last listing while it is younger than
        HEALTH_EVERY (a health question; starting and stopping always list afresh)."""
        now = time.monotonic()
        if fresh or self._seen is None or now - self._seen[0] >= HEALTH_EVERY:
            self._seen = (now, self.node.containers(self.pod))
        return self._seen[1]

    def _running(self, fresh: bool = True) -> dict[str, Any] | None:
        return next((c for c in self._listed(fresh) if c.get("state") == "CONTAINER_RUNNING"), None)

    def _healthy(self) -> bool:
        try:
            status, body = get(self.node.address, self.port, "/healthz", _insecure(), timeout=2.0)
        except OSError:
            return False
        return status == 200 and body.strip() == "ok"

    def _ready(self) -> bool:
        """Healthy and running (its own port: a local GET first); a container of this launch that exited raises
        with its log's last line (the kubelet would restart it until the wait ran out, the reason unsaid)."""
        if self._healthy() and self._running() is not None:
            return True
        exited = next((c for c in self._listed(fresh=False) if c.get("state") == "CONTAINER_EXITED"), None)
        if exited is not None:  # its log, or what the container said before there was one
            text = self.node.read(self.log_file).decode(errors="replace") or self.node.log(str(exited["id"]))
            said = [x.strip() for x in (text or "").splitlines() if x.strip()]
            raise ComponentError(f"scheduler {self.name} (static pod {self.pod}) exited before it was ready: "
                                 f"{(said or ['<empty log>'])[-1][:600]}")
        return False

    def wait_healthy(self, timeout: float = 120.0) -> float:
        t0 = time.monotonic()
        _until(self._ready, f"scheduler {self.name} (static pod {self.pod}) /healthz", timeout, interval=CRI_POLL)
        self._attempt = self._restart_count()
        running = self._running(fresh=False)
        pid = container_pid(str(running["id"])) if running else None
        self._pid = (pid, str(running["id"])) if running and pid is not None else None
        return time.monotonic() - t0

    def start(self, timeout: float = 120.0) -> float:
        self.expected_exit = False
        self.launch()
        return self.wait_healthy(timeout)

    def stop(self) -> None:
        self.save_log()
        self.remove()

    def kill(self) -> None:
        """A crash that is not restarted: SIGKILL first (a terminated scheduler would release its lease, a
        killed one leaves it to expire), then its manifest gone."""
        self.expected_exit = True
        self.save_log()
        self.node.host.kill_pod_containers(self.node.container, SCHEDULER_NAMESPACE, self.pod)
        self.remove()

    def _restart_count(self, fresh: bool = True) -> int:
        newest = next(iter(self._listed(fresh)), None)
        return int(((newest or {}).get("metadata") or {}).get("attempt") or 0)

    def alive(self) -> bool:
        if self._pid is not None:  # a container restarted by the kubelet is another process: not this one
            return runs(*self._pid)
        return self._running(fresh=False) is not None

    def died(self) -> bool:
        if self.expected_exit:
            return False
        if self._pid is not None:
            return not runs(*self._pid)
        return not self.alive() or self._restart_count(fresh=False) > self._attempt

    def is_down(self) -> bool:
        return not self.alive()

    # -- observation --------------------------------------------------------
    def metrics_text(self) -> str:
        try:
            status, body = get(self.node.address, self.port, "/metrics", _insecure(), timeout=5.0)
        except OSError as e:
            raise ComponentError(f"scheduler {self.name}: /metrics not readable: {e}") from None
        if status != 200:
            raise ComponentError(f"scheduler {self.name}: /metrics answered {status}")
        return body

    def metrics(self) -> MetricsSnapshot:
        return parse_metrics(self.metrics_text())

    def wait_for_metrics(self, accept: Callable[[MetricsSnapshot], bool], description: str,
                         timeout: float = 15.0) -> MetricsSnapshot:
        return poll_metrics(self, accept, description, timeout)

    def logs(self) -> str:
        self.save_log()
        return self._copy.text()

    def save_log(self) -> Path:
        """Bring the run folder's copy of its log up to date (:class:`.LogCopy`); its path. A launched
        scheduler's log is its launch's file on the node; kubeadm's goes through the container runtime."""
        if self._copy.path != self.run_dir / f"{self.name}.log":
            self._copy = LogCopy(self.run_dir / f"{self.name}.log")
        if self.launch_number:
            return self._copy.update(self.log_file, lambda start: self.node.read(self.log_file, start))
        newest = next(iter(self.node.containers(self.pod)), None)
        if newest is None:
            return self._copy.path
        return self._copy.update(str(newest["id"]), lambda start: self.node.log(str(newest["id"])).encode()[start:])

    @property
    def log_path(self) -> Path | None:
        return self.save_log()

    def log_tail(self, lines: int = 30) -> list[str]:
        return self.logs().splitlines()[-lines:]


@dataclass
class StaticScheduler(PodScheduler):
    """kind's own kube-scheduler (kubeadm's static pod, profile default-scheduler): observed, never started or
    stopped."""

    fixed_flags: ClassVar[bool] = True  # kubeadm's: no schedgate log flags to change

    def launch(self) -> None:
        return None

    def start(self, timeout: float = 120.0) -> float:
        return 0.0

    def _ready(self) -> bool:  # kubeadm's: the kubelet restarts it while the control plane comes up
        return self._healthy() and self._running() is not None

    @property
    def pod(self) -> str:
        return f"kube-scheduler-{self.node.container}"

    def stop(self) -> None:
        raise ComponentError("kind's default scheduler is kubeadm's static pod; schedgate does not stop it")

    kill = stop


def _until(check: Callable[[], bool], what: str, timeout: float = 120.0, interval: float = 0.5) -> None:
    poll_until(check, what, timeout, interval=interval, error=ComponentError)
