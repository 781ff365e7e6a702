"""Running a scenario file's steps against a cluster (see :mod:`schedgate.scenarios.load`).

Every action is a call on the same API the Python scenarios use; every
expectation waits on a positive signal under a hard deadline and fails with
an ``AssertionError`` naming the file, the step and its line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from schedgate.cluster import Cluster, ReroutesSchedulers
from schedgate.faults.apiproxy import ApiProxy
from schedgate.faults.extender import Extender
from schedgate.kube.objects import Objects
from schedgate.kube.watch import Matcher, wait_for
from schedgate.objects.metrics import MetricsSnapshot
from schedgate.objects.pods import Namespace, Pod
from schedgate.perf import Comparison
from schedgate.report.figures import Report
from schedgate.runtime.scheduler import Scheduler, distinct
from schedgate.spec.schedconfig import SchedulerConfig


def time_of_day() -> float:
    """Seconds since local midnight, as klog stamps a line (its hours, minutes and seconds)."""
    now = datetime.now()
    return now.hour * 3600 + now.minute * 60 + now.second + now.microsecond / 1e6


class Action(Protocol):
    """What a step does (each step kind of :mod:`.steps` is one)."""

    def run(self, r: Run) -> None: ...


class StepLike(Protocol):
    @property
    def action(self) -> Action: ...

    def title(self) -> str: ...


class Steps(Protocol):
    """A loaded scenario (:class:`~schedgate.scenarios.load.Scenario`), as its run needs it."""

    @property
    def source(self) -> str: ...

    @property
    def steps(self) -> Sequence[StepLike]: ...


@dataclass
class Run:
    """What the steps act on. ``role_config`` turns a role name (``network-slots``) into the run's file."""

    scenario: Steps
    cluster: Cluster
    ns: Namespace
    start_scheduler: Callable[[SchedulerConfig], Scheduler]
    role_config: Callable[[str], SchedulerConfig]
    report: Report | None = None
    # The baseline of a configuration under test: (its configuration, binary) for "in-tree" or "same"
    # (:data:`~schedgate.scenarios.perf_steps.Baseline`).
    baseline: Callable[[SchedulerConfig, str], tuple[SchedulerConfig, Path | None]] | None = None
    performance: Comparison | None = None  # the last measurePerformance
    pods: dict[str, Pod] = field(default_factory=dict)
    # each scheduler a metric outcome reads, scraped before the first step: counters count from there
    metrics_at_start: dict[str, MetricsSnapshot] = field(default_factory=dict)
    barriers_at_start: int = 0  # cache barriers before the first step: their probes are no step's
    extender: Extender | None = None
    api_proxies: dict[str, ApiProxy] = field(default_factory=dict)  # apiFaults' proxies, by scheduler (lease)
    transcript: list[str] = field(default_factory=list)
    # each step's start as a time of day in seconds (the clock of the schedulers' klog lines): attempts.since
    step_clock: dict[int, float] = field(default_factory=dict)
    _objects: Objects | None = None

    @property
    def objects(self) -> Objects:
        """Objects ``apply`` steps create (namespaced ones in the run's namespace), deleted at the end."""
        if self._objects is None:
            self._objects = Objects(self.cluster.api, self.ns.name, changed=self.cluster.changed)
        return self._objects

    def close(self) -> None:
        if self.extender is not None:
            self.extender.down()
        for lease, proxy in self.api_proxies.items():  # each scheduler straight to the API server again
            proxy.clear()
            try:
                if (s := next((s for s in distinct(self.cluster.schedulers) if s.name == lease), None)) is not None:
                    router = self.cluster.use(ReroutesSchedulers)  # type: ignore[type-abstract]
                    router.reroute_scheduler(s, None)
            finally:
                proxy.close()
        if self._objects is not None:
            self._objects.clean_up()

    def run(self) -> None:
        """The steps in order. What they applied stays until :meth:`close` (the run's teardown), so the
        timings and artifacts read after the steps see a workload's pods."""
        started = time.monotonic()
        self.barriers_at_start = self.cluster.barrier.count
        for step in self.scenario.steps:
            read = getattr(step.action, "metrics_read", None)  # Expect: the schedulers its metric outcome reads
            for profile in (read() if read is not None else ()):
                self._scrape_at_start(profile)
        for i, step in enumerate(self.scenario.steps):
            t0 = time.monotonic()
            self.step_clock[i] = time_of_day()
            try:
                step.action.run(self)
            except AssertionError as e:
                self.transcript.append(f"{time.monotonic() - started:7.2f}s  {step.title()}: FAILED")
                raise AssertionError(f"{self.scenario.source}: {step.title()}: {e}") from None
            self.transcript.append(f"{time.monotonic() - started:7.2f}s  {step.title()}: ok "
                                   f"({time.monotonic() - t0:.2f}s)")
        # Every verdict stands only if its scheduler outlived it: each running one judges a pod made after the
        # last step (a cache barrier), so one that crashed right after writing a verdict is seen dead.
        self.cluster.sync_schedulers()
        self.cluster.check_health()

    def _scrape_at_start(self, profile: str) -> None:
        if profile in self.metrics_at_start or profile not in self.cluster.schedulers:
            return  # a scheduler a step starts later counts from its own start
        self.metrics_at_start[profile] = self.cluster.scheduler(profile).metrics()

    def pod(self, name: str) -> Pod:
        return self.pods[name]

    def each(self, names: list[str], matcher: Matcher, timeout: float) -> None:
        """Wait for every pod named to match, all under one deadline."""
        deadline = time.monotonic() + timeout
        for name in names:
            wait_for(self.pod(name), matcher, timeout=max(0.5, deadline - time.monotonic()))

    def figure(self, name: str, value: float | int | str) -> None:
        if self.report:
            self.report.figure(name, value)
