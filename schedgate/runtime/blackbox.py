"""A black-box scheduler run by the harness: a program, its log, and no kube-scheduler endpoints.

It is up when it has bound a probe pod (the cluster's first sync does that, and
fails naming it if it never does); a readiness URL, when the file gives one, is
waited on first. A process that exits is seen at once, as any component's death
is. What it does not serve (kube-scheduler's /metrics) is an error at the call.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from schedgate.errors import ComponentError
from schedgate.objects.metrics import MetricsSnapshot, parse_metrics
from schedgate.runtime.health import free_port, wait_ready
from schedgate.runtime.procs import Proc, ProcessHandle, RunDir
from schedgate.spec.blackbox import BlackBox, resolve_program
from schedgate.spec.schedconfig import LEASE_NAMESPACE, SchedulerConfig


@dataclass
class BlackBoxProcess(ProcessHandle):
    """One black-box scheduler serving one schedulerName, under its own kubeconfig and lease."""

    name: str  # the lease it may hold (its schedulerName)
    config: SchedulerConfig
    kubeconfig: Path
    run: RunDir
    built: Mapping[str, Path] = field(default_factory=dict)  # programs schedgate builds, by name
    port: int = 0
    proc: Proc | None = None
    starts: int = 0
    config_path: Path = field(init=False)
    black_box_scheduler = True  # the sync barrier fails, rather than warns, when it binds no probe

    def __post_init__(self) -> None:
        self.config_path = Path(self.spec.source)

    @property
    def spec(self) -> BlackBox:
        assert self.config.black_box is not None
        return self.config.black_box

    @property
    def profiles(self) -> list[str]:
        return self.config.profile_names

    def values(self) -> dict[str, str]:
        return {"kubeconfig": str(self.kubeconfig), "name": self.profiles[0], "lease": self.name,
                "namespace": LEASE_NAMESPACE, "port": str(self.port), "run": str(self.run.path)}

    def argv(self) -> list[str]:
        argv = self.spec.argv(self.values())
        argv[0] = resolve_program(argv[0], Path(self.spec.source).parent, self.built)
        return argv

    def describe(self) -> str:
        return f"black-box scheduler {self.profiles[0]} ({self.spec.source}: {' '.join(self.argv())})"

    def launch(self) -> None:
        self.starts += 1
        if not self.port:
            self.port = free_port()
        env = {**os.environ, **self.spec.env, "KUBECONFIG": str(self.kubeconfig)}
        try:
            self.proc = self.run.start(self.name, self.argv(), env=env, start=self.starts)
        except OSError as e:
            raise ComponentError(f"{self.describe()}: cannot start: {e.strerror or e}") from None

    def wait_healthy(self, timeout: float | None = None) -> float:
        """Its readiness URL answers 200, if it has one; otherwise only that it is running. The positive
        signal of every black box is the probe pod it binds (:class:`schedgate.cluster.sync.SyncBarrier`)."""
        assert self.proc is not None, "launch() first"
        url = self.spec.url(self.values())
        limit = timeout or self.spec.start_timeout
        try:
            if url is None:
                return wait_ready(self.proc, lambda: True, limit, "running")
            return wait_ready(self.proc, _answers(url), limit, f"GET {url}")
        except ComponentError as e:
            self.proc.stop()
            raise ComponentError(f"{self.describe()}: {e}") from None

    def start(self, timeout: float = 60.0) -> float:
        self.launch()
        return self.wait_healthy(timeout)

    def metrics_text(self) -> str:
        raise ComponentError(f"{self.describe()} serves no kube-scheduler /metrics (a scenario that reads "
                             "them needs 'metrics' and is skipped for a black box)")

    def metrics(self) -> MetricsSnapshot:
        return parse_metrics(self.metrics_text())

    def wait_for_metrics(self, accept: Callable[[MetricsSnapshot], bool], description: str,
                         timeout: float = 15.0) -> MetricsSnapshot:
        return self.metrics()


def _answers(url: str) -> Callable[[], bool]:
    def ready() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=1.0) as r:  # noqa: S310 (the file's own URL)
                return bool(r.status == 200)
        except (OSError, urllib.error.URLError, ValueError):
            return False
    return ready
