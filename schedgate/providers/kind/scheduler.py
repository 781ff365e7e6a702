"""The scheduler under test on kind: a Deployment in the cluster with the face of a local process.

It runs on the control-plane node's network (so it reaches schedgate's
extender on the Docker host), with its own ServiceAccount, least-privilege
RBAC and lease. Health and ``/metrics`` go through the API server's pod proxy
to its secure port; a container restart the harness did not ask for is a
death. kind's own kube-scheduler (a static pod) serves ``default-scheduler``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from schedgate.errors import ComponentError
from schedgate.kube.api import create_objects, ignore_not_found, read_json
from schedgate.kube.poll import poll_until
from schedgate.objects.metrics import MetricsSnapshot, parse_metrics
from schedgate.objects.schedlog import LOG_FLAGS
from schedgate.providers.kind.config import routed_kubeconfig
from schedgate.runtime.scheduler import poll_metrics
from schedgate.spec.schedconfig import EffectiveConfig, SchedulerConfig

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
    config: SchedulerConfig
    effective: EffectiveConfig | None
    config_path: Path
    image: str
    api: client.ApiClient
    node: str
    run_dir: Path
    port: int = SECURE_PORT
    expected_exit: bool = False
    _restarts: int = 0
    server: str | None = None  # reach the API server here (e.g. through a proxy) instead of in-cluster
    crash: Callable[[str], None] | None = None  # (pod name): SIGKILL its containers, a crash (no lease release)
    extra_args: tuple[str, ...] = ()  # more flags (the definition's --feature-gates)

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
        assert self.effective is not None, "kind's own scheduler has no manifests"
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
                        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", *LOG_FLAGS,
                        *self.extra_args],
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
        return client.AppsV1Api(self.api)

    def _core(self) -> Any:
        return client.CoreV1Api(self.api)

    def launch(self) -> None:
        """Create the ConfigMap, ServiceAccount and Deployment; a Deployment of the same name is replaced
        (a retired scheduler of an earlier test may have left one with another config and port)."""
        if self._deployment_exists():
            self.remove()
        create_objects(self.api, self.manifests())
        self._scale(1)

    def _deployment_exists(self) -> bool:
        return ignore_not_found(self._apps().read_namespaced_deployment, self.deployment, SCHEDULER_NAMESPACE) \
            is not None

    def remove(self) -> None:
        """Delete the Deployment and its ConfigMap and wait until its pods are gone."""
        self.expected_exit = True
        self._apps().delete_namespaced_deployment(self.deployment, SCHEDULER_NAMESPACE,
                                                  propagation_policy="Foreground", grace_period_seconds=0)
        ignore_not_found(self._core().delete_namespaced_config_map, self.deployment, SCHEDULER_NAMESPACE)
        for pod in self._pods():
            self._core().delete_namespaced_pod(pod["metadata"]["name"], SCHEDULER_NAMESPACE, grace_period_seconds=0)
        _until(lambda: not self._pods() and not self._deployment_exists(), f"scheduler {self.name} removed")

    def _scale(self, replicas: int) -> None:
        self._apps().patch_namespaced_deployment_scale(self.deployment, SCHEDULER_NAMESPACE,
                                                       {"spec": {"replicas": replicas}})

    def _pods(self) -> list[dict[str, Any]]:
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

        _until(healthy, f"scheduler {self.name} (Deployment {self.deployment}) /healthz", timeout)
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
        _until(lambda: not self._pods(), f"scheduler {self.name} pods gone")

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
        _until(lambda: not self._pods(), f"scheduler {self.name} pods gone")

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

    def metrics(self) -> MetricsSnapshot:
        return parse_metrics(self.metrics_text())

    def wait_for_metrics(self, accept: Callable[[MetricsSnapshot], bool], description: str,
                         timeout: float = 15.0) -> MetricsSnapshot:
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
        try:
            return [read_json(self._core().read_namespaced_pod, self.pod_name, SCHEDULER_NAMESPACE)]
        except Exception:  # noqa: BLE001 — gone, not yet there, or its API server restarting
            return []

    def launch(self) -> None:
        return None

    def start(self, timeout: float = 120.0) -> float:
        return 0.0

    def stop(self) -> None:
        raise ComponentError("kind's default scheduler is a static pod; schedgate does not stop it")

    kill = stop


def _until(check: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    poll_until(check, what, timeout, error=ComponentError)
