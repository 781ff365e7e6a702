"""A kube-scheduler process run by the harness: its config, health, log and metrics."""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from schedgate.errors import ComponentError
from schedgate.kube.poll import poll_until
from schedgate.objects.metrics import MetricsSnapshot, parse_metrics
from schedgate.objects.schedlog import log_flags
from schedgate.runtime.health import get, probe, tls_context, wait_ready
from schedgate.runtime.procs import Proc, ProcessHandle, RunDir
from schedgate.spec.schedconfig import EffectiveConfig, SchedulerConfig


@dataclass
class SchedulerProcess(ProcessHandle):
    """One kube-scheduler process serving one or more profiles.

    ``name`` is the lease it holds (its first profile). It serves /healthz and
    /metrics over TLS on 127.0.0.1:``port``.
    """

    name: str
    config: SchedulerConfig
    effective: EffectiveConfig
    config_path: Path
    binary: Path
    port: int
    pki: Path
    run: RunDir
    extra_args: list[str] = field(default_factory=list)
    nodes: int = 0  # the cluster's size when it starts: score lines are left off above SCORED_UP_TO
    proc: Proc | None = None
    starts: int = 0

    @property
    def profiles(self) -> list[str]:
        return self.config.profile_names

    @property
    def kubeconfig(self) -> Path:
        """The kubeconfig its configuration names (where it reaches the API server)."""
        return Path(self.effective.doc["clientConnection"]["kubeconfig"])

    def argv(self) -> list[str]:
        return [
            str(self.binary),
            f"--config={self.config_path}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--tls-cert-file={self.pki / 'serving.crt'}",
            f"--tls-private-key-file={self.pki / 'serving.key'}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            *log_flags(self.nodes),
            *self.extra_args,
        ]

    def launch(self) -> None:
        """Start the process without waiting (see :meth:`wait_healthy`)."""
        self.starts += 1
        self.proc = self.run.start(self.name, self.argv(), start=self.starts)

    def wait_healthy(self, timeout: float = 60.0) -> float:
        """Wait for /healthz; a scheduler that refuses its config raises at once, in its own words."""
        assert self.proc is not None, "launch() first"
        try:
            return wait_ready(self.proc, probe("127.0.0.1", self.port, "/healthz", self._ctx()), timeout,
                              f"GET https://127.0.0.1:{self.port}/healthz")
        except ComponentError as e:
            self.proc.stop()
            raise ComponentError(f"scheduler {self.name} ({self.config.source}, binary {self.binary}): {e}") from None

    def start(self, timeout: float = 60.0) -> float:
        self.launch()
        return self.wait_healthy(timeout)

    def _ctx(self) -> ssl.SSLContext:
        return tls_context(self.pki / "ca.crt")

    def metrics_text(self) -> str:
        try:
            status, body = get("127.0.0.1", self.port, "/metrics", self._ctx(), timeout=5.0)
        except (OSError, http.client.HTTPException) as e:
            raise ComponentError(f"scheduler {self.name}: GET /metrics failed: {e}") from None
        if status != 200:
            raise ComponentError(f"scheduler {self.name}: GET /metrics answered {status}: {body[:200]}")
        return body

    def metrics(self) -> MetricsSnapshot:
        return parse_metrics(self.metrics_text())

    def wait_for_metrics(self, accept: Callable[[MetricsSnapshot], bool], description: str,
                         timeout: float = 15.0) -> MetricsSnapshot:
        """Scrape /metrics until ``accept`` holds, under a hard deadline.

        /metrics offers no watch, so this polls (every 100 ms); the scheduler
        updates its counters right after the pod's status, so a few scrapes do.
        """
        return poll_metrics(self, accept, description, timeout)


def poll_metrics(s: Scheduler, accept: Callable[[MetricsSnapshot], bool], description: str,
                 timeout: float) -> MetricsSnapshot:
    """Scrape ``s``'s /metrics every 100 ms until ``accept`` holds; fails at the deadline or if it dies."""

    def accepted() -> MetricsSnapshot | None:
        snap = s.metrics()
        return snap if accept(snap) else None

    def alive() -> None:
        if s.died():
            raise ComponentError(f"scheduler {s.name} died while waiting for metrics: {description}")

    return poll_until(accepted, f"scheduler {s.name}: metrics {description}", timeout, interval=0.1,
                      alive=alive, error=MetricsTimeout)


class MetricsTimeout(AssertionError):
    """A scheduler's metrics did not reach the awaited values before the deadline."""


class Scheduler(Protocol):
    """What scenarios and the harness use of a scheduler, whichever provider runs it."""

    name: str
    config: SchedulerConfig
    config_path: Path

    @property
    def profiles(self) -> list[str]: ...

    @property
    def log_path(self) -> Path | None: ...

    def alive(self) -> bool: ...

    def died(self) -> bool: ...

    def is_down(self) -> bool: ...

    def start(self, timeout: float = ...) -> float: ...

    def stop(self) -> None: ...

    def kill(self) -> None: ...

    def log_tail(self, lines: int = ...) -> list[str]: ...

    def metrics_text(self) -> str: ...

    def metrics(self) -> MetricsSnapshot: ...

    def wait_for_metrics(self, accept: Callable[[MetricsSnapshot], bool], description: str,
                         timeout: float = ...) -> MetricsSnapshot: ...


S = TypeVar("S")


def elects(s: Scheduler) -> bool:
    """Whether the scheduler holds a leader-election lease: a kube-scheduler schedgate configured as its
    configuration says (:meth:`~schedgate.spec.schedconfig.SchedulerConfig.effective`); kubeadm's own and a
    black box are taken to."""
    effective: EffectiveConfig | None = getattr(s, "effective", None)
    return True if effective is None else effective.elects


def distinct(schedulers: Mapping[str, S]) -> list[S]:
    """Each process once: a process serving several profiles appears under each of them."""
    return list({id(s): s for s in schedulers.values()}.values())


def forget(schedulers: dict[str, S], scheduler: object) -> None:
    """Drop ``scheduler`` from a by-profile map, under every profile it served."""
    for p in [p for p, s in schedulers.items() if s is scheduler]:
        del schedulers[p]
